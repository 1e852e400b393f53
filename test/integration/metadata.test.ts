import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { fixtureServer, startHarness, tempDir, waitUntil, type Harness } from '../support/harness.js';

/** A value no text the UI shows may hold: it goes into arguments and comes back in results. */
const SECRET = 'sk-live-meta-7c41d9e2';

/** The turn's current details, as the Temporal UI reads them (the SDK's built-in metadata query). */
async function currentDetails(handle: WorkflowHandle): Promise<string> {
  const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return metadata.currentDetails ?? '';
}

describe('what the Temporal UI shows for a turn (user metadata)', () => {
  let h: Harness;
  let dir: string;
  let spec: string;

  before(async () => {
    dir = await tempDir();
    h = await startHarness('metadata');
    spec = `fixture:${process.execPath} ${fixtureServer} --flag ${SECRET}`;
  });
  after(async () => {
    await h?.stop();
  });

  test('an interactive turn: a static summary with names, and current details with calls and states, never values', async () => {
    const sessionId = `meta-${Date.now()}`;
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { inlineSpecs: [spec] } });
    const description = await turn.handle.describe();
    assert.equal(await description.staticSummary(), `session ${sessionId} · servers fixture`);
    const staticDetails = (await description.staticDetails()) ?? '';
    assert.match(staticDetails, /interactive/);
    assert.ok(!staticDetails.includes(SECRET) && !staticDetails.includes(dir), staticDetails);

    const slow = turn.callTool({ id: 'toolu_slow', name: 'mcp__fixture__slow', arguments: { ms: 4000, tag: SECRET } });
    await waitUntil(
      'the slow call to show as running',
      async () => (await currentDetails(turn.handle)).includes('`toolu_slow` `mcp__fixture__slow` **running**'),
      10_000,
    );
    const running = await currentDetails(turn.handle);
    assert.match(running, /^\*\*Turn\*\* ready · \*\*Servers\*\* `fixture` ready \((legacy|modern)\)\n/);
    assert.match(running, /1 running · 0 done/);

    await turn.callTool({ id: 'toolu_echo', name: 'mcp__fixture__echo', arguments: { text: SECRET } });
    await turn.callTool({ id: 'toolu_fail', name: 'mcp__fixture__fail', arguments: { reason: SECRET } });
    await slow;
    await turn.callTool({ id: 'toolu_nope', name: 'mcp__fixture__missing', arguments: { text: SECRET } });
    await turn.end();
    const ended = await currentDetails(turn.handle);
    assert.match(ended, /^\*\*Turn\*\* ended \(endTurn\)/);
    assert.match(ended, /0 running · 4 done \(3 ok, 1 error, 0 cancelled\)/);
    const rows = ended.split('\n').filter((l) => l.startsWith('- `toolu_'));
    assert.deepEqual(rows, [
      '- `toolu_nope` `mcp__fixture__missing` **error · bad_request**',
      '- `toolu_slow` `mcp__fixture__slow` **ok**',
      '- `toolu_fail` `mcp__fixture__fail` **ok · tool error**',
      '- `toolu_echo` `mcp__fixture__echo` **ok**',
    ]);
    assert.ok(!ended.includes(SECRET), ended);
    assert.ok(!running.includes(SECRET), running);
  });

  test('a batch turn says so, and a run made by continue-as-new carries the summary in its details and counts earlier runs', async () => {
    const batch = await h.client.runBatch({
      sessionId: `meta-batch-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [spec] },
      calls: [
        [
          { id: 'b1', name: 'mcp__fixture__echo', arguments: { text: SECRET } },
          { id: 'b2', name: 'mcp__fixture__echo', arguments: { text: 'two' } },
        ],
      ],
    });
    const batchHandle = h.client.client.workflow.getHandle(batch.turnId);
    assert.match((await (await batchHandle.describe()).staticDetails()) ?? '', /batch of 2 calls/);
    assert.match(await currentDetails(batchHandle), /^\*\*Turn\*\* ended \(batch\)[\s\S]*2 done \(2 ok/);

    const sessionId = `meta-continued-${Date.now()}`;
    const turn = await h.client.startTurn({
      sessionId,
      workspace: dir,
      servers: { inlineSpecs: [spec] },
      limits: { continueAsNewAfterCalls: 2 },
    });
    for (const n of [1, 2])
      await turn.callTool({ id: `toolu_c${n}`, name: 'mcp__fixture__echo', arguments: { text: SECRET } });
    await waitUntil(
      'the turn to continue as new',
      async () => {
        const runs: string[] = [];
        for await (const w of h.client.client.workflow.list({ query: `WorkflowId = '${turn.turnId}'` }))
          runs.push(w.runId);
        return runs.length > 1;
      },
      15_000,
    );
    await turn.callTool({ id: 'toolu_c3', name: 'mcp__fixture__echo', arguments: { text: SECRET } });
    const latest = h.client.client.workflow.getHandle(turn.turnId);
    const details = await currentDetails(latest);
    assert.match(details, /1 done \(1 ok, 0 error, 0 cancelled\) · 2 in earlier runs/);
    assert.match(details, /\*\*Servers\*\* `fixture` ready/);
    // Continue-as-new carries no user metadata: the new run's details carry the summary instead.
    assert.equal(await (await latest.describe()).staticSummary(), undefined);
    assert.equal(details.split('\n')[1], `session ${sessionId} · servers fixture · continued from an earlier run`);
    assert.ok(!details.includes(SECRET), details);
    await turn.end();
  });
});
