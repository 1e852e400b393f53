/**
 * Shared calls in the real agentTurn workflow with its real activities, over a fake pool whose one
 * server is a remote 2026-07-28 one: a call runs over the worker's connection outside the session;
 * a worker that cannot verify the grant refuses it unrun and the holder takes it, once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CallToolInput } from '../../contract/index.js';
import { FakePool, fakeWorkerSuite } from '../support/workflowEnv.js';

describe('shared calls to a stateless remote server', { timeout: 120_000 }, () => {
  const suite = fakeWorkerSuite();

  test('a call runs over the connection outside the session, with the turn its grant names', async () => {
    const pool = new FakePool('remote', [{ tool: 'echo' }], { modern: true });
    const sent: CallToolInput[] = [];
    const w = await suite.start('shared', pool, {
      wrapActivities: (real) => ({ ...real, callTool: (input) => (sent.push(input), real.callTool(input)) }),
    });
    const sessionId = `wf-shared-${Date.now()}`;
    const turn = await w.client.startTurn({ sessionId });
    const outcome = await turn.callTool({ id: 'c1', name: pool.publicName('echo'), arguments: { text: 'hi' } });
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    await turn.end();
    assert.equal(sent.length, 1);
    assert.ok(sent[0]!.shared, 'the call carried the grant');
    assert.equal(sent[0]!.workerQueue, undefined, 'and named no holder');
    assert.deepEqual(
      pool.calls.map((c) => c.sessionId.startsWith('shared/')),
      [true],
      "it ran in the worker's shared connection, not in the session",
    );
  });

  test('a worker that cannot verify the grant refuses the call unrun; the holder runs it once, and takes the next call at once', async () => {
    const pool = new FakePool('remote', [{ tool: 'echo', annotations: { destructiveHint: true } }], { modern: true });
    const sent: CallToolInput[] = [];
    const w = await suite.start('shared-miss', pool, {
      // Another operator's worker (or a forged grant): the seal does not verify.
      wrapActivities: (real) => ({
        ...real,
        callTool: (input) => {
          sent.push(input);
          return real.callTool(
            input.shared ? { ...input, shared: { ...input.shared, grant: '00'.repeat(32) } } : input,
          );
        },
      }),
    });
    const sessionId = `wf-shared-miss-${Date.now()}`;
    const turn = await w.client.startTurn({ sessionId });
    const first = await turn.callTool({ id: 'c1', name: pool.publicName('echo'), arguments: { n: 1 } });
    const second = await turn.callTool({ id: 'c2', name: pool.publicName('echo'), arguments: { n: 2 } });
    await turn.end();
    assert.equal(first.status, 'ok', first.errorMessage);
    assert.equal(second.status, 'ok', second.errorMessage);
    assert.deepEqual(
      sent.map((i) => [i.callId, i.shared !== undefined]),
      [
        ['c1', true],
        ['c1', false],
        ['c2', false],
      ],
      'refused once, then the holder: the turn stops trying until its next reconcile',
    );
    assert.deepEqual(
      pool.calls.map((c) => [c.args.n, c.sessionId]),
      [
        [1, sessionId],
        [2, sessionId],
      ],
      'each call ran once, in the session, on the holder',
    );
    const transcript = await w.client.transcript(turn.turnId);
    assert.deepEqual(
      transcript.calls.map((c) => c.outcome?.status),
      ['ok', 'ok'],
    );
  });
});
