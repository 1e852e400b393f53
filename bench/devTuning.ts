/**
 * What each dev-server setting is worth for this workload, side by side in one run: several dev
 * servers (each on its own SQLite file, as `dev` runs it) differing only in their settings, each with
 * its own bare worker and durable-mcp worker process; the same sequential calls on all of them,
 * interleaved (servers and variants round robin, order rotated every round). Then 30 parallel 2 s
 * calls in one turn on the tuned server and on the stock one.
 *
 * Variants per server: the floor (an Update with no activity: `cancelCall` of an unknown call on a
 * durable-mcp turn), bare Temporal (Update -> no-op activity, bench/bareWorkflow.ts) and a durable
 * echo call (Turn.callTool -> fixture echo server over stdio).
 *
 * Run on demand: `npm run build:bench && node dist/bench/devTuning.js` (part of `npm run bench`; it
 * starts its own servers whatever TEMPORAL_ADDRESS says). Knobs: BENCH_TUNING_CALLS (sequential calls
 * per variant, server and round; default 40), BENCH_TUNING_ROUNDS (default 4),
 * BENCH_PARALLEL_ROUNDS (default 2), BENCH_TUNING_SERVERS (comma list of server keys).
 */
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { TurnClient, type Turn } from '../client/turnClient.js';
import {
  TUNED_DYNAMIC_CONFIG,
  TUNED_MAX_IN_FLIGHT_UPDATES,
  TUNED_SQLITE_PRAGMAS,
  type DevServerOptions,
} from '../dev/devServer.js';
import { tempDir } from '../test/support/harness.js';
import { cpuMs, echoFixture, runBench, stopProcess } from './procs.js';
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
const CALLS = Number(env.BENCH_TUNING_CALLS ?? 40);
const ROUNDS = Number(env.BENCH_TUNING_ROUNDS ?? 4);
const PARALLEL_ROUNDS = Number(env.BENCH_PARALLEL_ROUNDS ?? 2);
const PARALLEL_CALLS = 30;
const PARALLEL_MS = 2000;
const WARMUP = 5;
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

interface ServerSpec {
  key: string;
  label: string;
  options: DevServerOptions;
}

const TRANSFER = 'history.transferProcessorMaxPollRPS';
const SERVER_SPECS: ServerSpec[] = [
  { key: 'untuned', label: 'untuned (stock `temporal server start-dev`)', options: { tuned: false } },
  {
    key: 'transfer',
    label: `${TRANSFER}=${String(TUNED_DYNAMIC_CONFIG[TRANSFER])} alone`,
    options: { tuned: false, dynamicConfig: { [TRANSFER]: TUNED_DYNAMIC_CONFIG[TRANSFER]! } },
  },
  {
    key: 'wal',
    label: 'journal_mode=wal + synchronous=normal alone',
    options: { tuned: false, sqlitePragmas: { ...TUNED_SQLITE_PRAGMAS } },
  },
  {
    key: 'visibility',
    label: 'history.visibilityProcessorMaxPollRPS=1000 alone',
    options: { tuned: false, dynamicConfig: { 'history.visibilityProcessorMaxPollRPS': 1000 } },
  },
  {
    key: 'timer',
    label: 'history.timerProcessorMaxPollRPS=1000 alone',
    options: { tuned: false, dynamicConfig: { 'history.timerProcessorMaxPollRPS': 1000 } },
  },
  {
    key: 'partitions',
    label: 'matching.numTaskqueueRead/WritePartitions=1 alone',
    options: {
      tuned: false,
      dynamicConfig: { 'matching.numTaskqueueReadPartitions': 1, 'matching.numTaskqueueWritePartitions': 1 },
    },
  },
  {
    key: 'tuned',
    label: "**tuned** (all of `dev`'s settings: transfer poll rate, WAL, maxInFlightUpdates)",
    options: {},
  },
  // The same settings but Temporal's default Update limit, as a cluster keeps it: its sequential
  // rows repeat the tuned ones (the limit does not matter there), a measure of the noise.
  {
    key: 'tuned10',
    label: 'tuned, but maxInFlightUpdates 10 (stock)',
    options: { dynamicConfig: { 'history.maxInFlightUpdates': 10 } },
  },
];

interface Lane {
  call(i: number): Promise<void>;
}

interface Server {
  spec: ServerSpec;
  temporal: Temporal;
  turns: TurnClient;
  lanes: Map<string, Lane>;
  stops: (() => Promise<void>)[];
}

const VARIANTS = [
  { key: 'floor', label: 'floor: Update, no activity' },
  { key: 'bare', label: 'bare Update -> no-op activity' },
  { key: 'durable', label: 'durable-mcp echo (Turn.callTool)' },
];

let seq = 0;
const uniqueId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(seq++).toString(36)}`;

async function startServer(spec: ServerSpec, dir: string, bundle: string): Promise<Server> {
  const stops: (() => Promise<void>)[] = [];
  const temporal = await startTemporal({ fresh: true, dbFile: join(dir, `${spec.key}.db`), ...spec.options });
  stops.push(() => temporal.stop());
  try {
    const client = await connectClient(temporal.address);
    stops.push(() => client.connection.close());
    const maxCallsInFlight = spec.key === 'tuned' ? TUNED_MAX_IN_FLIGHT_UPDATES : 10;
    const turns = new TurnClient({ client, taskQueue: benchQueue(`tuning-${spec.key}`), maxCallsInFlight });
    const durableWorker = await startDurableWorker(temporal.address, turns.taskQueue, bundle);
    stops.push(() => stopProcess(durableWorker));
    const bareQueue = benchQueue(`tuning-bare-${spec.key}`);
    const bareWorker = await startBareWorker(temporal.address, bareQueue);
    stops.push(() => stopProcess(bareWorker));

    const turn = await turns.startTurn({
      sessionId: uniqueId(`tuning-${spec.key}`),
      workspace: dir,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${echoFixture}`] },
    });
    const bad = turn.status.servers.find((s) => s.state !== 'ready');
    if (bad) throw new Error(`${spec.key}: server ${bad.name} is ${bad.state}: ${bad.error}`);
    stops.unshift(() => turn.end().then(() => undefined));
    const handle: WorkflowHandle = await client.workflow.start('bareTurn', {
      taskQueue: bareQueue,
      workflowId: uniqueId('tuning-bare'),
      args: [],
    });
    stops.unshift(() =>
      handle.executeUpdate('end', { updateId: 'end' }).then(
        () => undefined,
        () => undefined,
      ),
    );

    const lanes = new Map<string, Lane>([
      ['floor', { call: async () => void (await turn.cancelCall(uniqueId('none'))) }],
      [
        'bare',
        {
          async call(i) {
            const id = uniqueId('b');
            await handle.executeUpdate('call', { args: [id, { text: `call ${i}` }], updateId: id });
          },
        },
      ],
      [
        'durable',
        {
          async call(i) {
            const outcome = await turn.callTool({
              id: uniqueId('d'),
              name: 'mcp__fixture__echo',
              arguments: { text: `call ${i}` },
            });
            if (outcome.status !== 'ok' || outcome.isError)
              throw new Error(`durable-mcp: ${outcome.errorKind}: ${outcome.errorMessage}`);
          },
        },
      ],
    ]);
    return { spec, temporal, turns, lanes, stops };
  } catch (err) {
    for (const stop of stops) await stop().catch(() => undefined);
    throw err;
  }
}

async function stopServer(s: Server): Promise<void> {
  for (const stop of s.stops)
    await stop().catch((err: unknown) => log(`stop ${s.spec.key}: ${(err as Error).message}`));
}

interface Samples {
  latencies: number[];
  roundP50s: number[];
  temporalCpuMs: number;
  calls: number;
}

/** 30 parallel 2 s calls in one new turn; wall time from the first send to the last outcome. */
async function parallelRound(turns: TurnClient, dir: string): Promise<number> {
  const turn: Turn = await turns.startTurn({
    sessionId: uniqueId('parallel'),
    workspace: dir,
    servers: { inlineSpecs: [`fixture:${process.execPath} ${echoFixture}`] },
  });
  const t0 = performance.now();
  const outcomes = await Promise.all(
    Array.from({ length: PARALLEL_CALLS }, (_, i) =>
      turn.callTool({
        id: uniqueId(`p${i}`),
        name: 'mcp__fixture__slow',
        arguments: { ms: PARALLEL_MS, tag: `p${i}` },
      }),
    ),
  );
  const ms = performance.now() - t0;
  await turn.end();
  const bad = outcomes.find((o) => o.status !== 'ok');
  if (bad) throw new Error(`parallel call failed: ${bad.errorKind}: ${bad.errorMessage}`);
  return ms;
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
/** The middle value; the mean of the two middle ones for an even count. */
function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function main(): Promise<void> {
  const started = Date.now();
  const dir = await tempDir('dmcp-bench-tuning-');
  const only = env.BENCH_TUNING_SERVERS?.split(',').map((s) => s.trim());
  const specs = only ? SERVER_SPECS.filter((s) => only.includes(s.key)) : SERVER_SPECS;
  const bundle = await writeDurableBundle(dir);
  const servers: Server[] = [];
  try {
    for (const spec of specs) {
      log(`starting ${spec.key}`);
      servers.push(await startServer(spec, dir, bundle));
    }
    for (const s of servers)
      for (const v of VARIANTS) for (let i = 0; i < WARMUP; i++) await s.lanes.get(v.key)!.call(i);

    const samples = new Map<string, Samples>();
    const key = (server: string, variant: string) => `${server}/${variant}`;
    for (const s of servers)
      for (const v of VARIANTS)
        samples.set(key(s.spec.key, v.key), { latencies: [], roundP50s: [], temporalCpuMs: 0, calls: 0 });
    for (let round = 0; round < ROUNDS; round++) {
      log(`sequential round ${round + 1}/${ROUNDS}`);
      const order = servers.map((_, i) => servers[(i + round) % servers.length]!);
      for (const s of order) {
        for (const v of VARIANTS) {
          const sample = samples.get(key(s.spec.key, v.key))!;
          const lane = s.lanes.get(v.key)!;
          const cpu0 = cpuMs(s.temporal.pid!);
          const mine: number[] = [];
          for (let i = 0; i < CALLS; i++) {
            const t0 = performance.now();
            await lane.call(i);
            mine.push(performance.now() - t0);
          }
          sample.temporalCpuMs += cpuMs(s.temporal.pid!) - cpu0;
          sample.calls += CALLS;
          sample.latencies.push(...mine);
          sample.roundP50s.push(median(mine));
        }
      }
    }

    // Parallel calls: the tuned server with the CLI's bound, the stock server (limit 10) with the
    // client's default bound, and the stock server with no bound (every call sent at once, as before).
    const parallel: { label: string; server: Server; turns: TurnClient; times: number[] }[] = [];
    const tuned = servers.find((s) => s.spec.key === 'tuned');
    const untuned = servers.find((s) => s.spec.key === 'untuned');
    const tuned10 = servers.find((s) => s.spec.key === 'tuned10');
    if (tuned)
      parallel.push({
        label: `tuned server (maxInFlightUpdates ${TUNED_MAX_IN_FLIGHT_UPDATES}), client bound ${TUNED_MAX_IN_FLIGHT_UPDATES}`,
        server: tuned,
        turns: tuned.turns,
        times: [],
      });
    if (untuned) {
      parallel.push({
        label: 'untuned server (maxInFlightUpdates 10), client bound 10 (default)',
        server: untuned,
        turns: untuned.turns,
        times: [],
      });
      const unbounded = new TurnClient({
        client: untuned.turns.client,
        taskQueue: untuned.turns.taskQueue,
        maxCallsInFlight: Infinity,
      });
      parallel.push({
        label: 'untuned server (maxInFlightUpdates 10), no client bound (every call sent at once)',
        server: untuned,
        turns: unbounded,
        times: [],
      });
    }
    if (tuned10)
      parallel.push({
        label: 'tuned server but maxInFlightUpdates 10 (stock), client bound 10 (default)',
        server: tuned10,
        turns: tuned10.turns,
        times: [],
      });
    for (let round = 0; round < PARALLEL_ROUNDS; round++) {
      for (const p of round % 2 === 0 ? parallel : [...parallel].reverse()) {
        log(`parallel round ${round + 1}/${PARALLEL_ROUNDS}: ${p.label}`);
        p.times.push(await parallelRound(p.turns, dir));
      }
    }

    // --- report ---
    const base = (variant: string) => samples.get(key('untuned', variant));
    const rows: string[] = [];
    for (const s of servers) {
      const row = VARIANTS.map((v) => samples.get(key(s.spec.key, v.key))!);
      const [floor, bare, durable] = row as [Samples, Samples, Samples];
      const p50 = (x: Samples) => percentile(x.latencies, 50);
      // Per round against the untuned server's p50 of the same round, median over rounds.
      const vsUntuned = (variant: string, x: Samples) => {
        const b = base(variant);
        return b ? fmt(median(x.roundP50s.map((v, r) => v / b.roundP50s[r]!)), 2) : 'n/a';
      };
      rows.push(
        `| ${s.spec.label} | ${fmt(p50(floor))} | ${fmt(p50(bare))} | ${fmt(p50(durable))} | ${fmt(percentile(durable.latencies, 95))} | ${vsUntuned('bare', bare)} | ${vsUntuned('durable', durable)} | ${fmt(median(durable.roundP50s.map((v, r) => v / bare.roundP50s[r]!)), 2)} | ${fmt(bare.temporalCpuMs / bare.calls, 2)} | ${fmt(durable.temporalCpuMs / durable.calls, 2)} |`,
      );
    }
    const spread = (s: Samples) => `${fmt(Math.min(...s.roundP50s))}-${fmt(Math.max(...s.roundP50s))}`;
    const spreads = servers
      .map(
        (s) =>
          `${s.spec.key}: bare ${spread(samples.get(key(s.spec.key, 'bare'))!)}, durable ${spread(samples.get(key(s.spec.key, 'durable'))!)}`,
      )
      .join('; ');
    const ideal = (bound: number) => Math.ceil(PARALLEL_CALLS / bound) * PARALLEL_MS;
    const parallelRows = parallel.map((p) => {
      const bound = p.server.spec.key === 'tuned' ? TUNED_MAX_IN_FLIGHT_UPDATES : 10;
      const m = median(p.times);
      return `| ${p.label} | ${p.times.map((t) => fmt(t / 1000, 2)).join(', ')} | ${fmt(m / 1000, 2)} | ${fmt(ideal(bound) / 1000, 1)} | ${fmt(m / ideal(bound), 2)}x |`;
    });

    await writeSection(
      'devTuning',
      'Dev server tuning: what each setting is worth',
      `Command: \`npm run build:bench && node dist/bench/devTuning.js\` (part of \`npm run bench\`). Machine: ${await machineLine()}. Took ${((Date.now() - started) / 1000).toFixed(0)} s.

Every row is its own dev server started by \`startDevServer\` on its own SQLite file (as \`dev\` and \`run\` use it), with its own bare worker and durable-mcp worker process, all running at once; ${ROUNDS} rounds of ${CALLS} sequential calls per variant and server, servers and variants round robin (order rotated every round), so a noisy machine hits them alike. Floor: an Update that runs no activity (\`cancelCall\` of an unknown call on a durable-mcp turn). Bare: an Update that runs one no-op activity (bench/bareWorkflow.ts). Durable: \`Turn.callTool\` of the fixture echo server over stdio. "x untuned" is the p50 of a round over the untuned server's p50 of the same round, median over rounds; "durable / bare" the same against bare on the same server.

| dev server | floor p50 (ms) | bare p50 | durable p50 | durable p95 | bare x untuned | durable x untuned | durable / bare | Temporal CPU/call, bare (ms) | Temporal CPU/call, durable |
|---|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}

Spread of the per-round p50s (ms, min-max over the ${ROUNDS} rounds): ${spreads}.

### ${PARALLEL_CALLS} parallel ${PARALLEL_MS / 1000} s calls in one interactive turn

\`slow\` of the fixture server, all sent at once by one \`Turn\`; wall time from the first send to the last outcome, ${PARALLEL_ROUNDS} rounds (interleaved). Ideal: ceil(${PARALLEL_CALLS} / limit) rounds of ${PARALLEL_MS / 1000} s.

| server and client | seconds per round | median (s) | ideal (s) | x ideal |
|---|---|---|---|---|
${parallelRows.join('\n')}
`,
    );
    log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    for (const s of servers) await stopServer(s);
  }
}

runBench(main);
