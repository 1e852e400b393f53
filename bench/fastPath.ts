/**
 * The fast path side by side, in one run on one embedded tuned dev server (as `dev` starts it):
 *   - floor: an Update answered with no activity (bare Temporal, bench/bareWorkflow.ts),
 *   - the same MCP call as the fast path's, made by a bare local activity with the MCP SDK's client,
 *   - bare Update -> local activity, bare Update -> activity on a worker's own queue, and on the
 *     workflow's own queue (dispatched eagerly by the tuned server),
 *   - durable-mcp `Turn.callTool` of a retry-safe echo (the fast path), of the same echo with
 *     DMCP_FAST_PATH=false, and of a side-effecting echo (a regular activity, dispatched eagerly;
 *     and with DMCP_EAGER_CALLS=false, on the worker's own queue),
 * sequential calls interleaved round robin (order rotated each round), so a noisy machine hits them
 * alike; then throughput of 16 turns calling at once, retry-safe durable calls against bare
 * Update -> activity; then how often the fast path is taken with 1 and with 3 workers.
 * Both echoes are the fixture echo server over stdio, one entry marked `"retry": "safe"`.
 *
 * Run on demand: `npm run build:bench && node dist/bench/fastPath.js`. Knobs: BENCH_FAST_CALLS
 * (sequential calls per variant and round, default 40), BENCH_FAST_ROUNDS (default 3),
 * BENCH_FAST_TPUT_MS (window per throughput run, default 3000), BENCH_FAST_TPUT_ROUNDS (default 2),
 * BENCH_FAST_TURNS (sessions of two turns per worker count for the take rate, default 9).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { TurnClient, type Turn } from '../client/turnClient.js';
import { ActivityName } from '../contract/index.js';
import { TUNED_MAX_IN_FLIGHT_UPDATES } from '../dev/devServer.js';
import { tempDir } from '../test/support/harness.js';
import { echoFixture, runBench, stopProcess, type Started } from './procs.js';
import {
  benchQueue,
  connectClient,
  endBench,
  startBareWorker,
  startDurableWorker,
  startTemporal,
  writeDurableBundle,
} from './setup.js';
import { cpuShare, machineLine, percentile, writeSection } from './support.js';

const env = process.env;
const CALLS = Number(env.BENCH_FAST_CALLS ?? 40);
const ROUNDS = Number(env.BENCH_FAST_ROUNDS ?? 3);
const TPUT_MS = Number(env.BENCH_FAST_TPUT_MS ?? 3000);
const TPUT_ROUNDS = Number(env.BENCH_FAST_TPUT_ROUNDS ?? 2);
const TAKE_TURNS = Number(env.BENCH_FAST_TURNS ?? 9);
const TPUT_LANES = 16;
const WARMUP = 5;
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

let seq = 0;
const uniqueId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(seq++).toString(36)}`;

type Call = (i: number) => Promise<void>;

/** The same echo twice: `plain` as the server annotates it (not at all: side-effecting), `safe` marked retry-safe. */
async function writeConfig(dir: string): Promise<string> {
  const file = join(dir, 'fast.mcp.json');
  const entry = { command: process.execPath, args: [echoFixture] };
  await writeFile(file, JSON.stringify({ mcpServers: { plain: entry, safe: { ...entry, retry: 'safe' } } }));
  return file;
}

async function startTurn(turns: TurnClient, dir: string, config: string): Promise<Turn> {
  const turn = await turns.startTurn({
    sessionId: uniqueId('fast'),
    workspace: dir,
    servers: { mcpConfigFiles: [config] },
  });
  const bad = turn.status.servers.find((s) => s.state !== 'ready');
  if (bad) throw new Error(`server ${bad.name} is ${bad.state}: ${bad.error}`);
  return turn;
}

function durableCall(turn: Turn, name: string): Call {
  return async (i) => {
    const outcome = await turn.callTool({ id: uniqueId('d'), name, arguments: { text: `call ${i}` } });
    if (outcome.status !== 'ok' || outcome.isError)
      throw new Error(`${name}: ${outcome.errorKind}: ${outcome.errorMessage}`);
  };
}

function bareCall(handle: WorkflowHandle, update: 'floor' | 'local' | 'localEcho' | 'call'): Call {
  return async (i) => {
    const id = uniqueId('b');
    await handle.executeUpdate(update, { args: update === 'floor' ? [id] : [id, { text: `call ${i}` }], updateId: id });
  };
}

const p50 = (v: number[]) => percentile(v, 50);
const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : '-');
/** The median; of an even count, the mean of the middle two (the 50th percentile alone would report the lower). */
const median = (v: number[]) => {
  const sorted = [...v].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Calls per second of `lanes` calling back to back for `ms`. */
async function throughput(lanes: Call[], ms: number): Promise<number> {
  const until = Date.now() + ms;
  let done = 0;
  await Promise.all(
    lanes.map(async (call) => {
      for (let i = 0; Date.now() < until; i += 1) {
        await call(i);
        done += 1;
      }
    }),
  );
  return done / (ms / 1000);
}

/** Of the calls of `turnId`, how many ran as a local activity and how many as a regular one. */
async function pathsTaken(
  client: Client,
  turnId: string,
): Promise<{ local: number; regular: number; misses: number; eager: number }> {
  const history = await client.workflow.getHandle(turnId).fetchHistory();
  let local = 0;
  let regular = 0;
  let misses = 0;
  let eager = 0;
  for (const e of history.events ?? []) {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity') {
      const data = client.options.loadedDataConverter.payloadConverter.fromPayload<{ activity_type?: string }>(
        marker.details!.data!.payloads![0]!,
      );
      if (data.activity_type !== ActivityName.callToolLocal) continue;
      if (marker.failure) misses += 1;
      else local += 1;
    }
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === ActivityName.callTool) {
      regular += 1;
      if (scheduled.taskQueue?.name === history.events?.[0]?.workflowExecutionStartedEventAttributes?.taskQueue?.name)
        eager += 1;
    }
  }
  return { local, regular, misses, eager };
}

/**
 * Where the run goes: the embedded dev server it starts, or (TEMPORAL_ADDRESS set) a server already
 * running, such as the multi-service cluster of `npm run test:cluster`, named by BENCH_FAST_TARGET.
 */
const target = env.TEMPORAL_ADDRESS
  ? (env.BENCH_FAST_TARGET ?? `the Temporal server at ${env.TEMPORAL_ADDRESS}`)
  : undefined;

async function main(): Promise<void> {
  const share = cpuShare();
  const dir = await tempDir('dmcp-bench-fast-');
  const temporal = await startTemporal();
  const client = await connectClient(temporal.address);
  const started: Started<unknown>[] = [];
  const ends: (() => Promise<unknown>)[] = [];
  try {
    const bundle = await writeDurableBundle(dir);
    const config = await writeConfig(dir);
    const queue = benchQueue('fast');
    const offQueue = benchQueue('fast-off');
    const bareQueue = benchQueue('fast-bare');
    const [worker, offWorker, bareWorker] = await Promise.all([
      startDurableWorker(temporal.address, queue, bundle),
      startDurableWorker(temporal.address, offQueue, bundle, {
        env: { DMCP_FAST_PATH: 'false', DMCP_EAGER_CALLS: 'false' },
      }),
      startBareWorker(temporal.address, bareQueue),
    ]);
    started.push(worker, offWorker, bareWorker);
    const turns = new TurnClient({ client, taskQueue: queue, maxCallsInFlight: TUNED_MAX_IN_FLIGHT_UPDATES });
    const offTurns = new TurnClient({ client, taskQueue: offQueue, maxCallsInFlight: TUNED_MAX_IN_FLIGHT_UPDATES });
    const turn = await startTurn(turns, dir, config);
    const offTurn = await startTurn(offTurns, dir, config);
    ends.push(
      () => turn.end(),
      () => offTurn.end(),
    );
    // Activities on the bare worker's own queue, as durable-mcp pins its calls to the worker holding the servers.
    const bare = await client.workflow.start('bareTurn', {
      taskQueue: bareQueue,
      workflowId: uniqueId('fast-bare'),
      args: [bareWorker.info.pinnedQueue],
    });
    ends.push(() => bare.executeUpdate('end', { updateId: 'end' }));
    // Activities on the workflow's own queue: the tuned server dispatches them eagerly, as a durable-mcp side-effecting call on the worker holding its servers.
    const bareEager = await client.workflow.start('bareTurn', {
      taskQueue: bareQueue,
      workflowId: uniqueId('fast-bare-eager'),
      args: [],
    });
    ends.push(() => bareEager.executeUpdate('end', { updateId: 'end' }));

    const variants: { key: string; label: string; call: Call }[] = [
      { key: 'floor', label: 'floor: bare Update, no activity', call: bareCall(bare, 'floor') },
      { key: 'bareLocal', label: 'bare Update -> local activity', call: bareCall(bare, 'local') },
      {
        key: 'bareLocalEcho',
        label: 'bare Update -> local activity calling the echo (MCP SDK client, stdio)',
        call: bareCall(bare, 'localEcho'),
      },
      { key: 'bare', label: 'bare Update -> activity (worker queue)', call: bareCall(bare, 'call') },
      {
        key: 'bareEager',
        label: "bare Update -> activity (workflow's queue, eager dispatch)",
        call: bareCall(bareEager, 'call'),
      },
      { key: 'fast', label: 'durable-mcp, retry-safe echo (fast path)', call: durableCall(turn, 'mcp__safe__echo') },
      {
        key: 'safeOff',
        label: 'durable-mcp, retry-safe echo, DMCP_FAST_PATH=false',
        call: durableCall(offTurn, 'mcp__safe__echo'),
      },
      {
        key: 'sideEffect',
        label: 'durable-mcp, side-effecting echo (eager dispatch)',
        call: durableCall(turn, 'mcp__plain__echo'),
      },
      {
        key: 'sideEffectPinned',
        label: 'durable-mcp, side-effecting echo, DMCP_EAGER_CALLS=false (worker queue)',
        call: durableCall(offTurn, 'mcp__plain__echo'),
      },
    ];
    for (const v of variants) for (let i = 0; i < WARMUP; i += 1) await v.call(i);
    const samples = new Map(variants.map((v) => [v.key, { all: [] as number[], rounds: [] as number[] }]));
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = variants.map((_, k) => variants[(k + round) % variants.length]!);
      const perRound = new Map(variants.map((v) => [v.key, [] as number[]]));
      // Interleaved call by call, so a burst of load elsewhere falls on every variant alike.
      for (let i = 0; i < CALLS; i += 1) {
        for (const v of order) {
          const t0 = performance.now();
          await v.call(i);
          perRound.get(v.key)!.push(performance.now() - t0);
        }
      }
      for (const v of variants) {
        const got = perRound.get(v.key)!;
        samples.get(v.key)!.all.push(...got);
        samples.get(v.key)!.rounds.push(p50(got));
      }
      log(
        `round ${round + 1}: ${variants.map((v) => `${v.key} ${fmt(samples.get(v.key)!.rounds.at(-1)!)}`).join(', ')}`,
      );
    }
    const fast = await pathsTaken(client, turn.turnId);
    const floorRounds = samples.get('floor')!.rounds;
    const ratio = (key: string) => median(samples.get(key)!.rounds.map((v, r) => v / floorRounds[r]!));

    // Throughput: 16 turns (and 16 bare workflows) calling back to back.
    log('throughput');
    const fastTurns = await Promise.all(Array.from({ length: TPUT_LANES }, () => startTurn(turns, dir, config)));
    ends.push(...fastTurns.map((t) => () => t.end()));
    const bareHandles = await Promise.all(
      Array.from({ length: TPUT_LANES }, () =>
        client.workflow.start('bareTurn', {
          taskQueue: bareQueue,
          workflowId: uniqueId('fast-tput'),
          args: [bareWorker.info.pinnedQueue],
        }),
      ),
    );
    ends.push(...bareHandles.map((h) => () => h.executeUpdate('end', { updateId: 'end' })));
    const fastLanes = fastTurns.map((t) => durableCall(t, 'mcp__safe__echo'));
    const bareLanes = bareHandles.map((h) => bareCall(h, 'call'));
    await throughput(fastLanes, 500);
    await throughput(bareLanes, 500);
    const tput = { fast: [] as number[], bare: [] as number[] };
    for (let round = 0; round < TPUT_ROUNDS; round += 1) {
      const pairs = round % 2 === 0 ? (['fast', 'bare'] as const) : (['bare', 'fast'] as const);
      for (const key of pairs) tput[key].push(await throughput(key === 'fast' ? fastLanes : bareLanes, TPUT_MS));
      log(`throughput round ${round + 1}: fast ${fmt(tput.fast.at(-1)!)}/s, bare ${fmt(tput.bare.at(-1)!)}/s`);
    }
    const tputRatio = median(tput.fast.map((v, r) => v / tput.bare[r]!));

    // How often the fast path is taken, on 1 and on 3 workers: sessions of two turns, 4 retry-safe calls
    // each. A session's first turn reconciles on the worker running it; its second on the worker
    // holding its servers, wherever its workflow tasks land.
    const take: {
      workers: number;
      turn: number;
      local: number;
      regular: number;
      misses: number;
      turns: number;
      turnsAllLocal: number;
    }[] = [];
    for (const workers of [1, 3]) {
      const q = benchQueue(`fast-take-${workers}`);
      const procs = await Promise.all(
        Array.from({ length: workers }, () => startDurableWorker(temporal.address, q, bundle)),
      );
      const tc = new TurnClient({ client, taskQueue: q, maxCallsInFlight: TUNED_MAX_IN_FLIGHT_UPDATES });
      const rows = [1, 2].map((turn) => ({
        workers,
        turn,
        local: 0,
        regular: 0,
        misses: 0,
        turns: 0,
        turnsAllLocal: 0,
      }));
      for (let t = 0; t < TAKE_TURNS; t += 1) {
        const sessionId = uniqueId('fast-take');
        for (const row of rows) {
          const tt = await tc.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [config] } });
          for (let i = 0; i < 4; i += 1) await durableCall(tt, 'mcp__safe__echo')(i);
          await tt.end();
          const got = await pathsTaken(client, tt.turnId);
          row.local += got.local;
          row.regular += got.regular;
          row.misses += got.misses;
          row.turns += 1;
          if (got.regular === 0) row.turnsAllLocal += 1;
          // The next turn prefers this one's worker once the turn is listed (visibility lags a little).
          for (let wait = 0; wait < 50; wait += 1) {
            let listed = false;
            for await (const w of client.workflow.list({ query: `WorkflowId = '${tt.turnId}'` }))
              listed = w.memo?.workerQueue !== undefined;
            if (listed) break;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      }
      take.push(...rows);
      for (const row of rows)
        log(
          `take rate, ${workers} worker(s), turn ${row.turn}: ${row.local} local, ${row.regular} regular, ${row.misses} misses`,
        );
      for (const p of procs) await stopProcess(p);
    }

    const row = (key: string) => {
      const s = samples.get(key)!;
      const v = variants.find((x) => x.key === key)!;
      return `| ${v.label} | ${fmt(p50(s.all))} | ${fmt(percentile(s.all, 95))} | ${s.rounds.map((r) => fmt(r)).join(' / ')} | ${key === 'floor' ? '1.00' : fmt(ratio(key), 2)} |`;
    };
    const knobs = Object.entries(env)
      .filter(
        ([k]) =>
          k.startsWith('BENCH_FAST_') && !['BENCH_FAST_TARGET', 'BENCH_FAST_SERVER', 'BENCH_FAST_COMMAND'].includes(k),
      )
      .map(([k, v]) => `${k}=${v} `)
      .join('');
    const server = env.BENCH_FAST_SERVER ?? target ?? 'embedded tuned dev server as `dev` starts it';
    // The cluster's driver (bench/fastPathCluster.ts) names itself; a run against a server of one's own names it.
    const command = env.BENCH_FAST_COMMAND
      ? env.BENCH_FAST_COMMAND.replace('node ', `${knobs}node `)
      : `${target ? `TEMPORAL_ADDRESS=${env.TEMPORAL_ADDRESS} ` : ''}${knobs}node dist/bench/fastPath.js`;
    const body = `Machine: ${await machineLine()}; ${share()}. Absolute figures move with the load; the ratios,
measured interleaved in the same run, are the result.
Command: \`npm run build:bench && ${command}\` (${ROUNDS} rounds of ${CALLS} sequential calls per variant,
interleaved call by call, order rotated each round; ${server}; one durable-mcp
worker per variant family, the fixture echo server over stdio).

| variant | p50 (ms) | p95 (ms) | p50 per round | p50 / floor (median of rounds) |
|---|---|---|---|---|
${variants.map((v) => row(v.key)).join('\n')}

The same MCP call made from a bare local activity (the echo through the MCP SDK's own client, no
durable-mcp code) is ${fmt(ratio('bareLocalEcho') / ratio('bareLocal'), 2)}x the no-op local activity; durable-mcp's fast call is
${fmt(ratio('fast') / ratio('bareLocalEcho'), 2)}x that bare MCP call (ratios of the medians above).

The fast-path turn ran ${fast.local} calls as local activities and ${fast.regular} as regular activities (its side-effecting calls, ${fast.eager} of them sent for eager dispatch), ${fast.misses} misses.

Throughput, ${TPUT_LANES} turns calling back to back (${TPUT_ROUNDS} rounds of ${TPUT_MS / 1000} s, alternating order):
durable-mcp retry-safe echo ${tput.fast.map((v) => fmt(v)).join(' / ')} calls/s, bare Update -> activity ${tput.bare.map((v) => fmt(v)).join(' / ')} calls/s:
**${fmt(tputRatio, 2)}x** bare.

How often the fast path is taken (${TAKE_TURNS} sessions of two turns per worker count, 4 retry-safe calls a turn):

| workers | turn of the session | calls local | calls regular | misses | turns with every call local |
|---|---|---|---|---|---|
${take.map((r) => `| ${r.workers} | ${r.turn} | ${r.local} | ${r.regular} | ${r.misses} | ${r.turnsAllLocal} of ${r.turns} |`).join('\n')}
`;
    process.stdout.write(`${body}\n`);
    await writeSection(
      target ? 'fastPathCluster' : 'fastPath',
      target ? `The fast path on ${target}` : 'The fast path: retry-safe calls as local activities',
      body,
    );
  } finally {
    for (const end of ends) await end().catch(() => undefined);
    for (const p of started) await stopProcess(p).catch(() => undefined);
    await endBench({ client, temporal, dir });
  }
}

runBench(main);
