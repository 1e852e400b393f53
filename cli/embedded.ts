import type { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import { TUNED_MAX_IN_FLIGHT_UPDATES, startDevServer, type DevServer } from '../dev/devServer.js';
import { TurnClient } from '../client/turnClient.js';
import type { RunningWorker } from '../worker/index.js';
import { ensureTurnKey } from '../config/load.js';
import { isSecretName } from '../config/secrets.js';
import { dataConverterFor } from '../payloads/dataConverter.js';
import { stepTextStoreFor } from '../payloads/streamLog.js';
import type { Settings } from '../settings/index.js';
import { handleStopSignals, killGroup } from './signals.js';
import { devDbFile, findTemporalServer } from './temporalServer.js';

/** Warm spares per trusted stdio server that `dev` keeps when DMCP_WARM_SPARES is not set. */
export const DEV_WARM_SPARES = 1;

/**
 * The settings `dev` runs with: the environment's, except one warm spare per trusted stdio server
 * unless DMCP_WARM_SPARES is set (`worker` and the embedded server of `run` keep its default, 0). On
 * a developer's machine new sessions come one at a time, and each would otherwise start its servers.
 */
export function devSettings(settings: Settings): Settings {
  if (settings.given.has('DMCP_WARM_SPARES')) return settings;
  return { ...settings, warmSpares: DEV_WARM_SPARES };
}

/** A Temporal connection for a command, and whatever was started to provide it. */
export interface Session {
  client: TurnClient;
  /** Where it connected and why. */
  mode: 'TEMPORAL_ADDRESS' | 'dev' | 'embedded';
  address: string;
  worker?: RunningWorker;
  /** The dev server this command started (its own process group), if it started one. */
  serverPid?: number;
  close(): Promise<void>;
}

/**
 * The secret variables of the caller's environment, by name: a turn or call holding one of these
 * values is refused before it reaches history (see `TurnClientOptions.secrets`).
 */
export function secretsOf(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value && isSecretName(name, env)) out[name] = value;
  return out;
}

/** Options of {@link connect}. */
export interface ConnectOptions {
  logger: Logger;
  /** Start an in-process worker when this command starts its own dev server. */
  withWorker: boolean;
  settings: Settings;
  /** The in-process worker's environment (what its servers inherit, minus secrets). */
  env: NodeJS.ProcessEnv;
  /** Progress a person at a terminal may like to see (the CLI prints it only there). */
  progress?: (m: string) => void;
  /**
   * What the user must be told whatever reads the output: that no running server was found and one
   * is started for this command alone (its turns show only in a dev on the same data dir). Default: `progress`.
   */
  notice?: (m: string) => void;
}

/** What every TurnClient of a command is made with, wherever it connects. */
type ClientSettings = Omit<Parameters<typeof TurnClient.connect>[0], 'address' | 'namespace' | 'taskQueue'> & {
  dataConverter: ReturnType<typeof dataConverterFor>;
};

/**
 * Connects in the documented order: TEMPORAL_ADDRESS when set; otherwise a running
 * `durable-mcp dev`; otherwise a dev server on the persistent database for this command only
 * (plus an in-process worker when `withWorker`), so history outlives the command.
 */
export async function connect(options: ConnectOptions): Promise<Session> {
  const { settings, env } = options;
  const taskQueue = settings.taskQueue;
  // The client signs turns with the operator's key from the data dir, which a running `dev` or the
  // embedded worker below honours; a cluster's workers need the same key file to honour them.
  const clientSettings: ClientSettings = {
    dataConverter: dataConverterFor(settings),
    stepText: stepTextStoreFor(settings),
    turnIdleMs: settings.turnIdleMs,
    inputTimeoutMs: settings.inputTimeoutMs,
    legacyInputTimeoutMs: settings.legacyInputTimeoutMs,
    shapeLimits: settings.shape,
    dataDir: settings.dataDir,
    secrets: secretsOf(env),
  };
  const found = await findTemporalServer(env, { dataDir: settings.dataDir, keepDevConnection: true });
  if (found && !found.dev) {
    const { address } = found;
    const client = await TurnClient.connect({
      address,
      connection: found.options,
      namespace: found.namespace,
      taskQueue,
      ...clientSettings,
    });
    return { client, mode: 'TEMPORAL_ADDRESS', address, close: () => client.close() };
  }
  if (found?.dev && found.devConnection) {
    const { dev, devConnection: connection } = found;
    // Its own namespace, even when TEMPORAL_NAMESPACE names another: only the dev's worker serves these turns.
    // `dev` and the embedded server below are started tuned: they admit more parallel calls per turn.
    const client = await TurnClient.connect({
      address: dev.address,
      connected: connection,
      namespace: dev.namespace,
      taskQueue: dev.taskQueue,
      ...clientSettings,
      maxCallsInFlight: TUNED_MAX_IN_FLIGHT_UPDATES,
    }).catch(async (err: unknown) => {
      await connection.close();
      throw err;
    });
    return { client, mode: 'dev', address: dev.address, close: () => client.close() };
  }
  return startEmbedded(options, clientSettings);
}

/**
 * A dev server on the persistent database for this command only, a client signing with the
 * operator's key, and an in-process worker when asked; whatever started is stopped on a failure.
 */
async function startEmbedded(options: ConnectOptions, clientSettings: ClientSettings): Promise<Session> {
  const { settings, env } = options;
  (options.notice ?? options.progress)?.(
    `no durable-mcp dev is running on the data dir ${settings.dataDir} and TEMPORAL_ADDRESS is unset: ` +
      'starting a Temporal dev server for this command alone (to use a dev started elsewhere, set ' +
      'DMCP_DATA_DIR to its data dir, or TEMPORAL_ADDRESS to its server)',
  );
  const server: DevServer = await startDevServer({
    dbFile: devDbFile(settings.dataDir),
    headless: true,
    env,
    ownProcessGroup: true,
  });
  let worker: RunningWorker | undefined;
  let nativeConnection: NativeConnection | undefined;
  let client: TurnClient | undefined;
  // Each step runs even if an earlier one failed: the dev server must never be left behind.
  const closeAll = async () => {
    for (const step of [
      () => worker?.shutdown(),
      () => nativeConnection?.close(),
      () => client?.close(),
      () => server.stop(),
    ]) {
      await Promise.resolve()
        .then(step)
        .catch((err: unknown) => options.logger.warn({ err }, 'cleanup step failed'));
    }
  };
  try {
    const turnKey = await ensureTurnKey(settings.dataDir);
    client = await TurnClient.connect({
      address: server.address,
      namespace: settings.temporal.namespace,
      taskQueue: settings.taskQueue,
      ...clientSettings,
      turnKey,
      maxCallsInFlight: TUNED_MAX_IN_FLIGHT_UPDATES,
    });
    if (options.withWorker)
      worker = await startEmbeddedWorker(
        options,
        server.address,
        clientSettings.dataConverter,
        (c) => (nativeConnection = c),
      );
    let closing: Promise<void> | undefined;
    return {
      client,
      mode: 'embedded',
      address: server.address,
      worker,
      serverPid: server.pid,
      close: () => (closing ??= closeAll()),
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/**
 * The in-process worker of an embedded dev server; `connected` learns its connection as soon as it
 * exists, so a failed start still closes it.
 */
async function startEmbeddedWorker(
  options: ConnectOptions,
  address: string,
  dataConverter: ReturnType<typeof dataConverterFor>,
  connected: (connection: NativeConnection) => void,
): Promise<RunningWorker> {
  const { settings, env } = options;
  // Loaded only here: a command that talks to a running `dev` or a cluster needs no worker code.
  const { NativeConnection, startWorker, workerBoundary } = await import('../worker/index.js');
  const { installRuntime } = await import('../worker/runtimeLogger.js');
  await installRuntime({
    logger: options.logger,
    level: settings.sdkLogLevel,
    metrics: settings.metrics.port !== undefined,
  });
  const connection = await NativeConnection.connect({ address });
  connected(connection);
  const boundary = await workerBoundary(settings, 'embedded');
  return startWorker({
    connection,
    logger: options.logger,
    env,
    settings,
    taskQueue: settings.taskQueue,
    dataConverter,
    boundary,
  });
}

/** Ctrl-C or SIGTERM during a one-shot command: stop its in-process worker and the dev server it started, then leave. */
export function stopOnSignals(session: Session): void {
  handleStopSignals(
    {
      graceful: () => session.close(),
      force: () => {
        session.worker?.pool.killAll();
        killGroup(session.serverPid);
      },
    },
    ['SIGINT', 'SIGTERM'],
  );
}
