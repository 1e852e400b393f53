import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { startDevServer, type DevServer } from '../dev/devServer.js';
import { TurnClient } from '../client/turnClient.js';
import { sharedTaskQueue } from '../worker/settings.js';
import { startWorker, type RunningWorker } from '../worker/index.js';
import { dataConverterFromEnv } from '../payloads/dataConverter.js';

/** DMCP_DATA_DIR: the dev server's database, state and (later) external payloads. */
export function dataDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.DMCP_DATA_DIR || '.data');
}

/** What a running `durable-mcp dev` writes so other commands can find it. */
export interface DevState {
  address: string;
  namespace: string;
  uiAddress?: string;
  pid: number;
  serverPid: number;
  taskQueue: string;
}

export const devStateFile = (env: NodeJS.ProcessEnv = process.env) => join(dataDir(env), 'dev.json');
export const devDbFile = (env: NodeJS.ProcessEnv = process.env) => join(dataDir(env), 'temporal.db');

export async function writeDevState(state: DevState, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await mkdir(dataDir(env), { recursive: true });
  await writeFile(devStateFile(env), `${JSON.stringify(state, null, 2)}\n`);
}

export async function removeDevState(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await rm(devStateFile(env), { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The running `durable-mcp dev` of this data dir, if there is one and it answers. */
export async function runningDev(env: NodeJS.ProcessEnv = process.env): Promise<DevState | undefined> {
  let state: DevState;
  try {
    state = JSON.parse(await readFile(devStateFile(env), 'utf8')) as DevState;
  } catch {
    return undefined;
  }
  if (!alive(state.pid) || !alive(state.serverPid)) return undefined;
  try {
    const connection = await Connection.connect({ address: state.address, connectTimeout: 2000 });
    await connection.close();
    return state;
  } catch {
    return undefined;
  }
}

let runtimeInstalled = false;

/** Routes the Temporal SDK's own logs through pino, without its startup chatter. */
export function installRuntimeLogger(logger: Logger): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.DMCP_SDK_LOG_LEVEL as LogLevel | undefined) ?? 'WARN';
  Runtime.install({
    // The commands handle their own signals and stop what they started in order.
    shutdownSignals: [],
    logger: new DefaultLogger(level, (entry) => {
      // The pinned worker queue deliberately has no workflows; the SDK warns about that.
      if (entry.message.startsWith('No workflows registered')) return;
      const method = entry.level === 'ERROR' ? 'error' : entry.level === 'WARN' ? 'warn' : 'debug';
      logger[method]({ sdk: entry.meta }, entry.message);
    }),
  });
}

/** A Temporal connection for a command, and whatever was started to provide it. */
export interface Session {
  client: TurnClient;
  /** Where it connected and why. */
  mode: 'TEMPORAL_ADDRESS' | 'dev' | 'embedded';
  address: string;
  worker?: RunningWorker;
  close(): Promise<void>;
}

/**
 * Connects in the documented order: TEMPORAL_ADDRESS when set; otherwise a running
 * `durable-mcp dev`; otherwise a dev server on the persistent database for this command only
 * (plus an in-process worker when `withWorker`), so history outlives the command.
 */
export async function connect(options: { logger: Logger; withWorker: boolean; env?: NodeJS.ProcessEnv; progress?: (m: string) => void }): Promise<Session> {
  const env = options.env ?? process.env;
  const namespace = env.TEMPORAL_NAMESPACE || 'default';
  const taskQueue = sharedTaskQueue(env);
  const dataConverter = dataConverterFromEnv(env, dataDir(env));
  if (env.TEMPORAL_ADDRESS) {
    const client = await TurnClient.connect({ address: env.TEMPORAL_ADDRESS, namespace, taskQueue, dataConverter });
    return { client, mode: 'TEMPORAL_ADDRESS', address: env.TEMPORAL_ADDRESS, close: () => client.close() };
  }
  const dev = await runningDev(env);
  if (dev) {
    const client = await TurnClient.connect({ address: dev.address, namespace: dev.namespace, taskQueue: dev.taskQueue, dataConverter });
    return { client, mode: 'dev', address: dev.address, close: () => client.close() };
  }
  options.progress?.('starting the embedded Temporal dev server...');
  const server: DevServer = await startDevServer({ dbFile: devDbFile(env), headless: true, env });
  let worker: RunningWorker | undefined;
  let nativeConnection: NativeConnection | undefined;
  let client: TurnClient | undefined;
  // Each step runs even if an earlier one failed: the dev server must never be left behind.
  const closeAll = async () => {
    for (const step of [() => worker?.shutdown(), () => nativeConnection?.close(), () => client?.close(), () => server.stop()]) {
      await Promise.resolve()
        .then(step)
        .catch((err: unknown) => options.logger.warn({ err }, 'cleanup step failed'));
    }
  };
  try {
    client = await TurnClient.connect({ address: server.address, namespace, taskQueue, dataConverter });
    if (options.withWorker) {
      installRuntimeLogger(options.logger);
      nativeConnection = await NativeConnection.connect({ address: server.address });
      worker = await startWorker({ connection: nativeConnection, logger: options.logger, env, taskQueue, dataConverter });
    }
    let closing: Promise<void> | undefined;
    return { client, mode: 'embedded', address: server.address, worker, close: () => (closing ??= closeAll()) };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
