import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities } from '../activities/index.js';
import { loadConfig } from '../config/load.js';
import { scrubSecrets, serverEnvironment } from '../config/secrets.js';
import { ServerPool } from '../mcp/pool.js';
import { parseToolPrefix } from '../mcp/toolNames.js';
import { durationFromEnv, sharedTaskQueue } from './settings.js';

export const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));

/** Bundles the workflow code once; tests and multi-worker processes share the bundle. */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined,
  warn: (m: string) => process.stderr.write(`${m}\n`), error: (m: string) => process.stderr.write(`${m}\n`),
};

/** Options of {@link startWorker}. */
export interface StartWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  logger: Logger;
  /** The worker's environment: settings, config dir and the secrets servers may receive. */
  env?: NodeJS.ProcessEnv;
  /** A prebuilt workflow bundle; without it the worker bundles on start. */
  workflowBundle?: WorkflowBundleWithSourceMap;
  /** Overrides the shared queue from DMCP_TASK_QUEUE (tests give each its own). */
  taskQueue?: string;
}

export interface RunningWorker {
  /** This worker's unique queue: `durable-mcp@<host>-<pid>-<random>`. */
  workerQueue: string;
  taskQueue: string;
  pool: ServerPool;
  /** Resolves when both pollers have stopped and every server is stopped. */
  done: Promise<void>;
  /** Graceful shutdown: stop polling, let running activities finish, stop every server. */
  shutdown(): Promise<void>;
}

/**
 * Starts a worker that polls the shared queue (workflows and reconciliation) and its own unique
 * queue (every later activity of a turn it reconciled), DESIGN 2.1.
 */
export async function startWorker(options: StartWorkerOptions): Promise<RunningWorker> {
  const env = options.env ?? process.env;
  const taskQueue = options.taskQueue ?? sharedTaskQueue(env);
  const workerQueue = `${taskQueue}@${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  const logger = options.logger.child({ workerQueue });
  const scrub = (text: string) => scrubSecrets(text, env);
  const pool = new ServerPool({
    logger,
    environmentFor: (entry) => serverEnvironment(entry, env),
    scrub,
    startTimeoutMs: durationFromEnv(env, 'DMCP_START_TIMEOUT', '10s'),
    toolPrefix: parseToolPrefix(env.DMCP_TOOL_PREFIX),
  });
  const activities = createActivities({
    pool,
    workerQueue,
    loadConfig: (refs) => loadConfig(refs, env),
    logger,
    scrub,
  });
  const workflowBundle = options.workflowBundle ?? (await bundleWorkflows());
  const namespace = options.namespace ?? env.TEMPORAL_NAMESPACE ?? 'default';
  const shared = await Worker.create({ connection: options.connection, namespace, taskQueue, workflowBundle, activities });
  const pinned = await Worker.create({ connection: options.connection, namespace, taskQueue: workerQueue, activities });

  const idleMs = durationFromEnv(env, 'DMCP_SESSION_IDLE', '10m');
  const idleTimer = setInterval(() => {
    pool.stopIdle(idleMs).catch((err: unknown) => logger.warn({ err }, 'stopping idle sessions failed'));
  }, Math.min(idleMs, 60_000));
  idleTimer.unref();

  const done = Promise.all([shared.run(), pinned.run()]).finally(async () => {
    clearInterval(idleTimer);
    await pool.shutdown();
    logger.info('worker stopped');
  }).then(() => undefined);

  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= (async () => {
      for (const w of [shared, pinned]) {
        if (w.getState() === 'RUNNING') w.shutdown();
      }
      await done;
    })();
    return stopping;
  };
  logger.info({ taskQueue }, 'worker started');
  return { workerQueue, taskQueue, pool, done, shutdown };
}

export { NativeConnection };
