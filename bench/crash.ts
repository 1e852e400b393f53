/**
 * Recovery after a worker crash: two durable-mcp worker processes, a turn pinned to one of them, a
 * read-only call (fixture `read_slow`, 2 s) in flight when that worker is SIGKILLed. Measures,
 * from the kill: the call's outcome (its heartbeat times out, the turn reconciles on the shared
 * queue and the call runs again on the surviving worker), a new call, and the end of the turn.
 * With the default limits and with 3 s heartbeat / schedule-to-start limits, each several times
 * (BENCH_CRASH_TRIALS, default 3): whether the turn's workflow was also cached on the killed worker
 * decides whether a workflow task first waits out the dead worker's sticky queue, so each trial
 * says which it was. BENCH_ALT_WORKER=<other build>/dist/test/fixtures/workerProcess.js (label:
 * BENCH_ALT_LABEL) runs the same trials with another build's workers, side by side.
 * Run on demand: `npm run build:bench && node dist/bench/crash.js`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { TurnLimits } from '../contract/index.js';
import { TurnClient } from '../client/turnClient.js';
import { tempDir } from '../test/support/harness.js';
import { echoFixture, sleep, runBench, stopProcess } from './procs.js';
import {
  benchQueue,
  connectClient,
  endBench,
  startDurableWorker,
  startTemporal,
  writeDurableBundle,
  type DurableWorker,
} from './setup.js';
import { machineLine, writeSection } from './support.js';

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

interface Trial {
  /** Seconds from the kill until the in-flight call, a new call and endTurn returned. */
  callS: number;
  nextS: number;
  endS: number;
  outcome: string;
  ok: boolean;
  /** The turn's workflow ran its last task before the kill on the killed worker. */
  workflowOnVictim: boolean;
  stickyS: number;
  /** What happened after the kill, from history: `label +seconds` for each step of the failover. */
  timeline: string;
}

/**
 * Seconds the turn's workflow tasks waited on the killed worker's sticky queue before Temporal gave
 * them to another worker (a workflow task's schedule-to-start timeout), from history.
 */
async function stickyWaitS(client: Client, turnId: string): Promise<number> {
  const events = (await client.workflow.getHandle(turnId).fetchHistory()).events ?? [];
  const ms = (e: (typeof events)[number] | undefined) =>
    e?.eventTime ? Number(e.eventTime.seconds) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6) : 0;
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  let waited = 0;
  for (const e of events) {
    const t = e.workflowTaskTimedOutEventAttributes;
    if (t && t.timeoutType === proto.temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START)
      waited += ms(e) - ms(byId.get(Number(t.scheduledEventId)));
  }
  return waited / 1000;
}

/**
 * The failover step by step, read from the turn's history: seconds after the kill at which the lost
 * call's heartbeat timed out, each workflow task started and completed after that, and each activity
 * scheduled after it started and completed.
 */
async function failoverTimeline(client: Client, turnId: string, killedAt: number): Promise<string> {
  const events = (await client.workflow.getHandle(turnId).fetchHistory()).events ?? [];
  const ms = (e: (typeof events)[number]) =>
    e.eventTime ? Number(e.eventTime.seconds) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6) : 0;
  const scheduled = new Map<number, string>();
  const steps: string[] = [];
  const at = (e: (typeof events)[number]) => ((ms(e) - killedAt) / 1000).toFixed(2);
  for (const e of events) {
    if (ms(e) < killedAt) {
      const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
      if (name) scheduled.set(Number(e.eventId), name);
      continue;
    }
    const a = e.activityTaskScheduledEventAttributes;
    if (a) scheduled.set(Number(e.eventId), a.activityType?.name ?? '?');
    const started = e.activityTaskStartedEventAttributes;
    const completed = e.activityTaskCompletedEventAttributes;
    const timedOut = e.activityTaskTimedOutEventAttributes;
    if (a) steps.push(`${a.activityType?.name} scheduled ${at(e)}`);
    else if (started) steps.push(`${scheduled.get(Number(started.scheduledEventId))} started ${at(e)}`);
    else if (completed) steps.push(`${scheduled.get(Number(completed.scheduledEventId))} completed ${at(e)}`);
    else if (timedOut) steps.push(`${scheduled.get(Number(timedOut.scheduledEventId))} timed out ${at(e)}`);
    else if (e.workflowTaskScheduledEventAttributes) steps.push(`WFT scheduled ${at(e)}`);
    else if (e.workflowTaskStartedEventAttributes) steps.push(`WFT started ${at(e)}`);
    else if (e.workflowTaskCompletedEventAttributes) steps.push(`WFT completed ${at(e)}`);
    else if (e.workflowTaskTimedOutEventAttributes) steps.push(`WFT timed out ${at(e)}`);
  }
  return steps.join(', ');
}

/** The identity (`pid@host`) of the worker that completed the turn's latest workflow task. */
async function lastWorkflowWorker(client: Client, turnId: string): Promise<string | undefined> {
  const history = await client.workflow.getHandle(turnId).fetchHistory();
  const completed = (history.events ?? []).filter((e) => e.workflowTaskCompletedEventAttributes);
  return completed[completed.length - 1]?.workflowTaskCompletedEventAttributes?.identity ?? undefined;
}

async function trial(
  client: Client,
  address: string,
  dir: string,
  bundle: string,
  script: string | undefined,
  limits: TurnLimits | undefined,
  n: number,
  serverGroups: Set<number>,
): Promise<Trial> {
  const execLog = join(dir, `exec-${n}.log`);
  const taskQueue = benchQueue('crash');
  const env = { FIXTURE_LOG: execLog };
  const workers: DurableWorker[] = await Promise.all(
    [0, 1].map(() => startDurableWorker(address, taskQueue, bundle, { env, ...(script ? { script } : {}) })),
  );
  try {
    const turns = new TurnClient({ client, taskQueue });
    const turn = await turns.startTurn({
      sessionId: `crash-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${echoFixture}`] },
      ...(limits ? { limits } : {}),
    });
    for (const s of turn.status.servers) if (s.pid) serverGroups.add(s.pid);
    const victim = workers.find((w) => w.info.workerQueue === turn.workerQueue)!;
    const before = await turn.callTool({ id: 'before', name: 'mcp__fixture__echo', arguments: { text: 'before' } });
    if (before.status !== 'ok') throw new Error(`first call failed: ${before.errorMessage}`);
    const inFlight = turn.callTool({ id: 'ro', name: 'mcp__fixture__read_slow', arguments: { ms: 2000, tag: 'ro' } });
    const deadline = Date.now() + 10_000;
    while (!(await readFile(execLog, 'utf8').catch(() => '')).includes('"tag":"ro"')) {
      if (Date.now() > deadline) throw new Error('the read_slow call did not start');
      await sleep(20);
    }
    await sleep(200);
    const workflowOnVictim = (await lastWorkflowWorker(client, turn.turnId))?.startsWith(`${victim.pid}@`) === true;
    const killedAt = Date.now();
    process.kill(victim.pid, 'SIGKILL');
    const ro = await inFlight;
    const timeline = await failoverTimeline(client, turn.turnId, killedAt);
    const callS = (Date.now() - killedAt) / 1000;
    const next = await turn.callTool({ id: 'after', name: 'mcp__fixture__echo', arguments: { text: 'after' } });
    const nextS = (Date.now() - killedAt) / 1000;
    const result = await turn.end();
    const endS = (Date.now() - killedAt) / 1000;
    const outcome = ro.status === 'ok' ? `ok, attempt ${ro.attempts}` : `${ro.status}: ${ro.errorKind}`;
    return {
      callS,
      nextS,
      endS,
      outcome,
      workflowOnVictim,
      stickyS: await stickyWaitS(client, turn.turnId),
      timeline,
      ok: ro.status === 'ok' && next.status === 'ok' && result.workerQueue !== victim.info.workerQueue,
    };
  } finally {
    await Promise.all(workers.map((w) => stopProcess(w)));
  }
}

async function main(): Promise<void> {
  const trials = Number(process.env.BENCH_CRASH_TRIALS ?? 3);
  const builds: [string, string | undefined][] = [['this build', undefined]];
  if (process.env.BENCH_ALT_WORKER)
    builds.push([process.env.BENCH_ALT_LABEL ?? process.env.BENCH_ALT_WORKER, process.env.BENCH_ALT_WORKER]);
  const dir = await tempDir('dmcp-crash-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  const bundle = await writeDurableBundle(dir);
  const rows: string[] = [];
  const timelines: string[] = [];
  const serverGroups = new Set<number>();
  let n = 0;
  try {
    for (const [label, limits, heartbeatMs] of [
      ['defaults (heartbeat 10 s, schedule-to-start 10 s)', undefined, 10_000],
      ['heartbeat 3 s, schedule-to-start 3 s', { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 }, 3000],
    ] as [string, TurnLimits | undefined, number][]) {
      const goalS = heartbeatMs / 1000 + 3;
      for (const [build, script] of builds) {
        for (let i = 0; i < trials; i += 1) {
          const t = await trial(client, temporal.address, dir, bundle, script, limits, (n += 1), serverGroups);
          log(
            `${build}, ${label}: in-flight call ${t.callS.toFixed(1)} s (${t.outcome}), workflow on the killed worker: ${t.workflowOnVictim} (sticky wait ${t.stickyS} s)`,
          );
          log(`  after the kill (s): ${t.timeline}`);
          timelines.push(`- ${build}, ${label}, trial ${i + 1}: ${t.timeline}`);
          rows.push(
            `| ${build} | ${label} | ${t.workflowOnVictim ? `yes (${t.stickyS.toFixed(1)})` : 'no'} | ${t.callS.toFixed(1)} (${t.outcome}) | ${goalS} s: ${t.callS <= goalS ? 'met' : '**missed**'} | ${t.nextS.toFixed(1)} | ${t.endS.toFixed(1)} | ${t.ok ? 'yes' : 'no'} |`,
          );
        }
      }
    }
    const body = [
      `Command: \`npm run build:bench && node dist/bench/crash.js\` (part of \`npm run bench\`${builds.length > 1 ? `; here with \`BENCH_ALT_WORKER\` for the "${builds[1]![0]}" rows` : ''}). Machine: ${await machineLine()}.`,
      '',
      `Two durable-mcp worker processes on one task queue; a turn with the fixture server, pinned to one of them; one call done, then a read-only call (\`read_slow\`, 2 s, annotated \`readOnlyHint\`) in flight when its worker is SIGKILLed, ${trials} times per row group. "Workflow there too": the turn's workflow was cached on the killed worker as well (chance decides). Seconds after the kill until:`,
      '',
      '| build | turn limits | workflow there too (sticky wait, s) | in-flight call returns (outcome) | goal: heartbeat + 3 s | a new call returns | turn finished (endTurn) | finished on the survivor |',
      '|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
      "What the in-flight call waits for: the heartbeat timeout (its first attempt is lost; Temporal does not retry a lost heartbeat, so nothing more goes to the dead worker's queue), a reconciliation on the shared queue (the survivor starts the server), then its 2 s on the survivor (attempt 1 there); the new call and endTurn go straight to the survivor. A side-effecting call returns `unknown_result` right after the heartbeat timeout, as before. " +
        "When the turn's workflow was cached on the killed worker too (the worker that takes a turn's first reconcile usually runs its workflow tasks as well), the first workflow task after the timeout waits on the dead worker's sticky queue for the shared worker's `stickyQueueScheduleToStartTimeout` (`DMCP_STICKY_WAIT`" +
        (process.env.DMCP_STICKY_WAIT ? `, here ${process.env.DMCP_STICKY_WAIT}` : ', default 500 ms') +
        '; "sticky wait", read from history).',
      '',
      "Step by step, seconds after the kill, from each turn's history (WFT: a workflow task):",
      '',
      ...timelines,
    ].join('\n');
    process.stdout.write(`${body}\n`);
    await writeSection('crash', 'Recovery after a worker SIGKILL', body);
  } finally {
    // The killed worker's servers lost their parent: end their process groups.
    for (const pid of serverGroups) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await endBench({ client, temporal, dir });
  }
}

runBench(main);
