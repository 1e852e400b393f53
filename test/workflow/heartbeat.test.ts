/**
 * Heartbeats keep pace with the turn's own heartbeat timeout: a call that outlasts a short one is
 * not taken for a lost worker. The real workflow and activities, over a fake server pool.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TURN_INPUT_FAILURE_TYPE } from '../../contract/index.js';
import { FakePool, fakeWorkerSuite, type FakeWorker } from '../support/workflowEnv.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The shortest heartbeat timeout a turn may ask for. */
const SHORT_HEARTBEAT_MS = 1000;

describe('heartbeats paced by the heartbeat timeout', { timeout: 120_000 }, () => {
  const suite = fakeWorkerSuite();
  let pool: FakePool;

  async function start(name: string): Promise<FakeWorker> {
    pool = new FakePool('fake', [
      // Read-only, so a lost heartbeat would be retried (on another worker) rather than reported at once.
      {
        tool: 'read',
        annotations: { readOnlyHint: true },
        run: async () => (await sleep(1500), { content: [{ type: 'text', text: 'read after 1.5 s' }] }),
      },
    ]);
    return suite.start(name, pool);
  }

  test('a 1.5 s read-only call under a 1 s heartbeat timeout runs once and succeeds (batch)', async () => {
    const w = await start('hb-batch');
    const result = await w.client.runBatch({
      sessionId: `wf-hb-batch-${Date.now()}`,
      limits: { heartbeatTimeoutMs: SHORT_HEARTBEAT_MS },
      calls: [[{ id: 'r1', name: pool.publicName('read') }]],
    });
    const outcome = result.calls[0]!.outcome;
    assert.equal(outcome.status, 'ok', JSON.stringify(outcome));
    assert.deepEqual(outcome.content, [{ type: 'text', text: 'read after 1.5 s' }]);
    assert.equal(outcome.attempts, 1);
    assert.equal(pool.count('read'), 1, 'the tool ran once');
  });

  test('the same call in an interactive turn runs once and succeeds', async () => {
    const w = await start('hb-turn');
    const turn = await w.client.startTurn({
      sessionId: `wf-hb-turn-${Date.now()}`,
      limits: { heartbeatTimeoutMs: SHORT_HEARTBEAT_MS },
    });
    const outcome = await turn.callTool({ id: 'r1', name: pool.publicName('read') });
    assert.equal(outcome.status, 'ok', JSON.stringify(outcome));
    assert.equal(pool.count('read'), 1, 'the tool ran once');
    await turn.end();
  });

  test('a limit out of range is refused before anything runs, naming the field', async () => {
    const w = await start('hb-refused');
    const cases: Array<[string, Record<string, number>, RegExp]> = [
      ['a heartbeat timeout under a second', { heartbeatTimeoutMs: 500 }, /heartbeatTimeoutMs/],
      ['a tool timeout that is not an integer', { toolTimeoutMs: 1.5 }, /toolTimeoutMs/],
      ['no calls before continuing as new', { continueAsNewAfterCalls: 0 }, /continueAsNewAfterCalls/],
    ];
    for (const [what, limits, field] of cases) {
      await assert.rejects(
        w.client.runBatch({
          sessionId: `wf-hb-refused-${Date.now()}`,
          limits,
          calls: [[{ id: 'r1', name: pool.publicName('read') }]],
        }),
        (err: unknown) => {
          assert.ok(err instanceof WorkflowFailedError, `${what}: ${String(err)}`);
          assert.ok(err.cause instanceof ApplicationFailure, `${what}: ${String(err.cause)}`);
          assert.equal(err.cause.type, TURN_INPUT_FAILURE_TYPE, what);
          assert.equal(err.cause.nonRetryable, true, what);
          assert.match(err.cause.message, field, what);
          return true;
        },
        what,
      );
    }
    assert.equal(pool.reconciled.length, 0, 'no servers were reconciled for a refused turn');
    assert.equal(pool.count('read'), 0);
  });
});
