import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fixtureServer, readLines, startHarness, tempDir, type Harness, waitUntil } from '../support/harness.js';
import { textOf } from '../support/content.js';

describe('durable tool phases: failure tiers, timeouts, progress, cancellation', () => {
  let h: Harness;
  let dir: string;
  let execLog: string;
  const servers = () => ({ inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] });
  const executions = async (tool: string) =>
    (await readLines(execLog))
      .map((l) => JSON.parse(l) as { tool: string; args: { tag?: string } })
      .filter((e) => e.tool === tool);

  before(async () => {
    dir = await tempDir();
    execLog = join(dir, 'executions.log');
    h = await startHarness('phases', { FIXTURE_LOG: execLog });
  });
  after(async () => {
    await h?.stop();
  });

  test('isError is data, a bad request is never retried, and the turn goes on after each', async () => {
    const turn = await h.client.startTurn({ sessionId: `tiers-${Date.now()}`, workspace: dir, servers: servers() });
    const failed = await turn.callTool({ id: 't1', name: 'mcp__fixture__fail', arguments: { reason: 'disk full' } });
    assert.equal(failed.status, 'ok');
    assert.equal(failed.isError, true);
    assert.match(String(textOf(failed.content[0])), /disk full/);

    const bad = await turn.callTool({ id: 't2', name: 'mcp__fixture__bad_request', arguments: {} });
    assert.equal(bad.status, 'error');
    assert.equal(bad.errorKind, 'bad_request');
    assert.match(bad.errorMessage ?? '', /parameter "x" is required/);
    assert.equal((await executions('bad_request')).length, 1, 'a bad request runs once, never retried');

    const unknown = await turn.callTool({ id: 't3', name: 'mcp__fixture__nope', arguments: {} });
    assert.equal(unknown.errorKind, 'bad_request');

    const next = await turn.callTool({ id: 't4', name: 'mcp__fixture__echo', arguments: { text: 'still working' } });
    assert.equal(textOf(next.content[0]), 'still working');
    const result = await turn.end();
    assert.deepEqual(
      result.calls.map((c) => c.id),
      ['t1', 't2', 't3', 't4'],
    );
  });

  test('an MCP request timeout is classified before the activity times out: a side-effecting call gets "result unknown"', async () => {
    const turn = await h.client.startTurn({
      sessionId: `timeout-${Date.now()}`,
      workspace: dir,
      servers: servers(),
      limits: { toolTimeoutMs: 3000 },
    });
    const started = Date.now();
    const outcome = await turn.callTool({
      id: 'slow',
      name: 'mcp__fixture__slow',
      arguments: { ms: 20_000, tag: 'timeout' },
    });
    const elapsed = Date.now() - started;
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'unknown_result');
    assert.match(outcome.errorMessage ?? '', /timed out/i);
    assert.match(outcome.errorMessage ?? '', /may have had an effect/);
    assert.ok(elapsed < 6000, `answered in ${elapsed} ms, not after the server's 20 s`);
    assert.equal((await executions('slow')).filter((e) => e.args.tag === 'timeout').length, 1, 'not retried');
    const next = await turn.callTool({ id: 'after', name: 'mcp__fixture__echo', arguments: { text: 'next' } });
    assert.equal(next.status, 'ok');
    await turn.end();
  });

  test('progress notifications reach the activity as heartbeat details', async () => {
    const turn = await h.client.startTurn({ sessionId: `progress-${Date.now()}`, workspace: dir, servers: servers() });
    const pending = turn.callTool({
      id: 'p',
      name: 'mcp__fixture__progress',
      arguments: { steps: 8, intervalMs: 500 },
    });
    const converter = h.client.client.options.loadedDataConverter.payloadConverter;
    let seen: unknown;
    await waitUntil('a progress heartbeat', async () => {
      const description = await turn.handle.describe();
      const details = description.raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
      if (!details) return false;
      seen = converter.fromPayload(details);
      return typeof (seen as { progress?: { progress?: number } }).progress?.progress === 'number';
    });
    assert.equal((seen as { progress: { total: number } }).progress.total, 8);
    const outcome = await pending;
    assert.equal(textOf(outcome.content[0]), 'done after 8 steps', 'the SDK sent a progress token');
    await turn.end();
  });

  test('cancelling a call aborts it, tells the server, and the turn goes on', async () => {
    const turn = await h.client.startTurn({ sessionId: `cancel-${Date.now()}`, workspace: dir, servers: servers() });
    const pending = turn.callTool({
      id: 'c1',
      name: 'mcp__fixture__slow',
      arguments: { ms: 60_000, tag: 'cancel-call' },
    });
    await waitUntil('the slow call to start', async () =>
      (await executions('slow')).some((e) => e.args.tag === 'cancel-call'),
    );
    assert.equal(await turn.cancelCall('c1'), true);
    const outcome = await pending;
    assert.equal(outcome.errorKind, 'cancelled');
    await waitUntil('the server to receive notifications/cancelled', async () =>
      (await executions('cancelled')).some((e) => e.args.tag === 'cancel-call'),
    );
    assert.equal(await turn.cancelCall('c1'), false, 'nothing left to cancel');
    const next = await turn.callTool({ id: 'c2', name: 'mcp__fixture__echo', arguments: { text: 'after cancel' } });
    assert.equal(next.status, 'ok');
    await turn.end();
  });

  test('cancelling the turn cancels its in-flight call on the server', async () => {
    const turn = await h.client.startTurn({
      sessionId: `cancel-turn-${Date.now()}`,
      workspace: dir,
      servers: servers(),
    });
    const pending = turn
      .callTool({ id: 'c1', name: 'mcp__fixture__slow', arguments: { ms: 60_000, tag: 'cancel-turn' } })
      .catch((err: unknown) => err);
    await waitUntil('the slow call to start', async () =>
      (await executions('slow')).some((e) => e.args.tag === 'cancel-turn'),
    );
    await turn.handle.cancel();
    await waitUntil('the server to receive notifications/cancelled', async () =>
      (await executions('cancelled')).some((e) => e.args.tag === 'cancel-turn'),
    );
    await pending;
    const description = await turn.handle.describe();
    assert.equal(description.status.name, 'CANCELLED');
  });

  test('a long interactive turn continues as new without losing calls or running a retried call twice', async () => {
    const turn = await h.client.startTurn({
      sessionId: `long-${Date.now()}`,
      workspace: dir,
      servers: servers(),
      limits: { continueAsNewAfterCalls: 3 },
    });
    const firstRunId = (await turn.handle.describe()).runId;
    for (let i = 1; i <= 7; i += 1) {
      const outcome = await turn.callTool({
        id: `long-${i}`,
        name: 'mcp__fixture__echo',
        arguments: { text: `long call ${i}` },
      });
      assert.equal(textOf(outcome.content[0]), `long call ${i}`);
    }
    assert.notEqual((await turn.handle.describe()).runId, firstRunId, 'the turn continued as new');
    const retried = await turn.callTool({
      id: 'long-2',
      name: 'mcp__fixture__echo',
      arguments: { text: 'long call 2' },
    });
    assert.equal(textOf(retried.content[0]), 'long call 2');
    const ran = (await executions('echo')).filter((e) => (e.args as { text?: string }).text === 'long call 2');
    assert.equal(ran.length, 1, 'a call retried after continue-as-new returns its recorded outcome');
    const result = await turn.end();
    assert.equal((result.callsBefore ?? 0) + result.calls.length, 7);
    const transcript = await h.client.transcript(turn.turnId);
    assert.deepEqual(
      transcript.calls.map((c) => c.id),
      ['long-1', 'long-2', 'long-3', 'long-4', 'long-5', 'long-6', 'long-7'],
    );
    assert.equal(transcript.status?.servers[0]?.state, 'ready', 'status comes from the first run');
  });

  test('an interactive turn with no call for its idle time ends itself, but never during a call', async () => {
    const turn = await h.client.startTurn({
      sessionId: `idle-${Date.now()}`,
      workspace: dir,
      servers: servers(),
      limits: { idleMs: 1500 },
    });
    const long = await turn.callTool({ id: 'long', name: 'mcp__fixture__slow', arguments: { ms: 2500, tag: 'idle' } });
    assert.equal(long.status, 'ok', 'a call longer than the idle time is not cut short');
    for (let i = 0; i < 5; i += 1) {
      assert.equal(
        (await turn.callTool({ id: `quick-${i}`, name: 'mcp__fixture__echo', arguments: { text: 'q' } })).status,
        'ok',
      );
    }
    const started = Date.now();
    const result = await turn.handle.result();
    assert.equal(result.endedBy, 'idle');
    assert.ok(Date.now() - started < 6000, 'it ended about one idle time after the last call');
    const history = await turn.handle.fetchHistory();
    const timers = history.events!.filter((e) => e.timerStartedEventAttributes).length;
    assert.ok(timers <= 4, `one idle timer per idle period, not one per call (${timers} timers for 6 calls)`);
  });
});
