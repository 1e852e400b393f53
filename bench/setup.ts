/**
 * What every side-by-side benchmark needs: a Temporal dev server (TEMPORAL_ADDRESS, else an
 * in-memory one), the durable-mcp and bare workers as separate processes, a Temporal client.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { startDevServer, type DevServerOptions } from '../dev/devServer.js';
import { bundleWorkflows } from '../worker/index.js';
import { echoFixture, killStarted, startNode, workerProcessScript, type Started } from './procs.js';

export interface Temporal {
  address: string;
  /** PID of the dev server when this run started it. */
  pid?: number;
  stop(): Promise<void>;
}

/**
 * TEMPORAL_ADDRESS when set, else a dev server of this run: in memory and tuned as `dev` starts it
 * unless `options` say otherwise (`fresh` ignores TEMPORAL_ADDRESS, for benchmarks that compare
 * servers).
 */
export async function startTemporal(options: DevServerOptions & { fresh?: boolean } = {}): Promise<Temporal> {
  const { fresh, ...serverOptions } = options;
  if (process.env.TEMPORAL_ADDRESS && !fresh) {
    // bench/all.ts shares one dev server and says which process it is.
    const pid = Number(process.env.BENCH_TEMPORAL_PID) || undefined;
    return { address: process.env.TEMPORAL_ADDRESS, ...(pid ? { pid } : {}), stop: async () => undefined };
  }
  const server = await startDevServer({ headless: true, ...serverOptions });
  return { address: server.address, pid: server.pid, stop: () => server.stop() };
}

export function benchQueue(name: string): string {
  return `bench-${name}-${randomBytes(4).toString('hex')}`;
}

/** The end of a benchmark, whatever happened: its client and server, every process it started, its temp dir. */
export async function endBench(parts: { client: Client; temporal: Temporal; dir: string }): Promise<void> {
  await parts.client.connection.close().catch(() => undefined);
  await parts.temporal.stop().catch(() => undefined);
  killStarted();
  await rm(parts.dir, { recursive: true, force: true }).catch(() => undefined);
}

export async function connectClient(address: string): Promise<Client> {
  return new Client({ connection: await Connection.connect({ address }) });
}

/** The durable-mcp workflow bundle, written once so worker processes skip bundling. */
export async function writeDurableBundle(dir: string): Promise<string> {
  const file = join(dir, 'durable-mcp-workflows.js');
  await writeFile(file, (await bundleWorkflows()).code);
  return file;
}

export type DurableWorker = Started<{ workerQueue: string; pid: number }>;

/** A durable-mcp worker in its own process (test/fixtures/workerProcess.ts). */
export function startDurableWorker(
  address: string,
  taskQueue: string,
  bundleFile: string,
  options: { env?: NodeJS.ProcessEnv; execArgv?: string[]; script?: string; codec?: boolean } = {},
): Promise<DurableWorker> {
  // Another build's worker (BENCH_ALT_WORKER) bundles its own workflows.
  const args = options.script ? ['--task-queue', taskQueue] : ['--task-queue', taskQueue, '--bundle', bundleFile];
  // The data converter `durable-mcp worker` runs with, for benches that compare what a user gets.
  if (options.codec) args.push('--codec');
  return startNode(options.script ?? workerProcessScript, args, {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: address,
      DMCP_NO_USER_CONFIG: '1',
      DMCP_LOG_LEVEL: 'warn',
      ...(process.env.DMCP_STICKY_WAIT ? { DMCP_STICKY_WAIT: process.env.DMCP_STICKY_WAIT } : {}),
      ...options.env,
    },
    execArgv: options.execArgv,
  });
}

/** The bare-Temporal baseline worker (bench/bareWorker.ts) in its own process. */
export function startBareWorker(
  address: string,
  taskQueue: string,
  options: { execArgv?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<Started<{ pid: number; pinnedQueue: string }>> {
  return startNode(fileURLToPath(new URL('./bareWorker.js', import.meta.url)), ['--task-queue', taskQueue], {
    env: { PATH: process.env.PATH, TEMPORAL_ADDRESS: address, BENCH_ECHO_SERVER: echoFixture, ...options.env },
    execArgv: options.execArgv,
  });
}
