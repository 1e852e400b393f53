/** What a worker is made of, apart from its pollers: shared by `startWorker` and the plugin. */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkerDeploymentOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities, type Activities } from '../activities/index.js';
import { ensureTurnKey, loadConfig } from '../config/load.js';
import type { ConfigIO } from '../config/configIO.js';
import type { Boundary } from '../config/types.js';
import { requestHeaders, scrubSecrets, serverEnvironment } from '../config/secrets.js';
import { ServerPool } from '../mcp/pool.js';
import type { Settings } from '../settings/index.js';
import { createGovernance } from '../governance/index.js';
import { createWorkerShelf, type WorkerShelf } from './shelf.js';
import { sandboxHiddenPaths, sandboxHome } from './sandboxPaths.js';
import { createWorkerMetrics, type WorkerMetrics } from './metrics.js';
import { conversationStoreFor } from '../models/conversationStore.js';
import { createModelService } from '../models/modelStep.js';
import { stepTextStoreFor } from '../payloads/streamLog.js';
import { configSettings } from '../settings/index.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));

/** Bundles the workflow code once; tests and multi-worker processes share the bundle. */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger });
}

/** The bundler's logger: its warnings and errors on stderr, nothing else. */
export const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string) => process.stderr.write(`${m}\n`),
  error: (m: string) => process.stderr.write(`${m}\n`),
};

/** What the parts of a worker are made from (see {@link createWorkerParts}). */
export interface WorkerPartsOptions {
  logger: Logger;
  /**
   * The worker's environment: what stdio servers inherit (minus secrets), what config files
   * expand, and the secrets servers may receive. Default: this process's environment.
   */
  env?: NodeJS.ProcessEnv;
  /** Parsed settings; default: `loadSettings(env)`. */
  settings?: Settings;
  /** Overrides the shared queue from DMCP_TASK_QUEUE (tests give each its own). */
  taskQueue?: string;
  /**
   * What this worker honours of a turn's references (inline specs, config files, plugins, the
   * workspace layer). Default: `workerBoundary(settings, 'embedded')`, the defaults of a worker
   * whose callers are its operator, with the turn key under the data dir; a worker joined to a
   * shared cluster passes `workerBoundary(settings, 'joined')`.
   */
  boundary?: Boundary;
  /** How config files are read (default: the file system); the plugin serves its `mcpServers` option through it. */
  configIO?: ConfigIO;
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

/** A new unique queue for one worker process: `<taskQueue>@<host>-<pid>-<random>`. */
export function newWorkerQueue(taskQueue: string): string {
  return `${taskQueue}@${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
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
  options: WorkerPartsOptions,
  settings: Settings,
  env: NodeJS.ProcessEnv,
  made: { workerQueue?: string; metrics?: WorkerMetrics } = {},
): Promise<WorkerParts> {
  const taskQueue = options.taskQueue ?? settings.taskQueue;
  const workerQueue = made.workerQueue ?? newWorkerQueue(taskQueue);
  const logger = options.logger.child({ workerQueue });
  const scrub = (text: string) => scrubSecrets(text, env);
  const boundary = options.boundary ?? (await workerBoundary(settings, 'embedded'));
  const metrics = made.metrics ?? (settings.metrics.port !== undefined ? createWorkerMetrics() : undefined);
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
        await loadConfig(refs, env, options.configIO, {
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
    sharedCalls: settings.sharedCalls,
    models: createModelService({
      ...optionalConfigDir(configSettings(env).configDir),
      env,
      store: conversationStoreFor(settings),
      logger,
      shapeLimits: settings.shape,
    }),
    stepText: stepTextStoreFor(settings),
  });
  metrics?.watchPool(pool);
  return { taskQueue, workerQueue, logger, pool, shelf, activities, ...(metrics ? { metrics } : {}) };
}

/**
 * The shared poller as a worker deployment version. A workflow is pinned unless it says otherwise:
 * it runs to its end on the build that started it, which alone can replay its history.
 */
export function deploymentOptions(deployment: NonNullable<Settings['deployment']>): WorkerDeploymentOptions {
  return {
    useWorkerVersioning: true,
    version: { deploymentName: deployment.name, buildId: deployment.buildId },
    defaultVersioningBehavior: 'PINNED',
  };
}

function optionalConfigDir(configDir: string | undefined): { configDir?: string } {
  return configDir !== undefined ? { configDir } : {};
}
