/**
 * Cancelling a call that still waits in the client for a slot (beyond `maxCallsInFlight`): it is
 * never sent, its outcome says the tool did not run, the turn has no record of it, and the calls
 * around it run as before. On the real dev server, with the fixture server over stdio.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TurnClient } from '../../client/turnClient.js';
import { fixtureServer, readLines, startHarness, tempDir, waitUntil, type Harness } from '../support/harness.js';

interface Execution {
  tool: string;
  args: { tag?: string; text?: string };
}

describe('cancelling a call queued in the client', { timeout: 120_000 }, () => {
  let h: Harness;
  let dir: string;
  let execLog: string;
  const executions = async (): Promise<Execution[]> =>
    (await readLines(execLog)).map((l) => JSON.parse(l) as Execution);

  before(async () => {
    dir = await tempDir('dmcp-cancel-queued-');
    execLog = join(dir, 'executions.log');
    h = await startHarness('cancel-queued', { FIXTURE_LOG: execLog });
  });
  after(async () => {
    await h?.stop();
  });

  test('a queued call that is cancelled never runs; the running and later calls do', async () => {
    const inFlight: number[] = [];
    const client = new TurnClient({
      client: h.client.client,
      taskQueue: h.taskQueue,
      maxCallsInFlight: 1,
      onCallsInFlight: (n) => inFlight.push(n),
    });
    const turn = await client.startTurn({
      sessionId: `cancel-queued-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
    });

    const running = turn.callTool({
      id: 'running',
      name: 'mcp__fixture__slow',
      arguments: { ms: 1500, tag: 'running' },
    });
    const queued = turn.callTool({ id: 'queued', name: 'mcp__fixture__slow', arguments: { ms: 10, tag: 'queued' } });
    const later = turn.callTool({ id: 'later', name: 'mcp__fixture__echo', arguments: { text: 'later' } });
    await waitUntil('the first call to start', async () => (await executions()).some((e) => e.args.tag === 'running'));

    assert.equal(await turn.cancelCall('queued'), true, 'the queued call was found and cancelled');
    const cancelled = await queued;
    assert.equal(cancelled.status, 'error');
    assert.equal(cancelled.errorKind, 'cancelled');
    assert.equal(cancelled.attempts, 0);
    assert.match(cancelled.errorMessage ?? '', /did not run/);
    assert.equal(await turn.cancelCall('queued'), false, 'nothing left to cancel');

    const [first, third] = await Promise.all([running, later]);
    assert.equal(first.status, 'ok');
    assert.deepEqual(first.content, [{ type: 'text', text: 'slept 1500 ms' }]);
    assert.equal(third.status, 'ok');
    assert.ok(Math.max(...inFlight) <= 1, `never more than one call in flight: ${inFlight.join(', ')}`);
    assert.equal(inFlight[inFlight.length - 1], 0, 'every slot was given back');

    const result = await turn.end();
    assert.deepEqual(
      result.calls.map((c) => c.id),
      ['running', 'later'],
      'the turn recorded only the calls that were sent',
    );
    const ran = await executions();
    assert.deepEqual(
      ran.filter((e) => e.tool === 'slow').map((e) => e.args.tag),
      ['running'],
      'the cancelled call never reached the server',
    );
    assert.ok(ran.some((e) => e.tool === 'echo' && e.args.text === 'later'));
  });

  test('cancelling a queued call does not cancel a running call with another ID', async () => {
    const client = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, maxCallsInFlight: 1 });
    const turn = await client.startTurn({
      sessionId: `cancel-queued-2-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
    });
    const running = turn.callTool({ id: 'r', name: 'mcp__fixture__slow', arguments: { ms: 800, tag: 'r2' } });
    const queued = turn.callTool({ id: 'q', name: 'mcp__fixture__echo', arguments: { text: 'never' } });
    assert.equal(await turn.cancelCall('q'), true);
    assert.equal((await queued).errorKind, 'cancelled');
    const outcome = await running;
    assert.equal(outcome.status, 'ok', 'the running call finished');
    assert.deepEqual(outcome.content, [{ type: 'text', text: 'slept 800 ms' }]);
    // An ID the client never queued still goes to the turn, which knows no such call.
    assert.equal(await turn.cancelCall('unknown'), false);
    const result = await turn.end();
    assert.deepEqual(
      result.calls.map((c) => c.id),
      ['r'],
    );
    assert.ok(!(await executions()).some((e) => e.args.text === 'never'));
  });
});
