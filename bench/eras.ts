/**
 * Benchmark: the two MCP protocol eras side by side in one run. The same 2026-era server (the
 * SDK's v2 `createMcpHandler`, which serves both eras per request) is spoken to as a modern server
 * (`"protocol": "auto"`, landing on 2026-07-28) and as a legacy one (`"protocol": "legacy"`), and a
 * 2025-only server (the v1 SDK's Streamable HTTP) with and without the probe (`auto` vs `legacy`).
 * Measured: a durable call in an open turn (`Turn.callTool` of `echo`), and the first turn of a new
 * session (one batch echo call; its `reconcileServers` activity from history). Run on demand:
 * `npm run build:bench && node dist/bench/eras.js` (ROUNDS=N first turns per variant, default 10;
 * CALLS=N calls per round, default 40, 3 rounds). Writes its section of bench/results/eras.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { TurnClient } from '../client/turnClient.js';
import { dataConverterFor } from '../payloads/dataConverter.js';
import { loadSettings } from '../settings/index.js';
import { startWorker } from '../worker/index.js';
import { httpFixture, runBench, startNode, stopProcess } from './procs.js';
import { startTemporal } from './setup.js';
import { machineLine, percentile, writeSection } from './support.js';

const TITLE = 'Protocol eras: a modern and a legacy HTTP server, calls and first turns';
const modernFixture = fileURLToPath(new URL('../test/fixtures/modernServer.js', import.meta.url));

interface Variant {
  key: string;
  title: string;
  config: string;
  era?: string;
  callMs: number[];
  firstTurnMs: number[];
  reconcileMs: number[];
}

function eventMs(e: temporal.api.history.v1.IHistoryEvent | undefined): number {
  return Number(e?.eventTime?.seconds ?? 0) * 1000 + Math.floor((e?.eventTime?.nanos ?? 0) / 1e6);
}

async function main(): Promise<void> {
  const rounds = Number(process.env.ROUNDS ?? 10);
  const callsPerRound = Number(process.env.CALLS ?? 40);
  const loadBefore = loadavg()[0]!;
  const dir = await mkdtemp(join(tmpdir(), 'dmcp-bench-eras-'));
  const temporalServer = await startTemporal();
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const connection = await NativeConnection.connect({ address: temporalServer.address });
  const taskQueue = `bench-eras-${randomBytes(4).toString('hex')}`;
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DMCP_NO_USER_CONFIG: '1',
    DMCP_DATA_DIR: join(dir, 'data'),
    DMCP_WARM_SPARES: '0',
  };
  const settings = loadSettings(env);
  const worker = await startWorker({
    connection,
    logger: pino({ level: 'error' }),
    taskQueue,
    env,
    settings,
    dataConverter: dataConverterFor(settings),
  });
  // After the worker: it creates the data dir's turn key, which signs the turn's config file reference.
  const client = await TurnClient.connect({ address: temporalServer.address, taskQueue, dataDir: env.DMCP_DATA_DIR });
  const modern = await startNode<{ url: string }>(modernFixture, ['http']);
  const legacyOnly = await startNode<{ port: number }>(httpFixture, ['http']);
  const legacyUrl = `http://127.0.0.1:${legacyOnly.info.port}/mcp`;

  const variants: Variant[] = [];
  for (const [key, title, url, protocol] of [
    ['modern', '2026-era server, `protocol: auto` (lands on 2026-07-28)', modern.info.url, 'auto'],
    ['modern-as-legacy', 'same server, `protocol: legacy`', modern.info.url, 'legacy'],
    ['legacy-auto', '2025-only server, `protocol: auto` (probe, then fallback)', legacyUrl, 'auto'],
    ['legacy-pinned', '2025-only server, `protocol: legacy` (no probe)', legacyUrl, 'legacy'],
  ] as const) {
    const config = join(dir, `${key}.json`);
    await writeFile(config, JSON.stringify({ mcpServers: { s: { type: 'http', url, protocol } } }));
    variants.push({ key, title, config, callMs: [], firstTurnMs: [], reconcileMs: [] });
  }
  const refs = (v: Variant) => ({ inlineSpecs: [], mcpConfigFiles: [v.config] });

  async function firstTurn(v: Variant): Promise<void> {
    const sessionId = `bench-eras-${v.key}-${randomBytes(5).toString('hex')}`;
    const t0 = performance.now();
    const result = await client.runBatch({
      sessionId,
      workspace: dir,
      servers: refs(v),
      calls: [[{ id: 'c1', name: 'mcp__s__echo', arguments: { text: 'hi' } }]],
    });
    const ms = performance.now() - t0;
    const outcome = result.calls[0]?.outcome;
    if (!outcome || outcome.status !== 'ok' || outcome.isError)
      throw new Error(`${v.key}: the echo call failed: ${JSON.stringify(result.calls[0])}`);
    const events = (await client.client.workflow.getHandle(result.turnId).fetchHistory()).events ?? [];
    const scheduled = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'reconcileServers',
    );
    const id = String(scheduled?.eventId);
    const started = events.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === id);
    const completed = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === id);
    if (!started || !completed) throw new Error('no completed reconcileServers in the history');
    v.firstTurnMs.push(ms);
    v.reconcileMs.push(eventMs(completed) - eventMs(started));
    await worker.pool.stopSession(sessionId);
  }

  const began = Date.now();
  try {
    // Interactive calls: one open turn per variant, rounds interleaved (order rotated each round).
    const turns = [];
    for (const v of variants) {
      const turn = await client.startTurn({
        sessionId: `bench-eras-calls-${v.key}-${randomBytes(4).toString('hex')}`,
        workspace: dir,
        servers: refs(v),
      });
      const status = turn.status.servers.find((s) => s.name === 's') as
        | { state: string; era?: string; error?: string }
        | undefined;
      if (status?.state !== 'ready') throw new Error(`${v.key}: server not ready: ${JSON.stringify(status)}`);
      v.era = status.era;
      turns.push({ v, turn });
    }
    for (const { turn } of turns)
      for (let i = 0; i < 5; i += 1)
        await turn.callTool({ id: `warm-${i}`, name: 'mcp__s__echo', arguments: { text: 'warm' } });
    for (let r = 0; r < 3; r += 1) {
      const order = [...turns.slice(r % turns.length), ...turns.slice(0, r % turns.length)];
      for (const { v, turn } of order) {
        for (let i = 0; i < callsPerRound; i += 1) {
          const t0 = performance.now();
          const outcome = await turn.callTool({ id: `r${r}-c${i}`, name: 'mcp__s__echo', arguments: { text: 'hi' } });
          v.callMs.push(performance.now() - t0);
          if (outcome.status !== 'ok' || outcome.isError)
            throw new Error(`${v.key}: echo failed: ${JSON.stringify(outcome)}`);
        }
      }
    }
    for (const { turn } of turns) await turn.end({ endSession: true });
    // First turns: a warm-up each, then rounds, order swapped every round.
    for (const v of variants) await firstTurn(v);
    for (let r = 0; r < rounds && Date.now() - began < 15 * 60_000; r += 1) {
      for (const v of r % 2 === 0 ? variants : [...variants].reverse()) await firstTurn(v);
    }
  } finally {
    await worker.shutdown();
    await client.close();
    await connection.close();
    await stopProcess(modern);
    await stopProcess(legacyOnly);
    await temporalServer.stop();
    await rm(dir, { recursive: true, force: true });
  }

  const p50 = (xs: number[]) => percentile(xs, 50);
  const f = (n: number) => n.toFixed(1);
  const [m, ml, la, lp] = variants as [Variant, Variant, Variant, Variant];
  const rows = variants.map(
    (v) =>
      `| ${v.title} | ${v.era ?? '?'} | ${f(p50(v.callMs))} | ${f(percentile(v.callMs, 90))} | ${Math.round(p50(v.reconcileMs))} | ${Math.round(p50(v.firstTurnMs))} |`,
  );
  const lines = [
    `Command: \`npm run build:bench && node dist/bench/eras.js\` (ROUNDS=${rounds}, CALLS=${callsPerRound}). Machine: ${await machineLine()}, load average ${loadBefore.toFixed(1)} at the start. Run took ${Math.round((Date.now() - began) / 1000)} s.`,
    '',
    'One worker in this process, Streamable HTTP servers on 127.0.0.1. "call" is `Turn.callTool` of',
    '`echo` in an open turn (3 interleaved rounds, order rotated, after 5 warm-up calls each);',
    '"reconcile" is the first turn\'s `reconcileServers` activity (connect, era negotiation and the',
    'first listing, from history); "first turn" is that whole batch turn with one echo call, as the',
    'client sees it (new session each time, no warm spares).',
    '',
    '| server | era | call p50 (ms) | call p90 (ms) | reconcile p50 (ms) | first turn p50 (ms) |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `Ratios (p50): a modern call / the same server's legacy call **${(p50(m.callMs) / p50(ml.callMs)).toFixed(2)}x**; ` +
      `modern reconcile / legacy reconcile on the same server **${(p50(m.reconcileMs) / p50(ml.reconcileMs)).toFixed(2)}x**; ` +
      `the probe against a 2025-only server: reconcile with \`auto\` / pinned \`legacy\` **${(p50(la.reconcileMs) / p50(lp.reconcileMs)).toFixed(2)}x** ` +
      `(+${Math.round(p50(la.reconcileMs) - p50(lp.reconcileMs))} ms).`,
    '',
    "The probe is one `server/discover` round trip, paid when a remote server's connection is made",
    "(a session's first turn, or a reconnect), never per call; a 2025-only server answers it with an",
    'error and the client goes on with `initialize`. An entry that pins `"protocol": "legacy"` skips',
    'it. A modern server has no `initialize` round trip, so its connect is the cheaper one.',
  ];
  for (const line of lines) process.stdout.write(`${line}\n`);
  await writeSection('eras', TITLE, lines.join('\n'));
}

runBench(main);
