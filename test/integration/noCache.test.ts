/**
 * A worker without a workflow cache (maxCachedWorkflows 0) replays the turn from the start of its
 * history at every workflow task: the outcomes must be the same as with a cache, and no call may run
 * twice because of a replay.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fixtureServer, readLines, startHarness, tempDir, type Harness } from '../support/harness.js';

describe('an interactive turn on a worker with no workflow cache', { timeout: 90_000 }, () => {
  let h: Harness;
  let dir: string;
  let execLog: string;

  before(async () => {
    dir = await tempDir('dmcp-nocache-');
    execLog = join(dir, 'executions.log');
    h = await startHarness('nocache', { FIXTURE_LOG: execLog }, { maxCachedWorkflows: 0 });
  });
  after(async () => {
    await h?.stop();
  });

  test('calls, a repeated call ID, parallel calls and a tool error replay to the same outcomes', async () => {
    const turn = await h.client.startTurn({
      sessionId: `nocache-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
    });
    assert.ok(turn.tools.some((t) => t.name === 'mcp__fixture__echo'));

    const first = await turn.callTool({ id: 'c1', name: 'mcp__fixture__echo', arguments: { text: 'one' } });
    assert.equal(first.status, 'ok');
    assert.deepEqual(first.content, [{ type: 'text', text: 'one' }]);

    const again = await turn.callTool({ id: 'c1', name: 'mcp__fixture__echo', arguments: { text: 'one' } });
    assert.deepEqual(again, first, 'the repeated ID got the recorded outcome');

    const parallel = await Promise.all([
      turn.callTool({ id: 'c2', name: 'mcp__fixture__slow', arguments: { ms: 200, tag: 'p1' } }),
      turn.callTool({ id: 'c3', name: 'mcp__fixture__echo', arguments: { text: 'three' } }),
    ]);
    assert.deepEqual(
      parallel.map((o) => o.status),
      ['ok', 'ok'],
    );
    assert.deepEqual(parallel[0]!.content, [{ type: 'text', text: 'slept 200 ms' }]);
    assert.deepEqual(parallel[1]!.content, [{ type: 'text', text: 'three' }]);

    const toolError = await turn.callTool({ id: 'c4', name: 'mcp__fixture__fail', arguments: { reason: 'replayed' } });
    assert.equal(toolError.status, 'ok');
    assert.equal(toolError.isError, true);
    assert.deepEqual(toolError.content, [{ type: 'text', text: 'failed: replayed' }]);

    const unknown = await turn.callTool({ id: 'c5', name: 'mcp__fixture__missing' });
    assert.equal(unknown.errorKind, 'bad_request');

    const result = await turn.end();
    assert.equal(result.endedBy, 'endTurn');
    assert.deepEqual(result.calls.map((c) => c.id).sort(), ['c1', 'c2', 'c3', 'c4', 'c5']);
    assert.deepEqual(result.calls.find((c) => c.id === 'c1')!.outcome, first);

    const executions = (await readLines(execLog)).map((l) => (JSON.parse(l) as { tool: string }).tool).sort();
    assert.deepEqual(executions, ['echo', 'echo', 'fail', 'slow'], 'every call ran once, replays ran none');

    const history = await h.client.client.workflow.getHandle(result.turnId).fetchHistory();
    const taskQueues = new Set(
      history.events!.flatMap((e) =>
        e.workflowTaskScheduledEventAttributes ? [e.workflowTaskScheduledEventAttributes.taskQueue?.name] : [],
      ),
    );
    // A worker with a cache asks for later tasks on its sticky queue; without one, every task goes to the shared queue.
    assert.deepEqual(
      [...taskQueues],
      [h.taskQueue],
      'no workflow task went to a sticky queue: the worker really ran without a cache',
    );

    const transcript = await h.client.transcript(result.turnId);
    assert.deepEqual(transcript.calls.map((c) => c.id).sort(), ['c1', 'c2', 'c3', 'c4', 'c5']);
  });
});
