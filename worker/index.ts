/**
 * `startWorker`: the worker of `durable-mcp worker`, `run` and `dev`, a thin user of the plugin: one
 * Worker on the shared queue with {@link DurableMcpPlugin}, which runs the worker's own queue beside it.
 */
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { ServerPool } from '../mcp/pool.js';
import { loadSettings } from '../settings/index.js';
import type { MetricsServer } from './metrics.js';
import { bundleWorkflows, deploymentOptions, workerBoundary, type WorkerPartsOptions } from './parts.js';
import { DurableMcpPlugin } from './plugin.js';

export {
  bundleWorkflows,
  createWorkerParts,
  workerBoundary,
  workflowsPath,
  type WorkerParts,
  type WorkerPartsOptions,
  type WorkerRole,
} from './parts.js';
export { DurableMcpPlugin, type DurableMcpPluginOptions } from './plugin.js';

/** Options of {@link startWorker}. */
export interface StartWorkerOptions extends WorkerPartsOptions {
  connection: NativeConnection;
  namespace?: string;
  /** A prebuilt workflow bundle (code or `{ codePath }`); without it the worker bundles on start. */
  workflowBundle?: WorkflowBundleOption;
  /** Codecs and external storage; clients must use the same (see `dataConverterFor`). */
  dataConverter?: DataConverter;
  /** How often idle sessions are looked for (default: a quarter of DMCP_SESSION_IDLE, within 100 ms..60 s). */
  idleCheckIntervalMs?: number;
  /** Workflow cache size of the shared worker (SDK default); 0 replays every workflow task from the start. */
  maxCachedWorkflows?: number;
  /**
   * The Temporal runtime's own Prometheus endpoint, served with the worker's metrics when
   * DMCP_METRICS_PORT is set. Default: the one `installRuntime({ metrics: true })` set up, if any.
   */
  runtimeMetricsUrl?: string;
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
  const taskQueue = options.taskQueue ?? settings.taskQueue;
  const plugin = new DurableMcpPlugin({
    env,
    settings,
    logger: options.logger,
    boundary: options.boundary ?? (await workerBoundary(settings, 'embedded')),
    // Without one, the SDK's default converter, as its callers' clients use.
    dataConverter: options.dataConverter ?? {},
    ...(options.idleCheckIntervalMs !== undefined ? { idleCheckIntervalMs: options.idleCheckIntervalMs } : {}),
    ...(options.runtimeMetricsUrl !== undefined ? { runtimeMetricsUrl: options.runtimeMetricsUrl } : {}),
  });
  const shared = await Worker.create({
    connection: options.connection,
    namespace: options.namespace ?? settings.temporal.namespace,
    taskQueue,
    workflowBundle: options.workflowBundle ?? (await bundleWorkflows()),
    plugins: [plugin],
    ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
    ...(settings.deployment ? { workerDeploymentOptions: deploymentOptions(settings.deployment) } : {}),
  });
  const prepared = await plugin.ready();
  const done = shared.run();
  let stopping: Promise<void> | undefined;
  const shutdown = () => {
    stopping ??= (async () => {
      if (shared.getState() === 'RUNNING') shared.shutdown();
      await done;
    })();
    return stopping;
  };
  return {
    workerQueue: prepared.workerQueue,
    taskQueue,
    pool: prepared.pool,
    done,
    shutdown,
    ...(prepared.metricsServer ? { metrics: prepared.metricsServer } : {}),
  };
}

export { NativeConnection };
