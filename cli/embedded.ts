import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { startDevServer, type DevServer } from '../dev/devServer.js';
import { TurnClient } from '../client/turnClient.js';
import { startWorker, type RunningWorker } from '../worker/index.js';
import { dataConverterFor } from '../payloads/dataConverter.js';
import type { Settings } from '../settings/index.js';

/** What a running `durable-mcp dev` writes so other commands can find it. */
export interface DevState {
  address: string;
  namespace: string;
  uiAddress?: string;
  pid: number;
  serverPid: number;
  taskQueue: string;
}

/** Files under the data dir (DMCP_DATA_DIR): the dev server's database and the running dev's state. */
export const devStateFile = (dataDir: string) => join(dataDir, 'dev.json');
export const devDbFile = (dataDir: string) => join(dataDir, 'temporal.db');

export async function writeDevState(state: DevState, dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  await writeFile(devStateFile(dataDir), `${JSON.stringify(state, null, 2)}\n`);
}

export async function removeDevState(dataDir: string): Promise<void> {
  await rm(devStateFile(dataDir), { force: true });
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
export async function runningDev(dataDir: string): Promise<DevState | undefined> {
  let state: DevState;
  try {
    state = JSON.parse(await readFile(devStateFile(dataDir), 'utf8')) as DevState;
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
export function installRuntimeLogger(logger: Logger, level: LogLevel = 'WARN'): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
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
export async function connect(options: {
  logger: Logger;
  withWorker: boolean;
  settings: Settings;
  /** The in-process worker's environment (what its servers inherit, minus secrets). */
  env: NodeJS.ProcessEnv;
  progress?: (m: string) => void;
}): Promise<Session> {
  const { settings, env } = options;
  const namespace = settings.temporal.namespace;
  const taskQueue = settings.taskQueue;
  const dataConverter = dataConverterFor(settings);
  const address = settings.temporal.address;
  const clientSettings = { turnIdleMs: settings.turnIdleMs, shapeLimits: settings.shape };
  if (address) {
    const client = await TurnClient.connect({ address, namespace, taskQueue, dataConverter, ...clientSettings });
    return { client, mode: 'TEMPORAL_ADDRESS', address, close: () => client.close() };
  }
  const dev = await runningDev(settings.dataDir);
  if (dev) {
    const client = await TurnClient.connect({ address: dev.address, namespace: dev.namespace, taskQueue: dev.taskQueue, dataConverter, ...clientSettings });
    return { client, mode: 'dev', address: dev.address, close: () => client.close() };
  }
  options.progress?.('starting the embedded Temporal dev server...');
  const server: DevServer = await startDevServer({ dbFile: devDbFile(settings.dataDir), headless: true, env });
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
    client = await TurnClient.connect({ address: server.address, namespace, taskQueue, dataConverter, ...clientSettings });
    if (options.withWorker) {
      installRuntimeLogger(options.logger, settings.sdkLogLevel);
      nativeConnection = await NativeConnection.connect({ address: server.address });
      worker = await startWorker({ connection: nativeConnection, logger: options.logger, env, settings, taskQueue, dataConverter });
    }
    let closing: Promise<void> | undefined;
    return { client, mode: 'embedded', address: server.address, worker, close: () => (closing ??= closeAll()) };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
