/** `durable-mcp dev`: the embedded Temporal dev server with its UI, a worker, the codec server and the HTTP API. */
import type { Command } from 'commander';
import type { Logger } from 'pino';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import type { Settings } from '../../settings/index.js';
import { UsageError, cliLogger, commandSettings, progress } from '../common.js';
import { devSettings } from '../embedded.js';
import { handleStopSignals, killGroup } from '../signals.js';
import { devDbFile, removeDevState, runningDev, writeDevState } from '../temporalServer.js';
import { workerParts } from './worker.js';

/**
 * `dev` serves the HTTP API too, so orchestrators in other languages can drive the embedded
 * default. A taken port is reported and dev goes on without it: the API is an extra, not the job.
 */
async function devApi(
  settings: Settings,
  logger: Logger,
  target: { address: string; namespace: string; taskQueue: string },
  undo: (() => Promise<unknown>)[],
): Promise<string> {
  const [{ serveApi, apiAuthLines }, { TUNED_MAX_IN_FLIGHT_UPDATES }] = await Promise.all([
    import('../api.js'),
    import('../../dev/devServer.js'),
  ]);
  const { host, port } = settings.api;
  try {
    const api = await serveApi(
      settings,
      logger,
      { ...target, maxCallsInFlight: TUNED_MAX_IN_FLIGHT_UPDATES },
      { host, port },
    );
    undo.push(() => api.close());
    // The token's file, never the token: the output of dev ends up in terminals' scrollback and logs.
    return [
      `  HTTP API:         ${api.url} (reference ${api.url}/api/v1/docs)`,
      ...apiAuthLines(api.auth, api.url).map((l) => `  API token:        ${l}`),
    ].join('\n');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    logger.warn({ host, port }, 'HTTP API not started: port in use');
    return `  HTTP API:         not started: ${host}:${port} is in use (set DMCP_API_PORT, or run \`durable-mcp api --port <n>\`)`;
  }
}

/** What `dev` prints once everything runs. */
function runningLines(p: {
  uiAddress: string | undefined;
  address: string;
  namespace: string;
  version: string;
  codecUrl: string;
  encrypted: boolean;
  apiLine: string;
  taskQueue: string;
  workerQueue: string;
  dataDir: string;
}): string {
  return [
    'durable-mcp dev is running.',
    `  Temporal UI:      ${p.uiAddress}`,
    `  Temporal server:  ${p.address} (namespace ${p.namespace}; ${p.version})`,
    `  Codec server:     ${p.codecUrl} (payloads ${p.encrypted ? 'compressed and encrypted' : 'compressed'}; the UI decodes through it)`,
    p.apiLine,
    `  Task queue:       ${p.taskQueue} (worker queue ${p.workerQueue})`,
    `  Data:             ${p.dataDir}`,
    'Run turns from another shell, e.g.:',
    `  npx durable-mcp run --mcp 'everything:npx -y @modelcontextprotocol/server-everything' --call 'mcp__everything__echo {"message":"hi"}'`,
    'Press Ctrl-C to stop.',
    '',
  ].join('\n');
}

/** What a forced stop kills, even when nothing may be waited for; filled in as each starts. */
interface Killable {
  pool?: { killAll(): void };
  devServerPid?: number;
}

/** Runs until a signal or until the worker stops; everything started is stopped before it returns. */
async function devCommand(): Promise<void> {
  const env = process.env;
  const settings = devSettings(commandSettings());
  const parts = await workerParts();
  const logger = cliLogger(settings);
  await parts.installRuntime({ logger, level: settings.sdkLogLevel, metrics: settings.metrics.port !== undefined });
  if (settings.temporal.address)
    throw new UsageError(
      'dev starts its own Temporal server: unset TEMPORAL_ADDRESS, or run `durable-mcp worker` against your cluster',
    );
  const existing = await runningDev(settings.dataDir);
  if (existing)
    throw new UsageError(
      `durable-mcp dev is already running (pid ${existing.pid}, ${existing.address}, UI ${existing.uiAddress ?? 'off'})`,
    );
  const dataConverter = dataConverterFor(settings);
  // Everything started is undone in reverse order, on a signal, on a failed start, or when the
  // worker stops by itself, so no server, connection or state file outlives the command.
  const undo: (() => Promise<unknown>)[] = [];
  const killable: Killable = {};
  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => {
    stopping ??= (async () => {
      logger.info({ reason }, 'stopping');
      for (const step of undo.reverse())
        await step().catch((err: unknown) => logger.warn({ err }, 'cleanup step failed'));
    })();
    return stopping;
  };
  handleStopSignals({
    notice: (signal) =>
      process.stderr.write(`stopping (${signal}): running calls may finish; send it again to stop at once\n`),
    graceful: (signal) => stop(signal),
    force: (signal) => {
      logger.warn({ signal }, 'stopping at once');
      killable.pool?.killAll();
      killGroup(killable.devServerPid);
    },
  });
  try {
    await runDev({ settings, logger, env, parts, dataConverter, undo, killable });
  } finally {
    await stop('exit');
  }
}

/**
 * Starts the codec server, the dev server, the worker and the API, each pushing its undo step,
 * prints where they are, and waits for the worker to stop.
 */
async function runDev(p: {
  settings: Settings;
  logger: Logger;
  env: NodeJS.ProcessEnv;
  parts: Awaited<ReturnType<typeof workerParts>>;
  dataConverter: ReturnType<typeof dataConverterFor>;
  undo: (() => Promise<unknown>)[];
  killable: Killable;
}): Promise<void> {
  const { settings, logger, env, dataConverter, undo } = p;
  const { NativeConnection, startCodecServer, startDevServer, startWorker, temporalCliVersion } = p.parts;
  const { port, uiPort } = settings.dev;
  // Started first: the UI learns the codec endpoint when the dev server starts.
  const codec = await startCodecServer({
    codecs: dataConverter.payloadCodecs ?? [],
    externalStorage: dataConverter.externalStorage,
    port: settings.dev.codecPort,
    token: settings.dev.codecToken,
  });
  undo.push(() => codec.close());
  progress('starting the Temporal dev server...');
  const server = await startDevServer({
    dbFile: devDbFile(settings.dataDir),
    port,
    uiPort,
    env,
    codecEndpoint: codec.url,
    ownProcessGroup: true,
  });
  p.killable.devServerPid = server.pid;
  undo.push(() => server.stop());
  const taskQueue = settings.taskQueue;
  const connection = await NativeConnection.connect({ address: server.address });
  undo.push(() => connection.close());
  const worker = await startWorker({ connection, logger, env, settings, taskQueue, dataConverter });
  p.killable.pool = worker.pool;
  undo.push(() => worker.shutdown());
  const apiLine = await devApi(
    settings,
    logger,
    { address: server.address, namespace: server.namespace, taskQueue },
    undo,
  );
  await writeDevState(
    {
      address: server.address,
      namespace: server.namespace,
      uiAddress: server.uiAddress,
      pid: process.pid,
      serverPid: server.pid,
      taskQueue,
    },
    settings.dataDir,
  );
  undo.push(() => removeDevState(settings.dataDir));
  const version = await temporalCliVersion(server.binary).catch(() => 'unknown version');
  process.stdout.write(
    runningLines({
      uiAddress: server.uiAddress,
      address: server.address,
      namespace: server.namespace,
      version,
      codecUrl: codec.url,
      encrypted: Boolean(settings.payloads.encryptionKey),
      apiLine,
      taskQueue,
      workerQueue: worker.workerQueue,
      dataDir: settings.dataDir,
    }),
  );
  await worker.done;
}

/** Adds `durable-mcp dev` to the program. */
export function registerDevCommand(program: Command): void {
  program
    .command('dev')
    .description('start the embedded Temporal dev server (with UI), a worker, and print the UI address')
    .action(devCommand);
}
