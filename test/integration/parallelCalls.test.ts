/**
 * Many parallel calls in one turn against a server that keeps Temporal's default limit of 10
 * Updates in flight per workflow: the client queues the calls beyond its bound instead of sending
 * them to be rejected, every call completes, and each runs exactly once.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TurnClient } from '../../client/turnClient.js';
import { startDevServer, type DevServer } from '../../dev/devServer.js';
import { fixtureServer, readLines, startHarness, tempDir, type Harness } from '../support/harness.js';

const BOUND = 10;
const CALLS = 30;

describe('parallel calls beyond the server limit on Updates in flight', { timeout: 120_000 }, () => {
  let server: DevServer;
  let h: Harness;
  let dir: string;
  let execLog: string;

  before(async () => {
    dir = await tempDir('dmcp-parallel-');
    execLog = join(dir, 'executions.log');
    // Tuned otherwise (fast), but with the stock limit a cluster keeps by default.
    server = await startDevServer({ headless: true, dynamicConfig: { 'history.maxInFlightUpdates': 10 } });
    h = await startHarness('parallel', { FIXTURE_LOG: execLog }, { address: server.address });
  });
  after(async () => {
    await h?.stop();
    await server?.stop();
  });

  test(`${CALLS} parallel calls complete, each executed once, never more than ${BOUND} in flight`, async () => {
    const counts: number[] = [];
    const client = new TurnClient({
      client: h.client.client,
      taskQueue: h.taskQueue,
      maxCallsInFlight: BOUND,
      onCallsInFlight: (n) => counts.push(n),
    });
    const turn = await client.startTurn({
      sessionId: `parallel-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
    });
    const calls = Array.from({ length: CALLS }, (_, i) => ({
      id: `p${i}`,
      name: 'mcp__fixture__slow',
      arguments: { ms: 300, tag: `t${i}` },
    }));

    const outcomes = await Promise.all(calls.map((c) => turn.callTool(c)));
    assert.deepEqual(
      outcomes.map((o) => o.status),
      calls.map(() => 'ok'),
    );
    assert.ok(
      outcomes.every((o) => JSON.stringify(o.content) === JSON.stringify([{ type: 'text', text: 'slept 300 ms' }])),
    );
    assert.equal(Math.max(...counts), BOUND, 'the bound was reached and never exceeded');
    assert.equal(counts[counts.length - 1], 0, 'every slot was given back');

    // Sending them all again returns the recorded outcomes without running anything.
    const again = await Promise.all(calls.map((c) => turn.callTool(c)));
    assert.deepEqual(again, outcomes);
    assert.ok(Math.max(...counts) <= BOUND);

    const result = await turn.end();
    assert.equal(result.calls.length, CALLS);
    const slow = (await readLines(execLog))
      .map((l) => JSON.parse(l) as { tool: string; args: { tag: string } })
      .filter((e) => e.tool === 'slow');
    assert.equal(slow.length, CALLS, 'each call executed exactly once');
    assert.deepEqual(new Set(slow.map((e) => e.args.tag)), new Set(calls.map((c) => c.arguments.tag)));
  });
});
