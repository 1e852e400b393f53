/**
 * Benchmark: wall time of `reconcileServers` for one turn with 10 stdio
 * servers, against the slowest of the same servers started alone. Servers start in parallel, so
 * the ratio should stay under 1.5x. Run on demand: `npm run build:bench && node dist/bench/reconcile.js`
 * (set ROUNDS=N for more rounds). Uses TEMPORAL_ADDRESS if set, else starts an in-memory dev
 * server. Prints the figures and writes them into bench/results/reconcile.md (support.ts, writeSection).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { TurnClient } from '../client/turnClient.js';
import { startDevServer, type DevServer } from '../dev/devServer.js';
import { findTemporalCli, temporalCliVersion } from '../dev/temporalCli.js';
import { startWorker } from '../worker/index.js';
import { resultsFile, writeSection } from './support.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const lifecycleServer = fileURLToPath(new URL('../test/fixtures/lifecycleServer.js', import.meta.url));
const tinyServer = fileURLToPath(new URL('../test/fixtures/tinyServer.js', import.meta.url));
const everythingServer = join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const SECTION = 'reconcile: 10 stdio servers in one turn';

interface Scenario {
  title: string;
  /** Ten inline `--mcp` specs. */
  specs: string[];
}

const scenarios: Scenario[] = [
  {
    title: '10 x tiny server (bare Node, no SDK), cold starts of 100..1000 ms',
    specs: Array.from(
      { length: 10 },
      (_, i) => `t${i}:${process.execPath} ${tinyServer} --sleep-before-handshake ${(i + 1) * 100}`,
    ),
  },
  {
    title: '10 x tiny server (bare Node, no SDK), no delay',
    specs: Array.from({ length: 10 }, (_, i) => `t${i}:${process.execPath} ${tinyServer}`),
  },
  {
    title: '10 x fixture server (Node + MCP SDK, no delay)',
    specs: Array.from({ length: 10 }, (_, i) => `s${i}:${process.execPath} ${lifecycleServer} --name s${i}`),
  },
  {
    title: '10 x fixture server, cold starts of 100..1000 ms (simulated `npx`)',
    specs: Array.from(
      { length: 10 },
      (_, i) => `s${i}:${process.execPath} ${lifecycleServer} --name s${i} --sleep-before-handshake ${(i + 1) * 100}`,
    ),
  },
  {
    title: '10 x @modelcontextprotocol/server-everything (stdio)',
    specs: Array.from({ length: 10 }, (_, i) => `e${i}:${process.execPath} ${everythingServer} stdio`),
  },
];

function eventMs(e: temporal.api.history.v1.IHistoryEvent | undefined): number {
  return Number(e?.eventTime?.seconds ?? 0) * 1000 + Math.floor((e?.eventTime?.nanos ?? 0) / 1e6);
}

/** User + system CPU time of a live process, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function main(): Promise<void> {
  const rounds = Number(process.env.ROUNDS ?? 3);
  // Other work on the machine competes for the same cores: record it with the figures.
  const loadBefore = loadavg()[0]!;
  let dev: DevServer | undefined;
  let address = process.env.TEMPORAL_ADDRESS;
  if (!address) {
    dev = await startDevServer({ headless: true });
    address = dev.address;
  }
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const taskQueue = `bench-reconcile-${randomBytes(4).toString('hex')}`;
  const connection = await NativeConnection.connect({ address });
  const worker = await startWorker({
    connection,
    logger: pino({ level: 'error' }),
    taskQueue,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_NO_USER_CONFIG: '1', DMCP_START_TIMEOUT: '60s' },
  });
  const client = new TurnClient({
    client: new Client({ connection: await Connection.connect({ address }) }),
    taskQueue,
  });
  const workspace = root;

  /**
   * Wall time of the turn's reconcileServers activity (started -> completed, from history), and the
   * CPU time the servers used up to then (from /proc; 0 where /proc is missing).
   */
  async function reconcileMs(specs: string[]): Promise<{ wallMs: number; serverCpuMs: number }> {
    const sessionId = `bench-${randomBytes(6).toString('hex')}`;
    const result = await client.runBatch({ sessionId, workspace, servers: { inlineSpecs: specs }, calls: [] });
    const history = await client.client.workflow.getHandle(result.turnId).fetchHistory();
    const events = history.events ?? [];
    const scheduled = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'reconcileServers',
    );
    const id = String(scheduled?.eventId);
    const started = events.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === id);
    const completed = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === id);
    const status = worker.pool.status(sessionId);
    const notReady = status.servers.filter((s) => s.state !== 'ready');
    const serverCpuMs = status.servers.reduce((sum, s) => sum + (s.pid ? cpuMs(s.pid) : 0), 0);
    await worker.pool.stopSession(sessionId);
    if (!started || !completed || notReady.length > 0) {
      throw new Error(`reconcile failed: ${JSON.stringify(notReady.length ? notReady : events.slice(-3))}`);
    }
    return { wallMs: eventMs(completed) - eventMs(started), serverCpuMs };
  }

  const rows: string[] = [];
  try {
    await reconcileMs([scenarios[0]!.specs[0]!]); // warm-up: file cache, JIT, first workflow task
    for (const scenario of scenarios) {
      const slowest: number[] = [];
      const together: number[] = [];
      const cpuFloor: number[] = [];
      for (let r = 0; r < rounds; r += 1) {
        const singles: number[] = [];
        for (const spec of scenario.specs) singles.push((await reconcileMs([spec])).wallMs);
        slowest.push(Math.max(...singles));
        const all = await reconcileMs(scenario.specs);
        together.push(all.wallMs);
        cpuFloor.push(all.serverCpuMs / cpus().length);
      }
      const s = median(slowest);
      const t = median(together);
      const f = median(cpuFloor);
      const row = `| ${scenario.title} | ${Math.round(s)} | ${Math.round(t)} | **${(t / s).toFixed(2)}x** | ${Math.round(f)} |`;
      process.stdout.write(`${row}\n`);
      rows.push(row);
    }
  } finally {
    await worker.shutdown();
    await connection.close();
    await client.close();
    await dev?.stop();
  }

  const cli = await findTemporalCli();
  const machine = [
    `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'})`,
    `${(totalmem() / 2 ** 30).toFixed(1)} GiB memory`,
    `Node ${process.version}`,
    `load average ${loadBefore.toFixed(1)} when it started`,
    cli ? (await temporalCliVersion(cli.path)).split('\n')[0] : 'Temporal CLI: none found',
  ].join(', ');
  const section = [
    `Command: \`npm run build:bench && node dist/bench/reconcile.js\` (ROUNDS=${rounds}; median of the rounds).`,
    `Machine: ${machine}. Date: ${new Date().toISOString()}.`,
    '',
    "Wall time of the turn's `reconcileServers` activity (started to completed, from history), which",
    'covers spawning, the MCP handshake and the first tool listing of every server. "Slowest alone" is',
    'the slowest of the ten servers, each reconciled alone in its own session. Goal: under 1.5x.',
    '',
    '"CPU floor" is the CPU time the ten servers used while starting, divided by the cores: no',
    'scheduling can start them faster than that on this machine.',
    '',
    '| servers | slowest alone (ms) | all 10 in one turn (ms) | ratio | CPU floor (ms) |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  await writeSection('reconcile', SECTION, section);
  process.stdout.write(`written to ${resultsFile('reconcile')}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
