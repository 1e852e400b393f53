import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { TurnClient, type Turn } from '../../client/turnClient.js';
import {
  ActivityName,
  FailureType,
  type CallToolInput,
  type LocalCallOutcome,
  type ReconcileResult,
} from '../../contract/index.js';
import { decodeHistoryPayloads } from '../../payloads/decodeHistory.js';
import { bundleWorkflows } from '../../worker/index.js';
import { FAST_PATH_BOUND_MS } from '../../workflows/activityOptions.js';
import { textOf } from '../support/content.js';
import {
  fixtureServer,
  readLines,
  runtimeLogs,
  startHarness,
  startWorkerProcess,
  stopWorkerProcess,
  tempDir,
  temporalAddress,
  uniqueQueue,
  waitUntil,
  type Harness,
  type WorkerProcess,
} from '../support/harness.js';

type History = temporal.api.history.v1.IHistory;

/** How each call of a turn ran, from its history alone. */
interface CallPaths {
  /** Call IDs with a successful local activity marker (the fast path), and the marker's UI label. */
  local: Map<string, string | undefined>;
  /** The failure types of local activities that failed (a miss, a timeout), in order. */
  localFailures: string[];
  /** Call IDs of regular `callTool` activities, in the order scheduled, with their queue. */
  regular: { callId: string; queue: string }[];
  /** Whether each reconcile said the fast path is on. */
  reconciledFastPath: (boolean | undefined)[];
  /** Whether each reconcile let side-effecting calls be sent for eager dispatch. */
  reconciledEager: (boolean | undefined)[];
  /** The failure types of regular `callTool` attempts that failed, in order. */
  regularFailures: string[];
  /** Queues each reconcile was scheduled on. */
  reconcileQueues: string[];
  /** `workerInfo` local activities (a new session's first turn asks where it runs). */
  workerInfo: number;
}

async function historyOf(client: TurnClient, turnId: string): Promise<History> {
  const converter = client.client.options.loadedDataConverter;
  const history = await client.client.workflow.getHandle(turnId).fetchHistory();
  await decodeHistoryPayloads(history, { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage });
  return history;
}

function callPaths(client: TurnClient, history: History): CallPaths {
  const converter = client.client.options.loadedDataConverter.payloadConverter;
  const paths: CallPaths = {
    local: new Map(),
    localFailures: [],
    regular: [],
    reconciledFastPath: [],
    reconciledEager: [],
    regularFailures: [],
    reconcileQueues: [],
    workerInfo: 0,
  };
  const calls = new Set<string>();
  const reconciles = new Set<string>();
  for (const e of history.events ?? []) {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity') {
      const data = converter.fromPayload<{ activity_type?: string; activityType?: string }>(
        marker.details!.data!.payloads![0]!,
      );
      const type = data.activity_type ?? data.activityType;
      if (type === ActivityName.workerInfo) {
        paths.workerInfo += 1;
        continue;
      }
      assert.equal(type, ActivityName.callToolLocal, 'the only other local activity a turn runs');
      if (marker.failure) {
        const f = marker.failure;
        paths.localFailures.push(
          f.applicationFailureInfo?.type ??
            f.cause?.applicationFailureInfo?.type ??
            (f.timeoutFailureInfo || f.cause?.timeoutFailureInfo ? 'timeout' : (f.message ?? '')),
        );
        continue;
      }
      const result = converter.fromPayload<LocalCallOutcome>(marker.details!.result!.payloads![0]!);
      paths.local.set(
        result.callId,
        e.userMetadata?.summary ? converter.fromPayload<string>(e.userMetadata.summary) : undefined,
      );
    }
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === ActivityName.callTool) {
      const input = converter.fromPayload<CallToolInput>(scheduled.input!.payloads![0]!);
      paths.regular.push({ callId: input.callId, queue: scheduled.taskQueue?.name ?? '' });
      calls.add(String(e.eventId));
    }
    const failed = e.activityTaskFailedEventAttributes;
    if (failed && calls.has(String(failed.scheduledEventId)))
      paths.regularFailures.push(failed.failure?.applicationFailureInfo?.type ?? failed.failure?.message ?? '');
    if (scheduled?.activityType?.name === ActivityName.reconcileServers) {
      reconciles.add(String(e.eventId));
      paths.reconcileQueues.push(scheduled.taskQueue?.name ?? '');
    }
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed && reconciles.has(String(completed.scheduledEventId))) {
      const reconciled = converter.fromPayload<ReconcileResult>(completed.result!.payloads![0]!);
      paths.reconciledFastPath.push(reconciled.fastPath);
      paths.reconciledEager.push(reconciled.eagerCalls);
    }
  }
  return paths;
}

const spec = `fixture:${process.execPath} ${fixtureServer}`;

describe('the fast path: retry-safe calls as local activities', () => {
  let dir: string;
  let execLog: string;
  const harnesses: Harness[] = [];
  let bundleFile: string;

  before(async () => {
    dir = await tempDir();
    execLog = join(dir, 'executions.log');
    bundleFile = join(dir, 'workflows.js');
    await writeFile(bundleFile, (await bundleWorkflows()).code);
  });
  after(async () => {
    for (const h of harnesses) await h.stop();
  });
  const executions = async (tool: string, tag?: string) =>
    (await readLines(execLog))
      .map((l) => JSON.parse(l) as { tool: string; args: { tag?: string; text?: string } })
      .filter((e) => e.tool === tool && (tag === undefined || e.args.tag === tag));

  test('a read-only call is a local activity marker with its UI label; a side-effecting call is a regular activity; both replay', async () => {
    const h = await startHarness('fast', { FIXTURE_LOG: execLog });
    harnesses.push(h);
    const turn = await h.client.startTurn({
      sessionId: `fast-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [spec] },
    });
    const ro = await turn.callTool({ id: 'ro', name: 'mcp__fixture__read_slow', arguments: { ms: 0, tag: 'fast-ro' } });
    const se = await turn.callTool({ id: 'se', name: 'mcp__fixture__slow', arguments: { ms: 0, tag: 'fast-se' } });
    assert.equal(ro.status, 'ok', ro.errorMessage);
    assert.equal(textOf(ro.content[0]), 'read after 0 ms');
    assert.equal(ro.attempts, 1);
    assert.equal(se.status, 'ok', se.errorMessage);
    await turn.end();

    const history = await historyOf(h.client, turn.turnId);
    const paths = callPaths(h.client, history);
    assert.deepEqual(paths.reconciledFastPath, [true]);
    assert.equal(paths.workerInfo, 1, 'a new session asks which worker runs its turn');
    assert.deepEqual(paths.reconcileQueues, [h.worker.workerQueue], 'and reconciles there first');
    assert.deepEqual(
      [...paths.local],
      [['ro', 'mcp__fixture__read_slow']],
      'the read-only call ran as a local activity, labelled with its public name',
    );
    assert.deepEqual(paths.localFailures, []);
    assert.deepEqual(
      paths.regular,
      [{ callId: 'se', queue: h.taskQueue }],
      'the side-effecting call never ran as a local activity: it was sent to the shared queue for eager dispatch',
    );
    assert.deepEqual(paths.regularFailures, []);
    assert.equal((await executions('slow', 'fast-se')).length, 1);
    assert.equal((await executions('read_slow', 'fast-ro')).length, 1);

    const transcript = await h.client.transcript(turn.turnId);
    const call = transcript.calls.find((c) => c.id === 'ro');
    assert.equal(call?.summary, 'mcp__fixture__read_slow', 'the transcript shows the marker as the call');
    assert.equal(call?.outcome?.status, 'ok');
    assert.equal(textOf(call?.outcome?.content[0]), 'read after 0 ms');
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: bundleFile }, replayName: 'fast-replay' },
      history,
      turn.turnId,
    );
  });

  test("a read-only call that outlives the fast path's bound is run again as a regular activity", async () => {
    const h = await startHarness('fast-slow', { FIXTURE_LOG: execLog });
    harnesses.push(h);
    const turn = await h.client.startTurn({
      sessionId: `fast-slow-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [spec] },
    });
    const slow = await turn.callTool({
      id: 'slow',
      name: 'mcp__fixture__read_slow',
      arguments: { ms: FAST_PATH_BOUND_MS + 1000, tag: 'fast-slow' },
    });
    assert.equal(slow.status, 'ok', slow.errorMessage);
    assert.equal(textOf(slow.content[0]), `read after ${FAST_PATH_BOUND_MS + 1000} ms`);
    assert.equal(slow.attempts, 2, 'the local attempt reached the tool, so it counts');
    const next = await turn.callTool({
      id: 'next',
      name: 'mcp__fixture__read_slow',
      arguments: { ms: 0, tag: 'fast-next' },
    });
    assert.equal(next.status, 'ok', next.errorMessage);
    await turn.end();
    const paths = callPaths(h.client, await historyOf(h.client, turn.turnId));
    assert.deepEqual(paths.localFailures, ['timeout']);
    assert.deepEqual(
      paths.regular.map((r) => r.callId),
      ['slow'],
    );
    assert.deepEqual(
      [...paths.local.keys()],
      ['next'],
      'a timeout is no miss: the next call takes the fast path again',
    );
    assert.equal((await executions('read_slow', 'fast-slow')).length, 2);
  });

  test('DMCP_FAST_PATH=false: the reconcile says so, and a read-only call is a regular activity', async () => {
    const h = await startHarness('fast-off', {
      FIXTURE_LOG: execLog,
      DMCP_FAST_PATH: 'false',
      DMCP_EAGER_CALLS: 'false',
    });
    harnesses.push(h);
    const turn = await h.client.startTurn({
      sessionId: `fast-off-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [spec] },
    });
    const ro = await turn.callTool({ id: 'ro', name: 'mcp__fixture__read_slow', arguments: { ms: 0, tag: 'off-ro' } });
    assert.equal(ro.status, 'ok', ro.errorMessage);
    const se = await turn.callTool({ id: 'se', name: 'mcp__fixture__slow', arguments: { ms: 0, tag: 'off-se' } });
    assert.equal(se.status, 'ok', se.errorMessage);
    await turn.end();
    const paths = callPaths(h.client, await historyOf(h.client, turn.turnId));
    assert.deepEqual(paths.reconciledFastPath, [false]);
    assert.deepEqual(paths.reconciledEager, [false], 'DMCP_EAGER_CALLS=false is recorded too');
    assert.deepEqual(
      paths.reconcileQueues,
      [h.taskQueue],
      'a worker without the fast path reconciles a new session on the shared queue',
    );
    assert.equal(paths.local.size, 0);
    assert.deepEqual(paths.localFailures, []);
    assert.deepEqual(
      paths.regular,
      [
        { callId: 'ro', queue: h.worker.workerQueue },
        { callId: 'se', queue: h.worker.workerQueue },
      ],
      "both on the worker's own queue",
    );
  });

  /**
   * Worker A holds a session's servers (its first turn); the second turn is started through B's
   * shared queue, which only B polls, and reconciles on A's own queue: every workflow task of the
   * second turn runs on B, every call on A.
   */
  async function secondTurnAwayFromServers(prefix: string): Promise<{ a: Harness; b: Harness; turn: Turn }> {
    const a = await startHarness(`${prefix}-a`, { FIXTURE_LOG: execLog });
    const b = await startHarness(`${prefix}-b`, { FIXTURE_LOG: execLog });
    harnesses.push(a, b);
    const sessionId = `${prefix}-miss-${Date.now()}`;
    const first = await a.client.startTurn({ sessionId, workspace: dir, servers: { inlineSpecs: [spec] } });
    await first.end();
    await waitUntil('turn 1 to be listed', async () => {
      for await (const w of a.client.client.workflow.list({ query: `DmcpSessionId = '${sessionId}'` }))
        if (w.memo?.workerQueue === a.worker.workerQueue) return true;
      return false;
    });
    return { a, b, turn: await b.client.startTurn({ sessionId, workspace: dir, servers: { inlineSpecs: [spec] } }) };
  }

  test('a turn whose workflow tasks run on a worker without its servers misses once, falls back, and stops trying', async () => {
    const logsBefore = runtimeLogs.length;
    const { a, b, turn } = await secondTurnAwayFromServers('fast');
    assert.equal(turn.workerQueue, a.worker.workerQueue, 'turn 2 reconciled on the worker holding the servers');
    const one = await turn.callTool({
      id: 'one',
      name: 'mcp__fixture__read_slow',
      arguments: { ms: 0, tag: 'miss-1' },
    });
    const two = await turn.callTool({
      id: 'two',
      name: 'mcp__fixture__read_slow',
      arguments: { ms: 0, tag: 'miss-2' },
    });
    assert.equal(one.status, 'ok', one.errorMessage);
    assert.equal(one.attempts, 1, 'a miss ran nothing, so it is no attempt');
    assert.equal(two.status, 'ok', two.errorMessage);
    await turn.end();

    const paths = callPaths(b.client, await historyOf(b.client, turn.turnId));
    assert.deepEqual(paths.localFailures, [FailureType.FastPathMiss], 'one miss, then no more tries');
    assert.equal(paths.local.size, 0);
    assert.deepEqual(paths.regular, [
      { callId: 'one', queue: a.worker.workerQueue },
      { callId: 'two', queue: a.worker.workerQueue },
    ]);
    assert.equal((await executions('read_slow', 'miss-1')).length, 1, 'the miss never reached the tool');
    assert.deepEqual(
      runtimeLogs.slice(logsBefore).filter((l) => l.includes('Activity failed') && l.includes('callToolLocal')),
      [],
      'a miss is no warning: nothing went wrong',
    );
  });

  test('a side-effecting call sent for eager dispatch to a worker without the servers is refused unrun, runs once on the holder, and the turn stops trying', async () => {
    // As above: A holds the session's servers, every workflow task of turn 2 runs on B, so the server
    // hands the eagerly dispatched call to B, which refuses it.
    const logsBefore = runtimeLogs.length;
    const { a, b, turn } = await secondTurnAwayFromServers('eager');
    assert.equal(turn.workerQueue, a.worker.workerQueue);
    const one = await turn.callTool({ id: 'se1', name: 'mcp__fixture__slow', arguments: { ms: 0, tag: 'eager-1' } });
    const ro = await turn.callTool({
      id: 'ro',
      name: 'mcp__fixture__read_slow',
      arguments: { ms: 0, tag: 'eager-ro' },
    });
    const two = await turn.callTool({ id: 'se2', name: 'mcp__fixture__slow', arguments: { ms: 0, tag: 'eager-2' } });
    for (const o of [one, ro, two]) assert.equal(o.status, 'ok', o.errorMessage);
    assert.equal(one.attempts, 1, 'the refusal ran nothing, so it is no attempt');
    await turn.end();

    const history = await historyOf(b.client, turn.turnId);
    const paths = callPaths(b.client, history);
    assert.deepEqual(
      paths.regular,
      [
        { callId: 'se1', queue: b.taskQueue },
        { callId: 'se1', queue: a.worker.workerQueue },
        { callId: 'ro', queue: a.worker.workerQueue },
        { callId: 'se2', queue: a.worker.workerQueue },
      ],
      "one refusal, then the holder's own queue, and no more tries: not even the fast path",
    );
    assert.deepEqual(paths.regularFailures, [FailureType.FastPathMiss]);
    assert.deepEqual(paths.localFailures, []);
    assert.equal((await executions('slow', 'eager-1')).length, 1, 'the side-effecting call ran once');
    assert.equal((await executions('slow', 'eager-2')).length, 1);
    assert.deepEqual(
      runtimeLogs.slice(logsBefore).filter((l) => l.includes('Activity failed') && l.includes('callTool')),
      [],
      'a refusal is no warning: nothing went wrong',
    );
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: bundleFile }, replayName: 'eager-replay' },
      history,
      turn.turnId,
    );
  });

  /** A turn on `h` whose fixture server is retry-safe by its entry, so `slow` (not read-only) takes the fast path. */
  async function retrySafeTurn(h: Harness, name: string, limits?: { heartbeatTimeoutMs: number }) {
    const file = join(dir, `${name}-mcp.json`);
    await writeFile(
      file,
      JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [fixtureServer], retry: 'safe' } } }),
    );
    return h.client.startTurn({
      sessionId: `${name}-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
      ...(limits ? { limits } : {}),
    });
  }

  // A fast call holds its workflow task, and Temporal hands a cancel (an Update, or the turn's
  // cancellation) to the workflow only in the next task: when the call ends, at the bound, or when
  // the SDK extends the task at 80 % of its timeout, whichever is first.
  test('a cancel sent during a fast call reaches it when the SDK extends its workflow task, and the turn goes on', async () => {
    const h = await startHarness('fast-cancel', { FIXTURE_LOG: execLog });
    harnesses.push(h);
    // Workflow task timeout 2 s: extended at 1.6 s, well before the 4.5 s bound.
    const turn = await retrySafeTurn(h, 'fast-cancel', { heartbeatTimeoutMs: 2000 });
    const pending = turn.callTool({
      id: 'c1',
      name: 'mcp__fixture__slow',
      arguments: { ms: 60_000, tag: 'fast-cancel' },
    });
    await waitUntil('the fast call to start', async () => (await executions('slow', 'fast-cancel')).length === 1);
    const sent = Date.now();
    assert.equal(await turn.cancelCall('c1'), true, 'the call was still running');
    const answeredMs = Date.now() - sent;
    const outcome = await pending;
    assert.equal(outcome.status, 'error');
    assert.equal(outcome.errorKind, 'cancelled', outcome.errorMessage);
    assert.ok(answeredMs < FAST_PATH_BOUND_MS, `the cancel was answered after ${answeredMs} ms, not only at the bound`);
    await waitUntil(
      'the server to receive notifications/cancelled',
      async () => (await executions('cancelled', 'fast-cancel')).length === 1,
    );
    const next = await turn.callTool({
      id: 'c2',
      name: 'mcp__fixture__slow',
      arguments: { ms: 0, tag: 'fast-cancel-next' },
    });
    assert.equal(next.status, 'ok', next.errorMessage);
    await turn.end();
    const paths = callPaths(h.client, await historyOf(h.client, turn.turnId));
    assert.deepEqual([...paths.local.keys()], ['c2']);
    assert.deepEqual(paths.regular, [], 'the cancelled call was not handed to the regular path');
    assert.equal((await executions('slow', 'fast-cancel')).length, 1, 'it ran once');
  });

  test('with the default limits a cancel waits for a fast call that ends first: the call keeps its result and the cancel says so', async () => {
    const h = await startHarness('fast-cancel-late', { FIXTURE_LOG: execLog });
    harnesses.push(h);
    const turn = await retrySafeTurn(h, 'fast-cancel-late');
    let resultAt = 0;
    const pending = turn
      .callTool({ id: 'c1', name: 'mcp__fixture__slow', arguments: { ms: 1500, tag: 'fast-cancel-late' } })
      .then((o) => {
        resultAt = Date.now();
        return o;
      });
    await waitUntil('the fast call to start', async () => (await executions('slow', 'fast-cancel-late')).length === 1);
    assert.equal(await turn.cancelCall('c1'), false, 'the call had ended when the cancel reached the turn');
    const cancelAnsweredAt = Date.now();
    const outcome = await pending;
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.ok(resultAt <= cancelAnsweredAt, 'the cancel was answered after the call');
    assert.deepEqual(await executions('cancelled', 'fast-cancel-late'), []);
    await turn.end();
  });

  test('cancelling the turn during a fast call cancels the call on the server', async () => {
    const h = await startHarness('fast-cancel-turn', { FIXTURE_LOG: execLog });
    harnesses.push(h);
    const turn = await retrySafeTurn(h, 'fast-cancel-turn', { heartbeatTimeoutMs: 2000 });
    const pending = turn
      .callTool({ id: 'c1', name: 'mcp__fixture__slow', arguments: { ms: 60_000, tag: 'fast-cancel-turn' } })
      .catch((err: unknown) => err);
    await waitUntil('the fast call to start', async () => (await executions('slow', 'fast-cancel-turn')).length === 1);
    const sent = Date.now();
    await turn.handle.cancel();
    await waitUntil(
      'the server to receive notifications/cancelled',
      async () => (await executions('cancelled', 'fast-cancel-turn')).length === 1,
    );
    await pending;
    const description = await turn.handle.describe();
    assert.equal(description.status.name, 'CANCELLED');
    assert.ok(Date.now() - sent < FAST_PATH_BOUND_MS, "the call was cancelled before the fast path's bound");
    const paths = callPaths(h.client, await historyOf(h.client, turn.turnId));
    assert.deepEqual(paths.regular, [], 'nothing was handed to the regular path');
    assert.equal((await executions('slow', 'fast-cancel-turn')).length, 1);
  });
});

describe('a worker SIGKILLed during a fast call', () => {
  const HEARTBEAT_MS = 3000;
  const RERUN_MS = 4000;
  let dir: string;
  let bundleFile: string;
  const workers: WorkerProcess[] = [];
  const serverPids = new Set<number>();

  before(async () => {
    dir = await tempDir();
    bundleFile = join(dir, 'workflows.js');
    await writeFile(bundleFile, (await bundleWorkflows()).code);
  });
  after(async () => {
    await Promise.all(workers.map(stopWorkerProcess));
    for (const pid of serverPids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  });

  test('loses nothing, runs no side effect twice, and fails over within the heartbeat timeout + 3 s', async () => {
    const execLog = join(dir, 'executions.log');
    const taskQueue = uniqueQueue('fast-crash');
    const env = { TEMPORAL_ADDRESS: temporalAddress(), FIXTURE_LOG: execLog, DMCP_NO_USER_CONFIG: '1' };
    // One worker at first: it reconciles and runs the turn's workflow tasks, so calls take the fast path.
    const victim = await startWorkerProcess(taskQueue, bundleFile, env);
    workers.push(victim);
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new TurnClient({ client: new Client({ connection }), taskQueue });
    try {
      const turn = await client.startTurn({
        sessionId: `fast-crash-${Date.now()}`,
        workspace: dir,
        servers: { inlineSpecs: [spec] },
        limits: { heartbeatTimeoutMs: HEARTBEAT_MS, scheduleToStartMs: 3000 },
      });
      for (const s of turn.status.servers) if (s.pid) serverPids.add(s.pid);
      assert.equal(turn.workerQueue, victim.workerQueue);
      const executions = async (tool: string, tag?: string) =>
        (await readLines(execLog))
          .map((l) => JSON.parse(l) as { tool: string; args: { tag?: string } })
          .filter((e) => e.tool === tool && (tag === undefined || e.args.tag === tag));

      const done = await turn.callTool({ id: 'done', name: 'mcp__fixture__slow', arguments: { ms: 0, tag: 'done' } });
      assert.equal(done.status, 'ok');
      const warm = await turn.callTool({
        id: 'warm',
        name: 'mcp__fixture__read_slow',
        arguments: { ms: 0, tag: 'warm' },
      });
      assert.equal(warm.status, 'ok');
      assert.ok(
        callPaths(client, await historyOf(client, turn.turnId)).local.has('warm'),
        'the victim runs read-only calls on the fast path',
      );
      const survivor = await startWorkerProcess(taskQueue, bundleFile, env);
      workers.push(survivor);

      const readOnly = turn.callTool({
        id: 'ro',
        name: 'mcp__fixture__read_slow',
        arguments: { ms: RERUN_MS, tag: 'ro' },
      });
      await waitUntil('the fast call to start', async () => (await executions('read_slow', 'ro')).length === 1);
      // Sent while the fast call holds the victim's workflow task: its command cannot leave the victim.
      const sideEffect = turn.callTool({ id: 'se', name: 'mcp__fixture__slow', arguments: { ms: 0, tag: 'se' } });
      const before = callPaths(client, await historyOf(client, turn.turnId));
      assert.ok(
        !before.regular.some((r) => r.callId === 'ro') && !before.local.has('ro'),
        'the running call is in no event yet: it is a local activity',
      );
      const killedAt = Date.now();
      process.kill(victim.pid, 'SIGKILL');

      const [ro, se] = await Promise.all([readOnly, sideEffect]);
      const recoveredMs = Date.now() - killedAt;
      assert.equal(ro.status, 'ok', `read-only call: ${ro.errorMessage}`);
      assert.equal(textOf(ro.content[0]), `read after ${RERUN_MS} ms`);
      assert.equal(se.status, 'ok', `side-effecting call: ${se.errorMessage}`);
      const later = await turn.callTool({
        id: 'later',
        name: 'mcp__fixture__read_slow',
        arguments: { ms: 0, tag: 'later' },
      });
      assert.equal(later.status, 'ok', later.errorMessage);
      const result = await turn.end();
      assert.equal(result.workerQueue, survivor.workerQueue);

      assert.equal((await executions('slow', 'done')).length, 1, 'a completed side-effecting call never ran again');
      assert.equal(
        (await executions('slow', 'se')).length,
        1,
        'the side-effecting call sent during the fast call ran once',
      );
      assert.equal((await executions('read_slow', 'ro')).length, 2, 'the read-only call ran again on the survivor');
      assert.deepEqual(result.calls.map((c) => [c.id, c.outcome.status]).sort(), [
        ['done', 'ok'],
        ['later', 'ok'],
        ['ro', 'ok'],
        ['se', 'ok'],
        ['warm', 'ok'],
      ]);

      const history = await historyOf(client, turn.turnId);
      const paths = callPaths(client, history);
      // The dead worker is noticed when the workflow task holding the fast call times out, which
      // follows the turn's heartbeat timeout; the survivor's miss then sees that and moves the turn
      // before the call runs again, instead of sending it to the dead worker's queue first.
      const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
      assert.equal(
        Number(started.workflowTaskTimeout!.seconds) * 1000,
        HEARTBEAT_MS,
        "the turn's workflow task timeout follows its heartbeat timeout",
      );
      assert.deepEqual(paths.localFailures.slice(-1), [FailureType.FastPathMiss], 'the survivor missed');
      assert.deepEqual(
        paths.regular.filter((r) => r.callId === 'ro').map((r) => r.queue),
        [survivor.workerQueue],
        "the read-only call never went to the dead worker's queue",
      );
      assert.ok(
        recoveredMs <= HEARTBEAT_MS + 3000 + RERUN_MS,
        `both calls answered ${recoveredMs} ms after SIGKILL: more than the heartbeat timeout + 3 s, plus the ${RERUN_MS} ms the call takes to run again`,
      );
      assert.ok(paths.local.has('later'), 'after the move the survivor holds the servers and takes the fast path');
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: bundleFile }, replayName: 'fast-crash-replay' },
        history,
        turn.turnId,
      );
      process.stderr.write(`worker crash during a fast call: both calls answered ${recoveredMs} ms after SIGKILL\n`);
    } finally {
      await client.close();
    }
  });
});
