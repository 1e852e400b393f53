import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import proto, { type temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { TurnClient } from '../../client/turnClient.js';
import { ActivityName, type CallToolInput } from '../../contract/index.js';
import { decodeHistoryPayloads } from '../../payloads/decodeHistory.js';
import { startDevServer, freePort, type DevServer } from '../../dev/devServer.js';
import { bundleWorkflows } from '../../worker/index.js';
import {
  fixtureServer,
  readLines,
  startWorkerProcess,
  stopWorkerProcess,
  tempDir,
  temporalAddress,
  uniqueQueue,
  waitUntil,
  type WorkerProcess,
} from '../support/harness.js';
import { textOf } from '../support/content.js';

/** One activity of a turn as its history shows it: where it was scheduled, how it started and ended. */
interface ActivityTrace {
  type: string;
  queue: string;
  callId?: string;
  scheduledEventId: number;
  /** The attempt of the Started event, and the identity (its own queue) of the worker that ran it. */
  attempt?: number;
  identity?: string;
  timeoutType?: temporal.api.enums.v1.TimeoutType;
  retryState?: temporal.api.enums.v1.RetryState;
  /** The event that closed the activity, if it closed. */
  closedEventId?: number;
}

/** Every activity of a turn, in the order it was scheduled, read from its history alone. */
async function activityTraces(client: TurnClient, turnId: string): Promise<ActivityTrace[]> {
  const converter = client.client.options.loadedDataConverter;
  const history = await client.client.workflow.getHandle(turnId).fetchHistory();
  await decodeHistoryPayloads(history, { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage });
  const byScheduled = new Map<number, ActivityTrace>();
  for (const e of history.events ?? []) {
    const eventId = Number(e.eventId);
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const type = scheduled.activityType?.name ?? '';
      const input =
        type === ActivityName.callTool && scheduled.input?.payloads?.[0]
          ? converter.payloadConverter.fromPayload<CallToolInput>(scheduled.input.payloads[0])
          : undefined;
      byScheduled.set(eventId, {
        type,
        queue: scheduled.taskQueue?.name ?? '',
        callId: input?.callId,
        scheduledEventId: eventId,
      });
      continue;
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const trace = byScheduled.get(Number(started.scheduledEventId))!;
      trace.attempt = started.attempt ?? undefined;
      trace.identity = started.identity ?? undefined;
      continue;
    }
    const closed =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskCanceledEventAttributes;
    if (closed) byScheduled.get(Number(closed.scheduledEventId))!.closedEventId = eventId;
    const timedOut = e.activityTaskTimedOutEventAttributes;
    if (timedOut) {
      const trace = byScheduled.get(Number(timedOut.scheduledEventId))!;
      trace.closedEventId = eventId;
      trace.timeoutType = timedOut.failure?.timeoutFailureInfo?.timeoutType ?? undefined;
      trace.retryState = timedOut.retryState ?? undefined;
    }
  }
  return [...byScheduled.values()];
}

describe('a worker SIGKILLed in the middle of a turn', () => {
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
    // Servers of the killed worker lose their parent; end them by the PIDs the status reported.
    for (const pid of serverPids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  });

  test('completed calls never rerun; a read-only call is retried elsewhere; a side-effecting one is "unknown"; new calls fail over', async () => {
    const execLog = join(dir, 'executions.log');
    const taskQueue = uniqueQueue('crash');
    // The regular path's failover (heartbeat timeout, then another worker): with the fast path on, the
    // 6 s read-only call would first run as a local activity on whichever worker runs the workflow
    // task, and fall back when it outlives that bound. fastPath.test.ts kills a worker during a fast call.
    const env = {
      TEMPORAL_ADDRESS: temporalAddress(),
      FIXTURE_LOG: execLog,
      DMCP_NO_USER_CONFIG: '1',
      DMCP_FAST_PATH: 'false',
    };
    workers.push(
      await startWorkerProcess(taskQueue, bundleFile, env),
      await startWorkerProcess(taskQueue, bundleFile, env),
    );
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new TurnClient({ client: new Client({ connection }), taskQueue });
    const started = Date.now();
    try {
      const turn = await client.startTurn({
        sessionId: `crash-${Date.now()}`,
        workspace: dir,
        servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
        limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 },
      });
      for (const s of turn.status.servers) if (s.pid) serverPids.add(s.pid);
      const victim = workers.find((w) => w.workerQueue === turn.workerQueue);
      const survivor = workers.find((w) => w.workerQueue !== turn.workerQueue)!;
      assert.ok(victim, 'the turn is pinned to one of our two workers');

      const done = await turn.callTool({
        id: 'done',
        name: 'mcp__fixture__echo',
        arguments: { text: 'before the crash' },
      });
      assert.equal(done.status, 'ok');

      const executions = async (tool: string, tag?: string) =>
        (await readLines(execLog))
          .map((l) => JSON.parse(l) as { tool: string; args: { tag?: string; text?: string } })
          .filter((e) => e.tool === tool && (tag === undefined || e.args.tag === tag));
      const readOnly = turn.callTool({ id: 'ro', name: 'mcp__fixture__read_slow', arguments: { ms: 6000, tag: 'ro' } });
      const sideEffect = turn.callTool({ id: 'se', name: 'mcp__fixture__slow', arguments: { ms: 6000, tag: 'se' } });
      await waitUntil(
        'both calls to start',
        async () => (await executions('read_slow', 'ro')).length === 1 && (await executions('slow', 'se')).length === 1,
      );

      const killedAt = Date.now();
      process.kill(victim.pid, 'SIGKILL');

      const [ro, se] = await Promise.all([readOnly, sideEffect]);
      assert.equal(ro.status, 'ok', `read-only call: ${ro.errorMessage}`);
      assert.equal(textOf(ro.content[0]), 'read after 6000 ms');
      assert.equal((await executions('read_slow', 'ro')).length, 2, 'the read-only call ran again on the survivor');
      assert.equal(se.status, 'error');
      assert.equal(se.errorKind, 'unknown_result');
      assert.match(se.errorMessage ?? '', /may have had an effect/);
      assert.equal((await executions('slow', 'se')).length, 1, 'the side-effecting call ran at most once');

      const later = await turn.callTool({
        id: 'later',
        name: 'mcp__fixture__echo',
        arguments: { text: 'after the crash' },
      });
      assert.equal(later.status, 'ok', `a new call: ${later.errorMessage}`);
      const result = await turn.end();
      const recoveredMs = Date.now() - killedAt;

      assert.equal(result.workerQueue, survivor.workerQueue, 'the turn finished on the surviving worker');
      assert.equal(
        (await executions('echo')).filter((e) => e.args.text === 'before the crash').length,
        1,
        'completed calls never ran again',
      );
      const transcript = await client.transcript(turn.turnId);
      const byId = Object.fromEntries(transcript.calls.map((c) => [c.id, c.outcome?.status]));
      assert.deepEqual(byId, { done: 'ok', ro: 'ok', se: 'error', later: 'ok' });
      assert.ok(
        transcript.calls.find((c) => c.id === 'se')!.failures.some((f) => /heartbeat/i.test(f)),
        'history shows the heartbeat timeout',
      );

      // Where each activity went, from history alone: once the heartbeat timed out, nothing more was
      // scheduled on the dead worker's queue, and the read-only call moved to the survivor directly.
      const { TimeoutType, RetryState } = proto.temporal.api.enums.v1;
      const traces = await activityTraces(client, turn.turnId);
      const ro1 = traces.filter((t) => t.callId === 'ro');
      assert.deepEqual(
        ro1.map((t) => t.queue),
        [victim.workerQueue, survivor.workerQueue],
        'the read-only call: scheduled once on the dead worker, then once on the survivor',
      );
      const [lost, retried] = ro1 as [ActivityTrace, ActivityTrace];
      assert.equal(
        lost.timeoutType,
        TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
        'the first attempt ended with the heartbeat timeout',
      );
      assert.equal(
        lost.retryState,
        RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE,
        'Temporal did not retry it on the dead queue',
      );
      assert.equal(lost.attempt, 1, 'one attempt on the dead worker');
      assert.equal(
        retried.identity,
        survivor.workerQueue,
        "the retry ran on the survivor (a worker's identity is its own queue)",
      );
      assert.equal(retried.attempt, 1);
      const afterLoss = traces.filter((t) => t.scheduledEventId > lost.closedEventId!);
      assert.deepEqual(
        afterLoss.filter((t) => t.queue === victim.workerQueue),
        [],
        "nothing scheduled on the dead worker's queue after its heartbeat timed out",
      );
      assert.ok(
        afterLoss.some(
          (t) =>
            t.type === ActivityName.reconcileServers &&
            t.queue === taskQueue &&
            t.scheduledEventId < retried.scheduledEventId,
        ),
        'reconciled on the shared queue before the retry',
      );
      assert.deepEqual(
        traces.filter((t) => t.timeoutType === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START),
        [],
        'no schedule-to-start timeout: no call waited for the dead worker',
      );
      const se1 = traces.filter((t) => t.callId === 'se');
      assert.equal(se1.length, 1, 'the side-effecting call was scheduled once');
      // The move to another worker is deterministic: the turn replays from its history.
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: bundleFile }, replayName: 'crash-replay' },
        await client.client.workflow.getHandle(turn.turnId).fetchHistory(),
        turn.turnId,
      );
      process.stderr.write(
        `worker crash: turn recovered ${recoveredMs} ms after SIGKILL (total ${Date.now() - started} ms)\n`,
      );
    } finally {
      await client.close();
    }
  });
});

describe('the Temporal dev server restarts in the middle of a turn', () => {
  let server: DevServer | undefined;
  let worker: WorkerProcess | undefined;
  after(async () => {
    await stopWorkerProcess(worker);
    await server?.stop();
  });

  test('the turn completes on the same database', async () => {
    const dir = await tempDir();
    const dbFile = join(dir, 'temporal.db');
    const port = await freePort();
    server = await startDevServer({ dbFile, port, headless: true });
    const bundleFile = join(dir, 'workflows.js');
    await writeFile(bundleFile, (await bundleWorkflows()).code);
    const taskQueue = uniqueQueue('restart');
    worker = await startWorkerProcess(taskQueue, bundleFile, {
      TEMPORAL_ADDRESS: server.address,
      DMCP_NO_USER_CONFIG: '1',
    });
    const connect = async () =>
      new TurnClient({
        client: new Client({ connection: await Connection.connect({ address: server!.address }) }),
        taskQueue,
      });
    let client = await connect();
    const turn = await client.startTurn({
      sessionId: `restart-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
    });
    assert.equal(
      (await turn.callTool({ id: 'a', name: 'mcp__fixture__echo', arguments: { text: 'before' } })).status,
      'ok',
    );

    await server.stop();
    server = await startDevServer({ dbFile, port, headless: true });
    await client.close();
    client = await connect();
    const handle = client.client.workflow.getHandle(turn.turnId);
    const { callToolUpdate, endTurnUpdate } = await import('../../workflows/index.js');
    const after = await handle.executeUpdate(callToolUpdate, {
      args: [{ id: 'b', name: 'mcp__fixture__echo', arguments: { text: 'after' } }],
      updateId: 'b',
    });
    assert.equal(after.status, 'ok', after.errorMessage);
    await handle.executeUpdate(endTurnUpdate, { updateId: 'end' });
    const result = await handle.result();
    assert.deepEqual(
      result.calls.map((c: { id: string }) => c.id),
      ['a', 'b'],
    );
    await client.close();
  });
});
