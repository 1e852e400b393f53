/**
 * What a turn refuses from its caller, and what it keeps in memory: the real workflow and
 * activities over a fake server pool, on this file's own dev server.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CallRequest } from '../../contract/index.js';
import { FakePool, fakeWorkerSuite, type FakeWorker } from '../support/workflowEnv.js';
import { within } from '../support/harness.js';
import { causeMessages } from '../support/content.js';

describe('turn bounds', { timeout: 180_000 }, () => {
  const suite = fakeWorkerSuite();
  let pool: FakePool;

  async function start(name: string): Promise<FakeWorker> {
    pool = new FakePool('fake', [{ tool: 'echo' }]);
    return suite.start(name, pool);
  }

  test('the callTool Update refuses malformed and oversized calls, and the reserved ID, before they run', async () => {
    const w = await start('validator');
    const turn = await w.client.startTurn({ sessionId: `wf-validator-${Date.now()}` });
    const echo = pool.publicName('echo');
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) deep = { d: deep };
    const bad: [string, unknown, RegExp][] = [
      ['arguments as an array', { id: 'v1', name: echo, arguments: ['a'] }, /arguments must be a JSON object/],
      ['arguments as a string', { id: 'v2', name: echo, arguments: 'text' }, /arguments must be a JSON object/],
      ['arguments null', { id: 'v3', name: echo, arguments: null }, /arguments must be a JSON object/],
      ['a 300-character id', { id: 'i'.repeat(300), name: echo }, /call id is 300 characters; at most 256/],
      ['a 300-character name', { id: 'v4', name: 'n'.repeat(300) }, /tool name is 300 characters/],
      ['an empty id', { id: '', name: echo }, /non-empty string id/],
      [
        'arguments over 1 MiB',
        { id: 'v5', name: echo, arguments: { text: 'a'.repeat(1024 * 1024 + 1) } },
        /characters of JSON; at most/,
      ],
      ['arguments 100 levels deep', { id: 'v6', name: echo, arguments: deep }, /nest deeper than 64/],
      ['the end Update ID', { id: 'endTurn', name: echo, arguments: { text: 'x' } }, /reserved for ending the turn/],
    ];
    for (const [what, request, expected] of bad) {
      await assert.rejects(
        turn.callTool(request as CallRequest),
        (err: unknown) => (assert.match(causeMessages(err), expected, what), true),
        what,
      );
    }
    assert.equal(pool.count('echo'), 0, 'none of them ran');
    const ok = await turn.callTool({ id: 'fine', name: echo, arguments: { text: 'fine' } });
    assert.equal(ok.status, 'ok');
    // With "endTurn" taken by a call, end() would be answered as that call and the turn stay open.
    const result = await within(15_000, 'turn.end()', turn.end());
    assert.equal(result.endedBy, 'endTurn');
    assert.deepEqual(
      result.calls.map((c) => c.id),
      ['fine'],
    );
  });

  test('a batch past its bounds fails at once with the reason, running nothing', async () => {
    const w = await start('batch-bounds');
    const echo = pool.publicName('echo');
    const call = (id: string): CallRequest => ({ id, name: echo, arguments: { text: id } });
    const cases: [string, CallRequest[][], RegExp][] = [
      [
        'a group of 101 calls',
        [Array.from({ length: 101 }, (_, i) => call(`g${i}`))],
        /batch group 1 has 101 calls; at most 100 run in parallel/,
      ],
      [
        '1,001 calls in all',
        Array.from({ length: 11 }, (_, g) => Array.from({ length: 91 }, (_, i) => call(`t${g}-${i}`))),
        /more than 1000 calls/,
      ],
      ['a duplicated call ID', [[call('a')], [call('a')]], /appears twice/],
      [
        'arguments as an array',
        [[{ id: 'x', name: echo, arguments: [1] as unknown as Record<string, unknown> }]],
        /arguments must be a JSON object/,
      ],
    ];
    for (const [what, calls, expected] of cases) {
      const started = Date.now();
      await assert.rejects(
        within(30_000, what, w.client.runBatch({ sessionId: `wf-bounds-${Date.now()}`, calls })),
        (err: unknown) => (
          assert.match(causeMessages(err), expected, what),
          assert.match(causeMessages(err), /batch refused/),
          true
        ),
        what,
      );
      assert.ok(Date.now() - started < 20_000, `${what}: refused promptly`);
    }
    assert.equal(pool.count('echo'), 0, 'no call of a refused batch ran');
    assert.equal(pool.reconciled.length, 0, 'not even the servers were reconciled');
    const fine = await w.client.runBatch({
      sessionId: `wf-bounds-ok-${Date.now()}`,
      calls: [Array.from({ length: 100 }, (_, i) => call(`ok${i}`))],
    });
    assert.equal(fine.calls.length, 100, 'a full group of 100 still runs');
  });

  test('an interactive turn keeps only the newest outcomes in memory and in its result; history keeps them all', async () => {
    const w = await start('lean');
    const turn = await w.client.startTurn({
      sessionId: `wf-lean-${Date.now()}`,
      limits: { continueAsNewAfterCalls: 1000 },
    });
    const echo = pool.publicName('echo');
    const n = 130;
    for (let i = 0; i < n; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, k) =>
          turn.callTool({ id: `c${i + k}`, name: echo, arguments: { text: `call ${i + k}` } }),
        ),
      );
    }
    const progress = await turn.handle.query<{ callsDone: number }>('status');
    assert.equal(progress.callsDone, n, 'the status still counts every call');
    const result = await turn.end();
    assert.equal(result.calls.length, 100, 'the result holds the newest 100 records, not all 130');
    assert.ok(!result.calls.some((c) => c.id === 'c0'), 'the oldest record was let go');
    const transcript = await w.client.transcript(turn.turnId);
    assert.equal(transcript.calls.length, n, 'the transcript still has every call');
    for (const c of transcript.calls)
      assert.match(JSON.stringify(c.outcome?.content), /call \d+/, `${c.id} kept its outcome in history`);
  });

  test('after continue-as-new, a retry of a dropped call is refused and a carried one answered', async () => {
    const w = await start('lean-can');
    const turn = await w.client.startTurn({
      sessionId: `wf-lean-can-${Date.now()}`,
      limits: { continueAsNewAfterCalls: 110 },
    });
    const echo = pool.publicName('echo');
    const firstRun = (await turn.handle.describe()).runId;
    for (let i = 0; i < 110; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, k) =>
          turn.callTool({ id: `c${i + k}`, name: echo, arguments: { text: `call ${i + k}` } }),
        ),
      );
    }
    // Continue-as-new happens once the burst is over; wait for the new run.
    const deadline = Date.now() + 20_000;
    while ((await turn.handle.describe()).runId === firstRun && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    assert.notEqual((await turn.handle.describe()).runId, firstRun, 'the turn continued as new');
    const dropped = await turn.callTool({ id: 'c3', name: echo, arguments: { text: 'call 3' } });
    assert.match(String(dropped.errorMessage), /already ran earlier/);
    const carried = await turn.callTool({ id: 'c105', name: echo, arguments: { text: 'call 105' } });
    assert.match(JSON.stringify(carried.content), /call 105/);
    assert.equal(pool.count('echo'), 110, 'neither retry ran the tool again');
    const result = await turn.end();
    assert.equal(result.callsBefore, 110);
  });
});
