/**
 * Benchmark: the first turn of a new session with one server-everything over stdio, on a worker
 * with warm spares (DMCP_WARM_SPARES=1) and on one without (0), side by side in one run: two
 * workers in this process on their own queues, sessions alternating between them. Each session is
 * new and runs one batch turn with one echo call. Run on demand: `npm run build:bench && node
 * dist/bench/firstTurn.js` (ROUNDS=N, default 10). Uses TEMPORAL_ADDRESS if set, else starts a dev
 * server. Writes its section of bench/results/firstTurn.md.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { TurnClient } from '../client/turnClient.js';
import { startWorker, type RunningWorker } from '../worker/index.js';
import { everythingServer, runBench, sleep } from './procs.js';
import { startTemporal } from './setup.js';
import { machineLine, percentile, projectRoot, resultsFile, writeSection } from './support.js';

const TITLE = 'First turn of a new session: warm spares on vs off';

function eventMs(e: temporal.api.history.v1.IHistoryEvent | undefined): number {
  return Number(e?.eventTime?.seconds ?? 0) * 1000 + Math.floor((e?.eventTime?.nanos ?? 0) / 1e6);
}

interface Variant {
  key: 'off' | 'on';
  title: string;
  worker: RunningWorker;
  client: TurnClient;
  turnMs: number[];
  reconcileMs: number[];
  spareUsed: number;
}

async function main(): Promise<void> {
  const rounds = Number(process.env.ROUNDS ?? 10);
  const loadBefore = loadavg()[0]!;
  const temporalServer = await startTemporal();
  const address = temporalServer.address;
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const connection = await NativeConnection.connect({ address });
  const spec = `e:${process.execPath} ${everythingServer} stdio`;
  const variants: Variant[] = [];
  for (const [key, spares] of [
    ['off', '0'],
    ['on', '1'],
  ] as const) {
    const taskQueue = `bench-firstturn-${key}-${randomBytes(4).toString('hex')}`;
    const worker = await startWorker({
      connection,
      logger: pino({ level: 'error' }),
      taskQueue,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DMCP_NO_USER_CONFIG: '1',
        DMCP_START_TIMEOUT: '60s',
        DMCP_WARM_SPARES: spares,
      },
    });
    const client = new TurnClient({
      client: new Client({ connection: await Connection.connect({ address }) }),
      taskQueue,
    });
    variants.push({
      key,
      title: key === 'on' ? 'DMCP_WARM_SPARES=1' : 'DMCP_WARM_SPARES=0 (today)',
      worker,
      client,
      turnMs: [],
      reconcileMs: [],
      spareUsed: 0,
    });
  }

  /** One new session's first turn: wall time of the turn (client side) and of its reconcileServers activity. */
  async function firstTurn(v: Variant): Promise<{ turnMs: number; reconcileMs: number; spare: boolean }> {
    const sessionId = `bench-first-${randomBytes(6).toString('hex')}`;
    const spares = new Set(v.worker.pool.sparePids().e ?? []);
    const t0 = performance.now();
    const result = await v.client.runBatch({
      sessionId,
      workspace: projectRoot,
      servers: { inlineSpecs: [spec] },
      calls: [[{ id: 'c1', name: 'mcp__e__echo', arguments: { message: 'hi' } }]],
    });
    const turnMs = performance.now() - t0;
    const outcome = result.calls[0]?.outcome;
    if (!outcome || outcome.status !== 'ok' || outcome.isError)
      throw new Error(`the echo call failed: ${JSON.stringify(result.calls[0])}`);
    const events = (await v.client.client.workflow.getHandle(result.turnId).fetchHistory()).events ?? [];
    const scheduled = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'reconcileServers',
    );
    const id = String(scheduled?.eventId);
    const started = events.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === id);
    const completed = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === id);
    if (!started || !completed) throw new Error('no completed reconcileServers in the history');
    const pid = v.worker.pool.pids(sessionId).e;
    await v.worker.pool.stopSession(sessionId);
    return { turnMs, reconcileMs: eventMs(completed) - eventMs(started), spare: pid !== undefined && spares.has(pid) };
  }

  /** The next session finds the state a new session meets between others: spares refilled, no start running. */
  async function quiet(v: Variant): Promise<void> {
    await v.worker.pool.sparesSettled();
    await sleep(300);
  }

  const started = Date.now();
  try {
    // Warm-up: file cache, JIT, the first workflow task of each queue; the "on" worker learns the entry.
    for (const v of variants) {
      await firstTurn(v);
      await quiet(v);
    }
    for (let r = 0; r < rounds; r += 1) {
      // Order swapped every round, so neither variant always runs right after the other's refill.
      for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
        const m = await firstTurn(v);
        v.turnMs.push(m.turnMs);
        v.reconcileMs.push(m.reconcileMs);
        if (m.spare) v.spareUsed += 1;
        await quiet(v);
      }
    }
  } finally {
    for (const v of variants) {
      await v.worker.shutdown();
      await v.client.close();
    }
    await connection.close();
    await temporalServer.stop();
  }

  const [off, on] = variants as [Variant, Variant];
  const p50 = (xs: number[]) => percentile(xs, 50);
  const row = (v: Variant) =>
    `| ${v.title} | ${Math.round(p50(v.reconcileMs))} | ${Math.round(percentile(v.reconcileMs, 90))} | ${Math.round(p50(v.turnMs))} | ${Math.round(percentile(v.turnMs, 90))} | ${v.spareUsed}/${v.turnMs.length} |`;
  const rows = [row(off), row(on)];
  const ratios = `| ratio on / off (p50) | **${(p50(on.reconcileMs) / p50(off.reconcileMs)).toFixed(2)}x** | | **${(p50(on.turnMs) / p50(off.turnMs)).toFixed(2)}x** | | |`;
  for (const line of [...rows, ratios]) process.stdout.write(`${line}\n`);
  await writeSection(
    'firstTurn',
    TITLE,
    [
      `Command: \`npm run build:bench && node dist/bench/firstTurn.js\` (part of \`npm run bench\`; ROUNDS=${rounds}). Machine: ${await machineLine()}, load average ${loadBefore.toFixed(1)} at the start. Run took ${Math.round((Date.now() - started) / 1000)} s.`,
      '',
      'Each sample is a new session whose first turn is a batch with one `echo` call to',
      '`@modelcontextprotocol/server-everything` over stdio (an inline spec, a trusted entry). Two',
      'workers in one process on their own queues, one with one warm spare per entry and one without,',
      'sessions alternating between them (order swapped every round); before each session the spares',
      'are refilled and the machine quiet, as for a session that arrives a while after the last one.',
      '"reconcile" is the turn\'s `reconcileServers` activity (started to completed, from history);',
      '"turn" is the whole turn as the client sees it (start to result, the echo call included).',
      '',
      '| worker | reconcile p50 (ms) | reconcile p90 (ms) | turn p50 (ms) | turn p90 (ms) | sessions that got a spare |',
      '|---|---|---|---|---|---|',
      ...rows,
      ratios,
      '',
      "Goal: the first turn with spares on <= 0.3x today's turn start.",
    ].join('\n'),
  );
  process.stdout.write(`written to ${resultsFile('firstTurn')}\n`);
  process.exit(0);
}

runBench(main);
