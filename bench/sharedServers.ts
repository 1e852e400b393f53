/**
 * Shared calls to a stateless (2026-07-28) remote server against calls pinned to the session's
 * holder, side by side in one run. One modern MCP server over Streamable HTTP
 * (test/fixtures/modernServer.ts, `--legacy reject` so only the 2026-07-28 era is served), named in
 * the workers' trusted config dir (`"type": "http"`, `"protocol": "2026-07-28"`, `"retry": "safe"`);
 * three durable-mcp worker processes on one task queue, all with `DMCP_FAST_PATH=false` and
 * `DMCP_EAGER_CALLS=false` so every call is a regular `callTool` activity; in the pinned mode they
 * also have `DMCP_SHARED_CALLS=false` (every call runs on the worker holding the session's
 * servers), in the shared mode the default (any worker may run a call over its own connection to
 * the server). A round: three fresh workers of one mode on a fresh task queue, BENCH_SHARED_TURNS
 * interactive turns (each its own session) opened at once, a few warm-up calls each, then every
 * turn makes BENCH_SHARED_CALLS sequential `echo` calls, all turns at once; calls/s is all calls over
 * the wall time to the last one, latency is each `Turn.callTool` as the client sees it. Which worker
 * ran each call, which held each session, which queue each call was scheduled on and where the
 * workflow tasks ran are read from the turns' histories (worker identities). Modes alternate
 * (pinned, shared, shared, pinned, ...: the first of each pair swaps every pair, so a drift of the
 * machine falls on both).
 *
 * Run on demand: `npm run build:bench && node dist/bench/sharedServers.js` (TEMPORAL_ADDRESS: an
 * existing server, else an embedded dev server of its own). Knobs: BENCH_SHARED_ROUNDS (rounds per
 * mode, default 2), BENCH_SHARED_CALLS (calls per turn and round, default 100), BENCH_SHARED_TURNS
 * (default 16), BENCH_SHARED_WORKERS (default 3), BENCH_SHARED_WARMUP (warm-up calls per turn,
 * default 3), BENCH_SHARED_TIMEOUT_S (the whole run's bound, default 900), BENCH_SHARED_WRITE=0
 * (print only; default: also write its section of bench/results/sharedServers.md), BENCH_VERBOSE=1
 * (the helper processes' stderr).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { TurnClient, type Turn } from '../client/turnClient.js';
import { tempDir } from '../test/support/harness.js';
import { cpuMs, killStarted, runBench, startNode, stopProcess, type Started } from './procs.js';
import {
  benchQueue,
  connectClient,
  startDurableWorker,
  startTemporal,
  writeDurableBundle,
  type DurableWorker,
  type Temporal,
} from './setup.js';
import { cpuShare, machineLine, percentile, writeSection } from './support.js';

const env = process.env;
const ROUNDS = Number(env.BENCH_SHARED_ROUNDS ?? 2);
const CALLS = Number(env.BENCH_SHARED_CALLS ?? 100);
const TURNS = Number(env.BENCH_SHARED_TURNS ?? 16);
const WORKERS = Number(env.BENCH_SHARED_WORKERS ?? 3);
const WARMUP = Number(env.BENCH_SHARED_WARMUP ?? 3);
const TIMEOUT_S = Number(env.BENCH_SHARED_TIMEOUT_S ?? 900);
const WRITE = env.BENCH_SHARED_WRITE !== '0';
const TITLE = `Calls to a stateless remote server from ${WORKERS} workers: shared against pinned`;
const SERVER = 'modern';
const TOOL = `mcp__${SERVER}__echo`;
const modernFixture = fileURLToPath(new URL('../test/fixtures/modernServer.js', import.meta.url));

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

type Mode = 'pinned' | 'shared';

const MODE_ENV: Record<Mode, NodeJS.ProcessEnv> = {
  // Every call to the holder's queue, as before the feature.
  pinned: { DMCP_SHARED_CALLS: 'false' },
  // The default.
  shared: {},
};

interface Round {
  mode: Mode;
  /** 1-based, per mode. */
  n: number;
  calls: number;
  wallMs: number;
  rate: number;
  latencies: number[];
  /** CPU ms of the workers (together) and of the Temporal server (when this run knows its PID) over the timed calls. */
  workerCpuMs: number;
  temporalCpuMs?: number;
  /** Sessions held by each worker (by the worker's index). */
  holders: number[];
  /** `callTool*` activities of the timed and warm-up calls completed by each worker; `other`: a worker not of this round. */
  ran: number[];
  other: number;
  /** Of those, run by a worker other than the session's holder. */
  offHolder: number;
  /** `callTool*` activities that failed (a refusal by a worker that could not take the call is one). */
  failed: number;
  /** `callTool*` activities scheduled on the shared task queue (any worker may take them), and in all. */
  onSharedQueue: number;
  scheduled: number;
  /** Workflow tasks of the turns completed by a worker other than the session's holder, and in all. */
  wftOffHolder: number;
  wfts: number;
  activityTypes: Set<string>;
}

function eventsOf(history: temporal.api.history.v1.IHistory): temporal.api.history.v1.IHistoryEvent[] {
  return history.events ?? [];
}

/**
 * Every run of a turn (it continues as new after many calls), newest first: each run's first event
 * names the run it continued.
 */
async function turnHistories(client: Client, turnId: string): Promise<temporal.api.history.v1.IHistoryEvent[][]> {
  const runs: temporal.api.history.v1.IHistoryEvent[][] = [];
  let runId: string | undefined;
  for (let i = 0; i < 20; i += 1) {
    const events = eventsOf(await client.workflow.getHandle(turnId, runId).fetchHistory());
    runs.push(events);
    const previous = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!previous) break;
    runId = previous;
  }
  return runs;
}

/** The worker (index in `workers`) whose identity this is: the plugin names a worker by its own queue; the SDK by `pid@host`. */
function workerIndex(workers: DurableWorker[], identity: string | null | undefined): number {
  if (!identity) return -1;
  return workers.findIndex(
    (w) => identity === w.info.workerQueue || identity.includes(w.info.workerQueue) || identity.startsWith(`${w.pid}@`),
  );
}

/** Where each turn's calls ran, from history: counts into `round`. */
async function spread(
  client: Client,
  taskQueue: string,
  workers: DurableWorker[],
  turns: Turn[],
  round: Round,
): Promise<void> {
  for (const turn of turns) {
    const holder = workers.findIndex((w) => w.info.workerQueue === turn.workerQueue);
    if (holder >= 0) round.holders[holder]! += 1;
    for (const events of await turnHistories(client, turn.turnId)) {
      const types = new Map<string, string>();
      for (const e of events) {
        const wft = e.workflowTaskCompletedEventAttributes;
        if (wft) {
          round.wfts += 1;
          if (workerIndex(workers, wft.identity) !== holder) round.wftOffHolder += 1;
        }
        const scheduled = e.activityTaskScheduledEventAttributes;
        if (scheduled) {
          const type = scheduled.activityType?.name ?? '?';
          types.set(String(e.eventId), type);
          if (/^callTool/i.test(type)) {
            round.scheduled += 1;
            if (scheduled.taskQueue?.name === taskQueue) round.onSharedQueue += 1;
          }
        }
        const done = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
        if (!done) continue;
        const type = types.get(String(done.scheduledEventId)) ?? '?';
        if (!/^callTool/i.test(type)) continue;
        round.activityTypes.add(type);
        // A failed attempt: a worker's refusal of a call it cannot take, or a call that failed.
        if (e.activityTaskFailedEventAttributes) {
          round.failed += 1;
          continue;
        }
        const by = workerIndex(workers, done.identity);
        if (by < 0) round.other += 1;
        else round.ran[by]! += 1;
        if (by !== holder) round.offHolder += 1;
      }
    }
  }
}

async function runRound(
  client: Client,
  temporalServer: Temporal,
  ownTemporalPid: number | undefined,
  bundle: string,
  workerEnv: NodeJS.ProcessEnv,
  dir: string,
  mode: Mode,
  n: number,
): Promise<Round> {
  const taskQueue = benchQueue(`shared-${mode}`);
  log(`${mode} round ${n}: starting ${WORKERS} workers on ${taskQueue}`);
  const workers: DurableWorker[] = [];
  const turns: Turn[] = [];
  const round: Round = {
    mode,
    n,
    calls: 0,
    wallMs: 0,
    rate: 0,
    latencies: [],
    workerCpuMs: 0,
    holders: Array.from({ length: WORKERS }, () => 0),
    ran: Array.from({ length: WORKERS }, () => 0),
    other: 0,
    offHolder: 0,
    failed: 0,
    onSharedQueue: 0,
    scheduled: 0,
    wftOffHolder: 0,
    wfts: 0,
    activityTypes: new Set(),
  };
  try {
    workers.push(
      ...(await Promise.all(
        Array.from({ length: WORKERS }, () =>
          startDurableWorker(temporalServer.address, taskQueue, bundle, { env: { ...workerEnv, ...MODE_ENV[mode] } }),
        ),
      )),
    );
    const turnClient = new TurnClient({ client, taskQueue });
    const tag = randomBytes(3).toString('hex');
    turns.push(
      ...(await Promise.all(
        Array.from({ length: TURNS }, (_, k) =>
          turnClient.startTurn({ sessionId: `bench-shared-${mode}-${n}-${k}-${tag}`, workspace: dir }),
        ),
      )),
    );
    for (const turn of turns) {
      const s = turn.status.servers.find((x) => x.name === SERVER);
      if (s?.state !== 'ready' || s.era !== 'modern')
        throw new Error(`${turn.turnId}: server ${SERVER} is not ready on the modern era: ${JSON.stringify(s)}`);
    }
    const call = async (turn: Turn, id: string): Promise<number> => {
      const t0 = performance.now();
      const outcome = await turn.callTool({ id, name: TOOL, arguments: { text: id } });
      const ms = performance.now() - t0;
      if (outcome.status !== 'ok' || outcome.isError)
        throw new Error(`${turn.turnId}: ${id}: ${outcome.errorKind ?? 'isError'}: ${outcome.errorMessage ?? ''}`);
      return ms;
    };
    await Promise.all(
      turns.map(async (turn) => {
        for (let i = 0; i < WARMUP; i += 1) await call(turn, `warm-${i}`);
      }),
    );
    const cpu0 = workers.reduce((sum, w) => sum + cpuMs(w.pid), 0);
    const t0cpu = ownTemporalPid ? cpuMs(ownTemporalPid) : undefined;
    const start = performance.now();
    await Promise.all(
      turns.map(async (turn) => {
        for (let i = 0; i < CALLS; i += 1) round.latencies.push(await call(turn, `c-${i}`));
      }),
    );
    round.wallMs = performance.now() - start;
    round.workerCpuMs = workers.reduce((sum, w) => sum + cpuMs(w.pid), 0) - cpu0;
    if (ownTemporalPid && t0cpu !== undefined) round.temporalCpuMs = cpuMs(ownTemporalPid) - t0cpu;
    round.calls = TURNS * CALLS;
    round.rate = (round.calls * 1000) / round.wallMs;
    await Promise.all(turns.map((t) => t.end({ endSession: true })));
    await spread(client, taskQueue, workers, turns, round);
    return round;
  } finally {
    await Promise.all(workers.map((w) => stopProcess(w)));
  }
}

function roundRow(r: Round): string {
  const cpu = (ms: number | undefined) => (ms === undefined ? '-' : fmt(ms / r.calls, 2));
  const total = r.ran.reduce((a, b) => a + b, 0) + r.other;
  return `| ${r.mode} ${r.n} | ${fmt(r.rate)} | ${fmt(percentile(r.latencies, 50))} | ${fmt(percentile(r.latencies, 99))} | ${cpu(r.workerCpuMs)} | ${cpu(r.temporalCpuMs)} | ${r.holders.join(' / ')} | ${r.ran.join(' / ')}${r.other ? ` (+${r.other} elsewhere)` : ''} | ${r.scheduled ? fmt((100 * r.onSharedQueue) / r.scheduled) : 'n/a'} | ${total ? fmt((100 * r.offHolder) / total) : 'n/a'} | ${r.failed} | ${r.wfts ? fmt((100 * r.wftOffHolder) / r.wfts) : 'n/a'} |`;
}

async function main(): Promise<void> {
  const started = Date.now();
  const share = cpuShare();
  const dir = await tempDir('dmcp-bench-shared-');
  // startDevServer bounds its own start (60 s).
  const temporalServer = await startTemporal();
  // Only a server this run started is ours to stop (bench/all.ts shares its own).
  const ownTemporalPid = env.TEMPORAL_ADDRESS ? undefined : temporalServer.pid;
  const watchdog = setTimeout(() => {
    log(`not done within BENCH_SHARED_TIMEOUT_S=${TIMEOUT_S} s: stopping every process it started`);
    killStarted();
    if (ownTemporalPid) {
      try {
        process.kill(ownTemporalPid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    process.exit(1);
  }, TIMEOUT_S * 1000);
  let client: Client | undefined;
  let fixture: Started<{ url: string }> | undefined;
  const rounds: Round[] = [];
  try {
    client = await connectClient(temporalServer.address);
    fixture = await startNode<{ url: string }>(modernFixture, ['http', '--legacy', 'reject'], {
      env: { PATH: env.PATH },
    });
    log(
      `Temporal at ${temporalServer.address}${ownTemporalPid ? ` (this run's dev server, pid ${ownTemporalPid})` : ''}; modern server at ${fixture.info.url} (pid ${fixture.pid})`,
    );
    const configDir = join(dir, 'config');
    await mkdir(configDir, { recursive: true });
    await writeFile(
      join(configDir, 'mcp.json'),
      JSON.stringify({
        mcpServers: { [SERVER]: { type: 'http', url: fixture.info.url, protocol: '2026-07-28', retry: 'safe' } },
      }),
    );
    const bundle = await writeDurableBundle(dir);
    const workerEnv: NodeJS.ProcessEnv = {
      // The config-dir layer is this run's, and the only one.
      DMCP_NO_USER_CONFIG: '0',
      DMCP_CONFIG_DIR: configDir,
      DMCP_DATA_DIR: join(dir, 'data'),
      DMCP_WARM_SPARES: '0',
      // Every call a regular activity, in both modes.
      DMCP_FAST_PATH: 'false',
      DMCP_EAGER_CALLS: 'false',
    };
    for (let pair = 0; pair < ROUNDS; pair += 1) {
      const order: Mode[] = pair % 2 === 0 ? ['pinned', 'shared'] : ['shared', 'pinned'];
      for (const mode of order) {
        const r = await runRound(client, temporalServer, ownTemporalPid, bundle, workerEnv, dir, mode, pair + 1);
        rounds.push(r);
        log(
          `${mode} round ${pair + 1}: ${fmt(r.rate)} calls/s, p50 ${fmt(percentile(r.latencies, 50))} ms, p99 ${fmt(percentile(r.latencies, 99))} ms; holders ${r.holders.join('/')}, calls run ${r.ran.join('/')}, on the shared queue ${r.onSharedQueue}/${r.scheduled}, off the holder ${r.offHolder}, failed ${r.failed}, workflow tasks off the holder ${r.wftOffHolder}/${r.wfts}; activities ${[...r.activityTypes].join(', ')}`,
        );
      }
    }
    const fixtureCpuMs = cpuMs(fixture.pid);

    const of = (mode: Mode) => rounds.filter((r) => r.mode === mode).sort((a, b) => a.n - b.n);
    const pinned = of('pinned');
    const shared = of('shared');
    const all = (rs: Round[]) => rs.flatMap((r) => r.latencies);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const pairRatios = pinned.map((p, i) => shared[i]!.rate / p.rate);
    const ratioOf = (f: (rs: Round[]) => number) => fmt(f(shared) / f(pinned), 2);
    const modeRow = (mode: Mode, rs: Round[]) =>
      `| ${mode} | ${rs.map((r) => fmt(r.rate)).join(', ')} | ${fmt(mean(rs.map((r) => r.rate)))} | ${fmt(percentile(all(rs), 50))} | ${fmt(percentile(all(rs), 99))} |`;
    const workerLabels = Array.from({ length: WORKERS }, (_, i) => `w${i + 1}`).join(' / ');
    const types = [...new Set(rounds.flatMap((r) => [...r.activityTypes]))];
    const body = [
      `Command: \`npm run build:bench && node dist/bench/sharedServers.js\` (BENCH_SHARED_ROUNDS=${ROUNDS}, BENCH_SHARED_CALLS=${CALLS}, BENCH_SHARED_TURNS=${TURNS}, BENCH_SHARED_WORKERS=${WORKERS}). Machine: ${await machineLine()}. Took ${fmt((Date.now() - started) / 1000, 0)} s; ${share()}.`,
      '',
      `One 2026-07-28 MCP server over Streamable HTTP on 127.0.0.1 (test/fixtures/modernServer.ts, 2025-era traffic refused), named in the workers' config dir as \`"type": "http"\`, \`"protocol": "2026-07-28"\`, \`"retry": "safe"\`. A round: ${WORKERS} fresh durable-mcp worker processes on one task queue, all with \`DMCP_FAST_PATH=false\` and \`DMCP_EAGER_CALLS=false\` (every call a regular activity); **pinned**: also \`DMCP_SHARED_CALLS=false\`, every call on the worker holding the session; **shared**: the default. ${TURNS} interactive turns (each its own session) opened at once, ${WARMUP} warm-up calls each, then ${CALLS} sequential \`echo\` calls per turn, all turns at once: calls/s = ${TURNS * CALLS} calls over the wall time to the last one; latency is \`Turn.callTool\` as the client sees it. Modes alternate, the first of each pair swapped every pair. CPU from /proc over the timed calls (utime + stime). "Holders": sessions whose servers each worker held; "calls run": \`callTool\` activities (warm-up included) each worker completed, from history (the worker identity of each completion); "on the shared queue": \`callTool\` activities scheduled on the task queue all workers poll rather than on the holder's own queue; "off the holder": those a worker other than the session's holder ran; "failed attempts": \`callTool\` activities that failed (a worker refusing a shared call it cannot take is one; the call then goes to the holder); "workflow tasks off the holder": the turns' workflow tasks a worker other than the session's holder completed (an activity on the shared queue may be handed back eagerly to the worker that completed the workflow task that scheduled it).`,
      '',
      `| round | calls/s | p50 (ms) | p99 (ms) | workers CPU/call (ms) | Temporal CPU/call (ms) | holders (${workerLabels}) | calls run (${workerLabels}) | on the shared queue (%) | off the holder (%) | failed attempts | workflow tasks off the holder (%) |`,
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
      ...rounds.map(roundRow),
      '',
      '| mode | calls/s per round | mean calls/s | p50 over rounds (ms) | p99 over rounds (ms) |',
      '|---|---|---|---|---|',
      modeRow('pinned', pinned),
      modeRow('shared', shared),
      '',
      `Shared / pinned: calls/s **${ratioOf((rs) => mean(rs.map((r) => r.rate)))}x** (per pair of rounds: ${pairRatios.map((x) => `${fmt(x, 2)}x`).join(', ')}); p50 latency ${ratioOf((rs) => percentile(all(rs), 50))}x; p99 ${ratioOf((rs) => percentile(all(rs), 99))}x. Activity types counted: ${types.join(', ') || 'none'}. The MCP server used ${fmt(fixtureCpuMs / 1000)} s of CPU in all.`,
    ].join('\n');
    process.stdout.write(`${body}\n`);
    if (WRITE) await writeSection('sharedServers', TITLE, body);
    log(`done in ${fmt((Date.now() - started) / 1000, 0)} s`);
  } finally {
    clearTimeout(watchdog);
    await stopProcess(fixture);
    await client?.connection.close().catch(() => undefined);
    await temporalServer.stop().catch(() => undefined);
    killStarted();
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

runBench(main);
