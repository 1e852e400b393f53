/**
 * Throughput of 16 concurrent interactive turns on the embedded default (the tuned dev server on a
 * SQLite file, as `dev` runs it) against the untuned file-backed dev server (`tuned: false`), side by
 * side in one run, plus bare Temporal (Update -> no-op activity, bench/bareWorkflow.ts) with 16
 * lanes on the same tuned server. Each lane is its own turn (durable: its own session, so its own
 * fixture echo server over stdio; bare: its own workflow) doing a fixed number of sequential calls;
 * every lane starts at once, and calls/s is all calls over the wall time to the last one. Variants
 * run round robin, order rotated every round. CPU per call of the dev server, of the worker and of
 * the worker's MCP server processes comes from /proc.
 *
 * Run on demand: `npm run build:bench && node dist/bench/throughput.js` (part of `npm run bench`;
 * it starts its own servers whatever TEMPORAL_ADDRESS says). Knobs: BENCH_TPUT_LANES (default 16),
 * BENCH_TPUT_CALLS (calls per lane and round, default 20), BENCH_TPUT_ROUNDS (default 3).
 * A/B of a change: BENCH_ALT_WORKER=<other build>/dist/test/fixtures/workerProcess.js (and
 * BENCH_ALT_LABEL) adds that build's worker on the tuned server as one more variant. DMCP_STICKY_WAIT
 * reaches the durable workers.
 */
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { rm } from 'node:fs/promises';
import type { Client, WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { TurnClient, type Turn } from '../client/turnClient.js';
import type { DevServerOptions } from '../dev/devServer.js';
import { tempDir } from '../test/support/harness.js';
import { echoFixture, killStarted, runBench, stopProcess, treeCpuMs } from './procs.js';
import {
  benchQueue,
  connectClient,
  startBareWorker,
  startDurableWorker,
  startTemporal,
  writeDurableBundle,
  type Temporal,
} from './setup.js';
import { machineLine, percentile, writeSection } from './support.js';

const env = process.env;
const LANES = Number(env.BENCH_TPUT_LANES ?? 16);
const CALLS = Number(env.BENCH_TPUT_CALLS ?? 20);
const ROUNDS = Number(env.BENCH_TPUT_ROUNDS ?? 3);
const TITLE = `Throughput of ${LANES} concurrent turns: embedded default vs untuned dev server vs bare`;
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

let seq = 0;
const uniqueId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(seq++).toString(36)}`;
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

type LaneCall = (i: number) => Promise<void>;

interface Variant {
  key: 'tuned' | 'untuned' | 'bare' | 'bareUntuned' | 'alt';
  label: string;
  temporal: Temporal;
  workerPid: number;
  lanes: LaneCall[];
  rates: number[];
  calls: number;
  temporalCpuMs: number;
  workerCpuMs: number;
  serverCpuMs: number;
  /** Durable lanes: the turns, whose histories tell how often a workflow task missed its sticky queue. */
  turns: Turn[];
}

interface ServerSetup {
  temporal: Temporal;
  client: Client;
  stops: (() => Promise<void>)[];
}

async function startServer(key: string, dir: string, options: DevServerOptions): Promise<ServerSetup> {
  const temporal = await startTemporal({ fresh: true, dbFile: join(dir, `${key}.db`), ...options });
  const client = await connectClient(temporal.address);
  return { temporal, client, stops: [() => client.connection.close(), () => temporal.stop()] };
}

/** LANES durable-mcp turns on `server` (a few at a time: each starts its own echo server). */
async function durableLanes(
  server: ServerSetup,
  key: string,
  dir: string,
  bundle: string,
  script?: string,
): Promise<{ pid: number; lanes: LaneCall[]; turns: Turn[] }> {
  const turns = new TurnClient({ client: server.client, taskQueue: benchQueue(`tput-${key}`) });
  const worker = await startDurableWorker(server.temporal.address, turns.taskQueue, bundle, script ? { script } : {});
  server.stops.unshift(() => stopProcess(worker));
  const lanes: LaneCall[] = [];
  const opened: Turn[] = [];
  for (let k = 0; k < LANES; k += 4) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(4, LANES - k) }, async () => {
        const turn: Turn = await turns.startTurn({
          sessionId: uniqueId(`tput-${key}`),
          workspace: dir,
          servers: { inlineSpecs: [`fixture:${process.execPath} ${echoFixture}`] },
        });
        const bad = turn.status.servers.find((s) => s.state !== 'ready');
        if (bad) throw new Error(`${key}: server ${bad.name} is ${bad.state}: ${bad.error}`);
        server.stops.unshift(() => turn.end().then(() => undefined));
        opened.push(turn);
        return async (i: number) => {
          const outcome = await turn.callTool({
            id: uniqueId('d'),
            name: 'mcp__fixture__echo',
            arguments: { text: `call ${i}` },
          });
          if (outcome.status !== 'ok' || outcome.isError)
            throw new Error(`durable-mcp: ${outcome.errorKind}: ${outcome.errorMessage}`);
        };
      }),
    );
    lanes.push(...batch);
  }
  return { pid: worker.pid, lanes, turns: opened };
}

/**
 * Workflow tasks of the turns that timed out on the worker's sticky queue (the worker did not start
 * them within its `stickyQueueScheduleToStartTimeout`, so another poll took them and replayed the
 * turn), and all workflow tasks, from history.
 */
async function stickyTimeouts(turns: Turn[]): Promise<{ timedOut: number; tasks: number }> {
  let timedOut = 0;
  let tasks = 0;
  for (const turn of turns) {
    for (const e of (await turn.handle.fetchHistory()).events ?? []) {
      if (e.workflowTaskScheduledEventAttributes) tasks += 1;
      if (
        e.workflowTaskTimedOutEventAttributes?.timeoutType ===
        proto.temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START
      )
        timedOut += 1;
    }
  }
  return { timedOut, tasks };
}

async function bareLanes(server: ServerSetup): Promise<{ pid: number; lanes: LaneCall[] }> {
  const queue = benchQueue('tput-bare');
  const worker = await startBareWorker(server.temporal.address, queue);
  server.stops.unshift(() => stopProcess(worker));
  const lanes = await Promise.all(
    Array.from({ length: LANES }, async () => {
      const handle: WorkflowHandle = await server.client.workflow.start('bareTurn', {
        taskQueue: queue,
        workflowId: uniqueId('tput-bare'),
        args: [],
      });
      server.stops.unshift(() =>
        handle.executeUpdate('end', { updateId: 'end' }).then(
          () => undefined,
          () => undefined,
        ),
      );
      return async (i: number) => {
        const id = uniqueId('b');
        await handle.executeUpdate('call', { args: [id, { text: `call ${i}` }], updateId: id });
      };
    }),
  );
  return { pid: worker.pid, lanes };
}

/** Every lane does CALLS sequential calls, all lanes at once; CPU of server, worker and its MCP servers over the run. */
async function runRound(v: Variant): Promise<number> {
  const t0cpu = treeCpuMs(v.temporal.pid!).self;
  const w0 = treeCpuMs(v.workerPid);
  const start = performance.now();
  await Promise.all(
    v.lanes.map(async (call) => {
      for (let i = 0; i < CALLS; i++) await call(i);
    }),
  );
  const ms = performance.now() - start;
  const w1 = treeCpuMs(v.workerPid);
  v.temporalCpuMs += treeCpuMs(v.temporal.pid!).self - t0cpu;
  v.workerCpuMs += w1.self - w0.self;
  v.serverCpuMs += Math.max(0, w1.children - w0.children);
  const n = v.lanes.length * CALLS;
  v.calls += n;
  const rate = (n * 1000) / ms;
  v.rates.push(rate);
  return rate;
}

async function main(): Promise<void> {
  const started = Date.now();
  const load0 = loadavg();
  const dir = await tempDir('dmcp-bench-tput-');
  const bundle = await writeDurableBundle(dir);
  const servers: ServerSetup[] = [];
  try {
    log('starting the tuned server (embedded default, SQLite file)');
    const tuned = await startServer('tuned', dir, {});
    servers.push(tuned);
    log('starting the untuned server (tuned: false, SQLite file)');
    const untuned = await startServer('untuned', dir, { tuned: false });
    servers.push(untuned);

    const mk = (
      key: Variant['key'],
      label: string,
      server: ServerSetup,
      l: { pid: number; lanes: LaneCall[]; turns?: Turn[] },
    ): Variant => ({
      key,
      label,
      temporal: server.temporal,
      workerPid: l.pid,
      lanes: l.lanes,
      rates: [],
      calls: 0,
      temporalCpuMs: 0,
      workerCpuMs: 0,
      serverCpuMs: 0,
      turns: l.turns ?? [],
    });
    log(`opening ${LANES} lanes per variant`);
    const variants: Variant[] = [
      mk(
        'tuned',
        'durable-mcp echo, **embedded default** (tuned dev server, SQLite file)',
        tuned,
        await durableLanes(tuned, 'tuned', dir, bundle),
      ),
      mk(
        'untuned',
        'durable-mcp echo, untuned dev server (SQLite file)',
        untuned,
        await durableLanes(untuned, 'untuned', dir, bundle),
      ),
      mk('bare', 'bare Update -> no-op activity, tuned dev server (SQLite file)', tuned, await bareLanes(tuned)),
      // What the untuned server allows Temporal alone: the ceiling of the ratio against it.
      mk(
        'bareUntuned',
        'bare Update -> no-op activity, untuned dev server (SQLite file)',
        untuned,
        await bareLanes(untuned),
      ),
    ];
    const altScript = env.BENCH_ALT_WORKER;
    const altLabel = env.BENCH_ALT_LABEL ?? altScript;
    if (altScript)
      variants.push(
        mk(
          'alt',
          `durable-mcp echo, ${altLabel}'s worker, tuned dev server (SQLite file)`,
          tuned,
          await durableLanes(tuned, 'alt', dir, bundle, altScript),
        ),
      );
    // Warm-up: one call per lane.
    for (const v of variants) await Promise.all(v.lanes.map((call) => call(-1)));

    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < variants.length; k++) {
        const v = variants[(k + r) % variants.length]!;
        const rate = await runRound(v);
        log(`round ${r + 1}/${ROUNDS}: ${v.key}: ${fmt(rate)} calls/s`);
      }
    }
    const load1 = loadavg();
    const sticky = await Promise.all(
      variants.filter((v) => v.turns.length > 0).map(async (v) => ({ v, ...(await stickyTimeouts(v.turns)) })),
    );

    const byKey = (k: Variant['key']) => variants.find((v) => v.key === k)!;
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    // Per round against the other variant of the same round, median over rounds.
    const roundRatio = (a: Variant, b: Variant) =>
      percentile(
        a.rates.map((x, i) => x / b.rates[i]!),
        50,
      );
    const vsUntuned = roundRatio(byKey('tuned'), byKey('untuned'));
    const vsBare = roundRatio(byKey('tuned'), byKey('bare'));
    const bareVsBareUntuned = roundRatio(byKey('bare'), byKey('bareUntuned'));
    const alt = variants.find((v) => v.key === 'alt');
    const altLine = alt
      ? `\nThis build against ${altLabel}'s worker on the same tuned server, per round: ${fmt(roundRatio(byKey('tuned'), alt), 2)}x the calls/s; worker CPU per call ${fmt(byKey('tuned').workerCpuMs / byKey('tuned').calls, 2)} vs ${fmt(alt.workerCpuMs / alt.calls, 2)} ms.\n`
      : '';
    const per = (x: number, v: Variant) => fmt(x / v.calls, 2);
    const rows = variants.map(
      (v) =>
        `| ${v.label} | ${v.rates.map((x) => fmt(x)).join(', ')} | ${fmt(mean(v.rates))} | ${per(v.temporalCpuMs, v)} | ${per(v.workerCpuMs, v)} | ${v.key.startsWith('bare') ? '-' : per(v.serverCpuMs, v)} | ${per(v.temporalCpuMs + v.workerCpuMs + v.serverCpuMs, v)} |`,
    );
    const goal = (ok: boolean) => (ok ? '**met**' : '**missed**');
    const body = `Command: \`npm run build:bench && node dist/bench/throughput.js\` (part of \`npm run bench\`). Machine: ${await machineLine()}. Took ${((Date.now() - started) / 1000).toFixed(0)} s. Load average (1/5/15 min) at the start ${load0.map((x) => x.toFixed(2)).join(' / ')}, at the end ${load1.map((x) => x.toFixed(2)).join(' / ')}.

Two dev servers started by \`startDevServer\`, each on its own SQLite file, running at once: the embedded default (tuned, as \`dev\` and \`run\` start it) and the untuned one (\`tuned: false\`, stock \`temporal server start-dev\` settings). Each has its own durable-mcp worker process and its own bare worker (bench/bareWorkflow.ts). ${LANES} lanes per variant: a durable lane is its own interactive turn (its own session, so its own fixture echo server over stdio), a bare lane its own workflow. A round: every lane does ${CALLS} sequential calls, all lanes at once; calls/s = ${LANES * CALLS} calls over the wall time to the last one. ${ROUNDS} rounds, variants round robin (order rotated every round). CPU per call from /proc (utime + stime): the variant's dev server, its worker process, and the worker's MCP server processes.

| variant | calls/s per round | mean calls/s | dev server CPU/call (ms) | worker CPU/call | its MCP servers CPU/call | total CPU/call |
|---|---|---|---|---|---|---|
${rows.join('\n')}

Workflow tasks that timed out before they started (on the worker's sticky queue: it did not start them within its \`stickyQueueScheduleToStartTimeout\`${env.DMCP_STICKY_WAIT ? `, here DMCP_STICKY_WAIT=${env.DMCP_STICKY_WAIT}` : ''}, so the turn was replayed), over all workflow tasks of the durable turns, warm-up included: ${sticky.map((x) => `${x.v.key} ${x.timedOut} of ${x.tasks}`).join('; ')}.

Ratios are per round (against the other variant of the same round), median over rounds.

| goal | measured | status |
|---|---|---|
| embedded default >= 2x the untuned file-backed dev server, ${LANES} turns | ${fmt(vsUntuned, 2)}x | ${goal(vsUntuned >= 2)} |
| embedded default >= 0.8x bare Update -> activity on the same tuned server, ${LANES} lanes | ${fmt(vsBare, 2)}x | ${goal(vsBare >= 0.8)} |

For reference, bare Temporal alone on the tuned server against the untuned one, same rounds: ${fmt(bareVsBareUntuned, 2)}x.
${altLine}`;
    process.stdout.write(`${body}\n`);
    await writeSection('throughput', TITLE, body);
    log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    for (const s of servers)
      for (const stop of s.stops) await stop().catch((err: unknown) => log(`stop: ${(err as Error).message}`));
    killStarted();
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

runBench(main);
