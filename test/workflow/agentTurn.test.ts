/**
 * The agentTurn workflow with its real activities over a fake server pool: no MCP server runs.
 * The dev server is this file's own (TestWorkflowEnvironment.createLocal, the project's CLI).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../../contract/index.js';
import { FakePool, fakeWorkerSuite, type FakeTool, type FakeWorker } from '../support/workflowEnv.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The fake server's tools: each test's pool gets fresh ones. */
function fakeTools(): FakeTool[] {
  return [
    // Default run: echoes its arguments.
    { tool: 'echo' },
    {
      tool: 'slow',
      run: async (args) => (
        await sleep(Number(args.ms ?? 300)),
        { content: [{ type: 'text', text: `slept ${String(args.ms)}` }] }
      ),
    },
    { tool: 'fail', run: () => ({ content: [{ type: 'text', text: 'the tool says no' }], isError: true }) },
    // No read-only or idempotent hint: a lost connection may have left an effect.
    {
      tool: 'write',
      annotations: { destructiveHint: true },
      run: () => Promise.reject(new Error('connection closed')),
    },
    // Read-only: a lost connection is retried.
    {
      tool: 'read',
      annotations: { readOnlyHint: true },
      run: (_args, attempt) =>
        attempt === 1
          ? Promise.reject(new Error('connection reset'))
          : { content: [{ type: 'text', text: `read on attempt ${attempt}` }] },
    },
  ];
}

describe('agentTurn workflow over a fake server pool', { timeout: 120_000 }, () => {
  const suite = fakeWorkerSuite();
  let pool: FakePool;

  async function start(name: string, options: { maxCachedWorkflows?: number } = {}): Promise<FakeWorker> {
    pool = new FakePool('fake', fakeTools());
    return suite.start(name, pool, options);
  }

  test('batch turn: two groups run in order, the calls of a group in parallel', async () => {
    const w = await start('batch');
    const result = await w.client.runBatch({
      sessionId: `wf-batch-${Date.now()}`,
      calls: [
        [
          { id: 'a', name: pool.publicName('slow'), arguments: { ms: 400 } },
          { id: 'b', name: pool.publicName('slow'), arguments: { ms: 400 } },
        ],
        [{ id: 'c', name: pool.publicName('echo'), arguments: { text: 'after the first group' } }],
      ],
    });
    assert.equal(result.endedBy, 'batch');
    assert.deepEqual(result.calls.map((c) => c.id).sort(), ['a', 'b', 'c']);
    assert.equal(result.calls[2]!.id, 'c', 'the second group ends last');
    for (const c of result.calls) assert.equal(c.outcome.status, 'ok', JSON.stringify(c.outcome));
    assert.deepEqual(result.calls[2]!.outcome.content, [
      { type: 'text', text: JSON.stringify({ text: 'after the first group' }) },
    ]);

    assert.equal(pool.calls.length, 3);
    const [first, second] = pool.calls.filter((c) => c.tool === 'slow');
    const third = pool.calls.find((c) => c.tool === 'echo')!;
    assert.ok(
      first!.startedAt < second!.endedAt! && second!.startedAt < first!.endedAt!,
      'the two calls of the first group overlapped',
    );
    assert.ok(
      third.startedAt >= Math.max(first!.endedAt!, second!.endedAt!),
      'the second group started after the first ended',
    );
    assert.equal(pool.reconciled.length, 1);
  });

  test('a turn asked to end its session ends it once its calls are done; a plain end keeps it', async () => {
    // No workflow cache: every workflow task replays the turn's history, the end-session marker too.
    const w = await start('ending-sessions', { maxCachedWorkflows: 0 });
    const batchSession = `wf-end-batch-${Date.now()}`;
    const batch = await w.client.runBatch({
      sessionId: batchSession,
      endSession: true,
      calls: [[{ id: 'a', name: pool.publicName('slow'), arguments: { ms: 200 } }]],
    });
    assert.equal(batch.calls[0]!.outcome.status, 'ok');
    assert.deepEqual(pool.ended, [batchSession]);
    assert.ok(pool.calls[0]!.endedAt! <= Date.now());

    const plain = await w.client.startTurn({ sessionId: `wf-end-plain-${Date.now()}` });
    await plain.end();
    const interactiveSession = `wf-end-turn-${Date.now()}`;
    const turn = await w.client.startTurn({ sessionId: interactiveSession });
    const call = turn.callTool({ id: 'slow-1', name: pool.publicName('slow'), arguments: { ms: 400 } });
    await sleep(100);
    const result = await turn.end({ endSession: true });
    assert.equal((await call).status, 'ok');
    assert.equal(result.endedBy, 'endTurn');
    assert.deepEqual(pool.ended, [batchSession, interactiveSession], 'the plain end ended nothing');
    const slow = pool.calls.find((c) => c.tool === 'slow' && c.sessionId === interactiveSession)!;
    assert.ok(slow.endedAt !== undefined, 'the call in flight finished before the session ended');
  });

  test('the worker that reconciled is lost before it lists the tools: the turn reconciles again on the shared queue', async () => {
    pool = new FakePool('fake', fakeTools());
    let reconciles = 0;
    // The first reconcile answers with the queue of a worker that is gone (nobody polls it).
    const w = await suite.start('lost-before-listing', pool, {
      wrapActivities: (real, { taskQueue }) => ({
        ...real,
        reconcileServers: async (input: Parameters<typeof real.reconcileServers>[0]) => {
          reconciles += 1;
          const result = await real.reconcileServers(input);
          return reconciles === 1 ? { ...result, workerQueue: `${taskQueue}@gone` } : result;
        },
      }),
    });
    try {
      const turn = await w.client.startTurn({
        sessionId: `wf-lost-${Date.now()}`,
        limits: { scheduleToStartMs: 1000 },
      });
      assert.equal(reconciles, 2);
      assert.equal(turn.workerQueue, w.workerQueue);
      assert.ok(turn.tools.some((t) => t.name === pool.publicName('echo')));
      assert.equal((await turn.callTool({ id: 'after', name: pool.publicName('echo'), arguments: {} })).status, 'ok');
      await turn.end();
    } finally {
      await w.stop();
    }
  });

  test('a turn cancelled while a call moves its servers ends cancelled: the call is not answered as a transport failure', async () => {
    pool = new FakePool('fake', fakeTools());
    let reconciles = 0;
    let reconcilingAgain!: () => void;
    const again = new Promise<void>((resolve) => (reconcilingAgain = resolve));
    const w = await suite.start('cancel-while-moving', pool, {
      wrapActivities: (real) => ({
        ...real,
        reconcileServers: async (input: Parameters<typeof real.reconcileServers>[0]) => {
          reconciles += 1;
          if (reconciles === 1) return real.reconcileServers(input);
          reconcilingAgain();
          // Held (bounded) until the turn's cancellation reaches it through a heartbeat.
          const ctx = Context.current();
          for (let i = 0; i < 50 && !ctx.cancellationSignal.aborted; i++) {
            ctx.heartbeat();
            await sleep(200);
          }
          throw new Error('the held reconcile was never cancelled');
        },
        // The call never reaches a server: the worker says the session's servers are gone.
        callTool: () =>
          Promise.reject(
            ApplicationFailure.create({
              type: FailureType.ServerUnavailable,
              message: 'the session has no servers here',
              nonRetryable: true,
            }),
          ),
      }),
    });
    const turn = await w.client.startTurn({ sessionId: `wf-cancel-moving-${Date.now()}` });
    const call = turn.callTool({ id: 'moving', name: pool.publicName('echo'), arguments: {} }).then(
      (outcome) => ({ outcome }),
      (err: unknown) => ({ err }),
    );
    await again;
    await turn.handle.cancel();
    const settled = await call;
    assert.ok(
      !('outcome' in settled),
      `the cancelled turn answered its call: ${JSON.stringify('outcome' in settled ? settled.outcome : undefined)}`,
    );
    assert.equal((await turn.handle.describe()).status.name, 'CANCELLED');
    assert.equal(pool.calls.length, 0);
  });

  test('interactive turn: a call ID sent twice (one after the other, and at once) runs once', async () => {
    const w = await start('interactive');
    const turn = await w.client.startTurn({ sessionId: `wf-interactive-${Date.now()}` });
    assert.deepEqual(
      turn.tools.map((t) => t.name).sort(),
      ['echo', 'fail', 'read', 'slow', 'write'].map((t) => pool.publicName(t)),
    );
    assert.equal(turn.status.servers[0]?.state, 'ready');
    assert.equal(turn.workerQueue, w.workerQueue);

    const request = { id: 'toolu_once', name: pool.publicName('echo'), arguments: { text: 'only once' } };
    const first = await turn.callTool(request);
    const again = await turn.callTool(request);
    assert.equal(first.status, 'ok');
    assert.deepEqual(again, first, 'the retry got the recorded outcome');
    assert.equal(pool.count('echo'), 1);

    const concurrent = { id: 'toolu_together', name: pool.publicName('slow'), arguments: { ms: 300 } };
    const [x, y] = await Promise.all([turn.callTool(concurrent), turn.callTool(concurrent)]);
    assert.deepEqual(x, y);
    assert.equal(pool.count('slow'), 1, 'two concurrent sends of one call ID ran it once');

    const result = await turn.end();
    assert.equal(result.endedBy, 'endTurn');
    assert.deepEqual(result.calls.map((c) => c.id).sort(), ['toolu_once', 'toolu_together']);
  });

  test('failures: a tool error is data, a lost connection is unknown_result (run once), an unknown tool is bad_request', async () => {
    const w = await start('failures');
    const turn = await w.client.startTurn({ sessionId: `wf-failures-${Date.now()}` });

    const toolError = await turn.callTool({ id: 'e1', name: pool.publicName('fail') });
    assert.equal(toolError.status, 'ok', 'the tool ran: its own error is a normal outcome');
    assert.equal(toolError.isError, true);
    assert.equal(toolError.errorKind, undefined);
    assert.deepEqual(toolError.content, [{ type: 'text', text: 'the tool says no' }]);
    assert.equal(toolError.attempts, 1);
    assert.equal(pool.count('fail'), 1, 'a tool error is not retried');

    const lost = await turn.callTool({ id: 'e2', name: pool.publicName('write'), arguments: { path: '/x' } });
    assert.equal(lost.status, 'error');
    assert.equal(lost.errorKind, 'unknown_result', JSON.stringify(lost));
    assert.match(lost.errorMessage ?? '', /connection closed/);
    assert.equal(pool.count('write'), 1, 'a call without read-only/idempotent hints is attempted exactly once');

    const unknown = await turn.callTool({ id: 'e3', name: 'mcp__fake__nope' });
    assert.equal(unknown.status, 'error');
    assert.equal(unknown.errorKind, 'bad_request');
    assert.match(unknown.errorMessage ?? '', /unknown tool/);

    // For contrast: a read-only call that loses its connection is retried (after a 1 s backoff).
    const retried = await turn.callTool({ id: 'e4', name: pool.publicName('read') });
    assert.equal(retried.status, 'ok', JSON.stringify(retried));
    assert.equal(retried.attempts, 2);
    assert.equal(pool.count('read'), 2);

    const result = await turn.end();
    assert.deepEqual(
      result.calls.map((c) => [c.id, c.outcome.errorKind ?? c.outcome.status]),
      [
        ['e1', 'ok'],
        ['e2', 'unknown_result'],
        ['e3', 'bad_request'],
        ['e4', 'ok'],
      ],
    );
    assert.equal(pool.calls.length, 4, 'the unknown tool never reached the pool');
  });

  test('no workflow cache: every task replays the turn from the start, and nothing runs twice', async () => {
    const w = await start('nocache', { maxCachedWorkflows: 0 });
    const turn = await w.client.startTurn({ sessionId: `wf-nocache-${Date.now()}` });
    const echo = { id: 'n1', name: pool.publicName('echo'), arguments: { text: 'replayed' } };
    const first = await turn.callTool(echo);
    const [slow, lost] = await Promise.all([
      turn.callTool({ id: 'n2', name: pool.publicName('slow'), arguments: { ms: 200 } }),
      turn.callTool({ id: 'n3', name: pool.publicName('write') }),
    ]);
    assert.deepEqual(await turn.callTool(echo), first);
    assert.equal(slow.status, 'ok');
    assert.equal(lost.errorKind, 'unknown_result');
    const result = await turn.end();
    assert.deepEqual(result.calls.map((c) => c.id).sort(), ['n1', 'n2', 'n3']);
    assert.deepEqual(
      pool.calls.map((c) => c.tool).sort(),
      ['echo', 'slow', 'write'],
      'each call ran once, however often the workflow replayed',
    );
  });
});
