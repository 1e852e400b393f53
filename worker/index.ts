import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  NativeConnection,
  Worker,
  bundleWorkflowCode,
  type WorkerDeploymentOptions,
  type WorkflowBundleOption,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Logger } from 'pino';
import { createActivities, type Activities } from '../activities/index.js';
import { ensureTurnKey, loadConfig } from '../config/load.js';
import type { Boundary } from '../config/types.js';
import { requestHeaders, scrubSecrets, serverEnvironment } from '../config/secrets.js';
import { ServerPool } from '../mcp/pool.js';
import { loadSettings, type Settings } from '../settings/index.js';
import { createGovernance } from '../governance/index.js';
import { createWorkerShelf, type WorkerShelf } from './shelf.js';
import { sandboxHiddenPaths, sandboxHome } from './sandboxPaths.js';
import { createWorkerMetrics, startMetricsServer, type MetricsServer, type WorkerMetrics } from './metrics.js';
import { runtimeMetricsUrl } from './runtimeLogger.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));

/** Bundles the workflow code once; tests and multi-worker processes share the bundle. */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string) => process.stderr.write(`${m}\n`),
  error: (m: string) => process.stderr.write(`${m}\n`),
};

/** Options of {@link startWorker}. */
export interface StartWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  logger: Logger;
  /**
   * The worker's environment: what stdio servers inherit (minus secrets), what config files
   * expand, and the secrets servers may receive. Default: this process's environment.
   */
  env?: NodeJS.ProcessEnv;
  /** Parsed settings; default: `loadSettings(env)`. */
  settings?: Settings;
  /** A prebuilt workflow bundle (code or `{ codePath }`); without it the worker bundles on start. */
  workflowBundle?: WorkflowBundleOption;
  /** Codecs and external storage; clients must use the same (see `dataConverterFor`). */
  dataConverter?: DataConverter;
  /** Overrides the shared queue from DMCP_TASK_QUEUE (tests give each its own). */
  taskQueue?: string;
  /** How often idle sessions are looked for (default: a quarter of DMCP_SESSION_IDLE, within 100 ms..60 s). */
  idleCheckIntervalMs?: number;
  /** Workflow cache size of the shared worker (SDK default); 0 replays every workflow task from the start. */
  maxCachedWorkflows?: number;
  /**
   * What this worker honours of a turn's references (inline specs, config files, plugins, the
   * workspace layer). Default: `workerBoundary(settings, 'embedded')`, the defaults of a worker
   * whose callers are its operator, with the turn key under the data dir; a worker joined to a
   * shared cluster passes `workerBoundary(settings, 'joined')`.
   */
  boundary?: Boundary;
  /**
   * The Temporal runtime's own Prometheus endpoint, served with the worker's metrics when
   * DMCP_METRICS_PORT is set. Default: the one `installRuntime({ metrics: true })` set up, if any.
   */
  runtimeMetricsUrl?: string;
}

/**
 * Who starts the worker, which decides the defaults of what it honours: `embedded` for `run` and
 * `dev` (the caller is the operator), `joined` for `durable-mcp worker` on a cluster that others
 * can start workflows on.
 */
export type WorkerRole = 'embedded' | 'joined';

/**
 * The boundary of a worker from its settings. Unset settings take the role's defaults: an embedded
 * worker honours inline specs and config files anywhere, a joined one no inline specs, no config
 * files and no workspace layer until its operator lists them. Either way the references a turn
 * chooses need a proof made with the turn key in the data dir (created here on first use), because
 * neither the dev server's port nor a cluster's start permission says who chose them. Inline
 * servers start in this process's working directory, which the operator chose, not the turn.
 */
export async function workerBoundary(
  settings: Settings,
  role: WorkerRole,
  cwd: string = process.cwd(),
): Promise<Boundary> {
  const embedded = role === 'embedded';
  const b = settings.boundary;
  return {
    allowInline: b.allowInline ?? embedded,
    allowedConfigDirs: b.allowedConfigDirs ?? (embedded ? undefined : []),
    workspaceRoots: b.workspaceRoots ?? (embedded ? undefined : []),
    turnKey: await ensureTurnKey(settings.dataDir),
    inlineCwd: cwd,
  };
}

export interface RunningWorker {
  /** This worker's unique queue: `durable-mcp@<host>-<pid>-<random>`. */
  workerQueue: string;
  taskQueue: string;
  pool: ServerPool;
  /** Resolves when both pollers have stopped and every server is stopped. */
  done: Promise<void>;
  /** The `/metrics` endpoint (DMCP_METRICS_PORT set), closed when the worker is done. */
  metrics?: MetricsServer;
  /** Graceful shutdown: stop polling, let running activities finish, stop every server. */
  shutdown(): Promise<void>;
}

/**
 * Starts a worker that polls the shared queue (workflows and reconciliation) and its own unique
 * queue (every later activity of a turn it reconciled).
 */
export async function startWorker(options: StartWorkerOptions): Promise<RunningWorker> {
  const env = options.env ?? process.env;
  const settings = options.settings ?? loadSettings(env);
  const parts = await createWorkerParts(options, settings, env);
  const pollers = await createPollers(options, settings, parts);
  return runPollers(options, settings, parts, pollers);
}

/** What a worker is made of apart from its pollers. */
export interface WorkerParts {
  taskQueue: string;
  /** This worker's unique queue: `<taskQueue>@<host>-<pid>-<random>`. */
  workerQueue: string;
  /** The worker's logger, naming its unique queue. */
  logger: Logger;
  pool: ServerPool;
  shelf: WorkerShelf;
  activities: Activities;
  /** Present when DMCP_METRICS_PORT is set. */
  metrics?: WorkerMetrics;
}

/** The server pool, the operator's governance, the shelf, the activities over them, and the metrics; nothing polls yet. */
export async function createWorkerParts(
  options: StartWorkerOptions,
  settings: Settings,
  env: NodeJS.ProcessEnv,
): Promise<WorkerParts> {
  const taskQueue = options.taskQueue ?? settings.taskQueue;
  const workerQueue = `${taskQueue}@${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  const logger = options.logger.child({ workerQueue });
  const scrub = (text: string) => scrubSecrets(text, env);
  const boundary = options.boundary ?? (await workerBoundary(settings, 'embedded'));
  const metrics = settings.metrics.port !== undefined ? createWorkerMetrics() : undefined;
  const shelf = createWorkerShelf({ settings, taskQueue, turnKey: boundary.turnKey, env, logger });
  const pool = new ServerPool({
    credentials: shelf.credentials,
    ...(metrics ? { observer: metrics.observer } : {}),
    // A turn's workspace is offered to servers as their MCP root where its workspace layer could be read.
    ...(boundary.workspaceRoots ? { rootsWithin: boundary.workspaceRoots } : {}),
    logger,
    environmentFor: (entry) => serverEnvironment(entry, env),
    requestHeadersFor: (entry) => requestHeaders(entry, env),
    scrub,
    startTimeoutMs: settings.startTimeoutMs,
    toolPrefix: settings.toolPrefix,
    warmSpares: settings.warmSpares,
    // Untrusted servers must not see the turn key, the payload store, the trusted config, the
    // worker's credentials, nor its home.
    untrustedStdio: {
      mode: settings.untrustedStdio.mode,
      bwrap: settings.untrustedStdio.bwrap,
      hiddenPaths: sandboxHiddenPaths(settings, env),
      ...(sandboxHome(env) !== undefined ? { home: sandboxHome(env) } : {}),
      path: env.PATH,
      lang: env.LANG,
    },
  });
  // The operator's allowed-tools rules and hooks: from the worker's settings and its config dir only.
  const governance = createGovernance({ env, ...settings.governance, scrub });
  const activities = createActivities({
    pool,
    workerQueue,
    loadConfig: async (refs, turn) =>
      shelf.withLoginIds(
        await loadConfig(refs, env, undefined, {
          boundary,
          sessionId: turn.sessionId,
          shelf: (agent) => shelf.layerFor(agent),
        }),
      ),
    logger,
    scrub,
    governance,
    turnKey: boundary.turnKey,
    fastPath: settings.fastPath,
    eagerCalls: settings.eagerCalls,
  });
  metrics?.watchPool(pool);
  return { taskQueue, workerQueue, logger, pool, shelf, activities, ...(metrics ? { metrics } : {}) };
}

/** The worker's two pollers, created but not yet running. */
interface Pollers {
  /** Polls the shared queue: workflows and reconciliation. */
  shared: Worker;
  /** Polls the worker's unique queue: the activities of the turns it reconciled. */
  pinned: Worker;
}

async function createPollers(options: StartWorkerOptions, settings: Settings, parts: WorkerParts): Promise<Pollers> {
  const { activities, metrics } = parts;
  const interceptors = metrics ? { activity: [metrics.interceptor] } : undefined;
  const workflowBundle = options.workflowBundle ?? (await bundleWorkflows());
  const namespace = options.namespace ?? settings.temporal.namespace;
  const dataConverter = options.dataConverter;
  const shutdownGraceTime = settings.shutdownGraceMs;
  // Both pollers name themselves by the worker's own queue (it holds host and PID): a turn's history
  // then says which worker ran each task, and a fast-path miss can tell that the worker holding the
  // session's servers let a workflow task time out (activities/callTool.ts).
  const identity = parts.workerQueue;
  const shared = await Worker.create({
    connection: options.connection,
    namespace,
    taskQueue: parts.taskQueue,
    workflowBundle,
    activities,
    dataConverter,
    ...(interceptors ? { interceptors } : {}),
    // After a worker dies, each workflow task of its turns first waits out this timeout on the dead
    // worker's sticky queue (SDK default 10 s); see docs/performance.md for the figures. The cost: a
    // live worker stalled this long hands the turn to another, which replays it.
    stickyQueueScheduleToStartTimeout: settings.stickyWaitMs,
    shutdownGraceTime,
    identity,
    ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
    ...(settings.deployment ? { workerDeploymentOptions: deploymentOptions(settings.deployment) } : {}),
  });
  // The worker's own client (over its connection) reads the shelf for turns that name an agent.
  if (shared.client) parts.shelf.attach(shared.client);
  // Running calls get this long to finish on shutdown before they are cancelled (SDK default: 0,
  // which would abort side-effecting calls mid-flight on every deploy). This poller stays
  // unversioned even in a worker deployment: only this process polls its queue, so a version would
  // collect one dead queue per restart. Turns of a newer build still call the servers held here.
  const pinned = await Worker.create({
    connection: options.connection,
    namespace,
    taskQueue: parts.workerQueue,
    identity,
    activities,
    dataConverter,
    shutdownGraceTime,
    ...(interceptors ? { interceptors } : {}),
  });
  return { shared, pinned };
}

/**
 * The shared poller as a worker deployment version. A workflow is pinned unless it says otherwise:
 * it runs to its end on the build that started it, which alone can replay its history.
 */
function deploymentOptions(deployment: NonNullable<Settings['deployment']>): WorkerDeploymentOptions {
  return {
    useWorkerVersioning: true,
    version: { deploymentName: deployment.name, buildId: deployment.buildId },
    defaultVersioningBehavior: 'PINNED',
  };
}

/** Runs both pollers, serves the metrics and stops idle sessions until shutdown; then stops every server. */
async function runPollers(
  options: StartWorkerOptions,
  settings: Settings,
  parts: WorkerParts,
  { shared, pinned }: Pollers,
): Promise<RunningWorker> {
  const { taskQueue, workerQueue, pool, logger, metrics } = parts;
  const metricsServer =
    metrics && settings.metrics.port !== undefined
      ? await startMetricsServer({
          registry: metrics.registry,
          host: settings.metrics.host,
          port: settings.metrics.port,
          runtimeUrl: options.runtimeMetricsUrl ?? runtimeMetricsUrl(),
          logger,
        })
      : undefined;

  const idleMs = settings.sessionIdleMs;
  // A session stops between idleMs and idleMs + interval after its last use.
  const idleCheckMs = options.idleCheckIntervalMs ?? Math.min(Math.max(Math.floor(idleMs / 4), 100), 60_000);
  const idleTimer = setInterval(() => {
    pool.stopIdle(idleMs).catch((err: unknown) => logger.warn({ err }, 'stopping idle sessions failed'));
  }, idleCheckMs);
  idleTimer.unref();

  const stopPolling = () => {
    for (const w of [shared, pinned]) {
      if (w.getState() === 'RUNNING') w.shutdown();
    }
  };
  // If one of the two workers stops (or fails), the other one must not keep taking work for servers
  // that are about to be stopped.
  const runs = [shared, pinned].map((w) => w.run().finally(stopPolling));
  const done = Promise.allSettled(runs).then(async (results) => {
    clearInterval(idleTimer);
    await pool.shutdown();
    await metricsServer?.close();
    logger.info('worker stopped');
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  });

  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= (async () => {
      stopPolling();
      await done;
    })();
    return stopping;
  };
  logger.info({ taskQueue, ...(metricsServer ? { metrics: metricsServer.url } : {}) }, 'worker started');
  return { workerQueue, taskQueue, pool, done, shutdown, ...(metricsServer ? { metrics: metricsServer } : {}) };
}

export { NativeConnection };
