/**
 * `durable-mcp/plugin`: durable-mcp in a user's own Temporal worker and client.
 *
 *   const plugin = new DurableMcpPlugin({ configDir: '/etc/agents' });
 *   const worker = await Worker.create({ connection, taskQueue: 'agents', workflowsPath, plugins: [plugin] });
 *   const client = new Client({ connection: await Connection.connect(), plugins: [plugin] });
 */
import { SimplePlugin } from '@temporalio/plugin';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type BundleOptions, type WorkerOptions } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Logger } from 'pino';
import type { Activities } from '../activities/index.js';
import { ActivityName } from '../contract/index.js';
import { nodeConfigIO, type ConfigIO } from '../config/configIO.js';
import type { Boundary } from '../config/types.js';
import { dataConverterFor } from '../payloads/dataConverter.js';
import { configSettings, loadSettings, type Settings } from '../settings/index.js';
import { createLogger } from './logger.js';
import { createWorkerMetrics, startMetricsServer, type MetricsServer } from './metrics.js';
import { createWorkerParts, newWorkerQueue, workerBoundary, workflowsPath, type WorkerParts } from './parts.js';
import { runtimeMetricsUrl } from './runtimeLogger.js';

/** Options of {@link DurableMcpPlugin}; each falls back to the environment, as the `durable-mcp worker` command does. */
export interface DurableMcpPluginOptions {
  /**
   * The trusted config dir whose `mcp.json` names the servers sessions may open (overrides
   * DMCP_CONFIG_DIR). Only the worker's operator chooses it; workflow code names servers from it.
   */
  configDir?: string;
  /**
   * The servers, as the `mcpServers` object of an `mcp.json`, given in code instead of a config
   * dir (not both). Validated as that file would be; its problems name `<dataDir>/plugin/mcp.json`.
   */
  mcpServers?: Record<string, unknown>;
  /**
   * The worker's environment: what stdio servers inherit (minus secrets), what config files expand,
   * the secrets servers may receive, and every DMCP_ setting. Default: this process's environment.
   */
  env?: NodeJS.ProcessEnv;
  /** Parsed settings; default: `loadSettings(env)` (see docs/settings.md). */
  settings?: Settings;
  /** The worker's logger (pino); default: JSON lines on stderr at DMCP_LOG_LEVEL. */
  logger?: Logger;
  /**
   * The data converter of both the worker and the client (payload codec, payload store); default:
   * the one the settings describe (`dataConverterFor(settings)`). Every client of the worker must use the same.
   */
  dataConverter?: DataConverter;
  /**
   * What the worker honours of turns started from outside (TurnClient, the CLI, the API): inline
   * specs, config files, the workspace layer. Default: `workerBoundary(settings, 'joined')`, none of
   * them until the operator lists them, since whoever can start a workflow on the worker's task
   * queue is not necessarily its operator. Sessions opened from workflow code use the trusted layers only.
   */
  boundary?: Boundary;
  /** How often idle sessions are looked for (default: a quarter of DMCP_SESSION_IDLE, within 100 ms..60 s). */
  idleCheckIntervalMs?: number;
  /** The Temporal runtime's own Prometheus endpoint, served with the worker's metrics when DMCP_METRICS_PORT is set. */
  runtimeMetricsUrl?: string;
}

const aiSdkPolyfills = fileURLToPath(new URL('../workflows/aiSdkPolyfills.js', import.meta.url));

/** A worker's parts once made, and its metrics endpoint. */
export interface PreparedWorker extends WorkerParts {
  metricsServer?: MetricsServer;
}

/**
 * Registers durable-mcp's activities (and, when the worker names no workflows of its own, its
 * workflows) on a Worker, sets the data converter on the Worker and the Client, and runs the
 * worker's own queue beside it: the queue every later activity of a session it reconciled is sent
 * to, since only this process holds that session's servers. One plugin per Worker.
 */
export class DurableMcpPlugin extends SimplePlugin {
  private readonly env: NodeJS.ProcessEnv;
  private readonly configIO: ConfigIO | undefined;
  private readonly settings: Settings;
  private readonly logger: Logger;
  private readonly converter: DataConverter;
  private prepared: Promise<PreparedWorker> | undefined;
  /** The worker's own queue, once a Worker was configured: its poller is the plugin's own. */
  private ownQueue: string | undefined;

  constructor(private readonly dmcp: DurableMcpPluginOptions = {}) {
    const { env, configIO } = operatorConfig(dmcp);
    const settings = dmcp.settings ?? loadSettings(env);
    const converter = dmcp.dataConverter ?? dataConverterFor(settings);
    super({ name: 'durable-mcp', dataConverter: converter });
    this.env = env;
    this.configIO = configIO;
    this.settings = settings;
    this.converter = converter;
    this.logger = dmcp.logger ?? createLogger({ level: settings.logLevel });
  }

  /** The worker's parts, once a Worker was created with the plugin; rejects with why they could not be made. */
  ready(): Promise<PreparedWorker> {
    if (!this.prepared) return Promise.reject(new Error('no Worker was created with this plugin yet'));
    return this.prepared;
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    // The plugin's own poller (created below) inherits a connection's plugins: leave it as made.
    if (options.taskQueue === this.ownQueue) return options;
    if (this.prepared) throw new Error('a DurableMcpPlugin serves one Worker: create one plugin for each Worker');
    const base = super.configureWorker(options);
    const { settings } = this;
    const workerQueue = newWorkerQueue(options.taskQueue);
    this.ownQueue = workerQueue;
    const metrics = settings.metrics.port !== undefined ? createWorkerMetrics() : undefined;
    this.prepared = this.prepare(options.taskQueue, workerQueue, metrics);
    // Surfaced by Worker.run (runWorker awaits it); not an unhandled rejection before that.
    this.prepared.catch(() => undefined);
    return {
      ...base,
      activities: { ...(base.activities ?? {}), ...lazyActivities(this.prepared) },
      ...(base.workflowsPath === undefined && base.workflowBundle === undefined ? { workflowsPath } : {}),
      // The worker's tasks then name the process and its own queue in every history.
      identity: base.identity ?? workerQueue,
      ...(metrics
        ? {
            interceptors: {
              ...base.interceptors,
              activity: [...(base.interceptors?.activity ?? []), metrics.interceptor],
            },
          }
        : {}),
      // After a worker dies, each workflow task of its turns first waits out this timeout on the dead
      // worker's sticky queue (SDK default 10 s); see docs/performance.md for the figures.
      stickyQueueScheduleToStartTimeout: base.stickyQueueScheduleToStartTimeout ?? settings.stickyWaitMs,
      // Running calls get this long to finish on shutdown before they are cancelled (SDK default: 0,
      // which would abort side-effecting calls mid-flight on every deploy).
      shutdownGraceTime: base.shutdownGraceTime ?? settings.shutdownGraceMs,
    };
  }

  /**
   * Bundles built with the plugin (a Worker given `workflowsPath`, or `bundleWorkflowCode` given
   * the plugin) first install the globals the AI SDK needs, whatever the order of the workflow
   * code's imports: `ai` subclasses `TransformStream` at module scope.
   */
  override configureBundler(options: BundleOptions): BundleOptions {
    const base = super.configureBundler(options);
    const hook = base.webpackConfigHook;
    return {
      ...base,
      webpackConfigHook: (config) => {
        const cfg = hook ? hook(config) : config;
        const entry = Array.isArray(cfg.entry) ? cfg.entry : cfg.entry !== undefined ? [cfg.entry as string] : [];
        return { ...cfg, entry: [aiSdkPolyfills, ...entry] };
      },
    };
  }

  override runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    if (worker.options.taskQueue === this.ownQueue) return next(worker);
    // Started before any await: the Worker is RUNNING, so a shutdown() right after run() is heard.
    const running = next(worker);
    return this.runOwnQueueBeside(worker, running).catch(async (err: unknown) => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      throw err;
    });
  }

  private async runOwnQueueBeside(worker: Worker, running: Promise<void>): Promise<void> {
    const prepared = await this.ready();
    if (worker.client) prepared.shelf.attach(worker.client);
    let own: Worker;
    try {
      if (!worker.connection) throw new Error('a durable-mcp worker needs a connection (a replay worker has none)');
      // Stays unversioned even in a worker deployment: only this process polls this queue, so a
      // version would collect one dead queue per restart.
      own = await Worker.create({
        connection: worker.connection,
        namespace: worker.options.namespace,
        taskQueue: prepared.workerQueue,
        identity: worker.options.identity,
        activities: prepared.activities,
        dataConverter: this.converter,
        shutdownGraceTime: worker.options.shutdownGraceTime,
        ...(prepared.metrics ? { interceptors: { activity: [prepared.metrics.interceptor] } } : {}),
      });
    } catch (err) {
      await prepared.pool.shutdown();
      await prepared.metricsServer?.close();
      throw err;
    }
    const idleMs = this.settings.sessionIdleMs;
    // A session stops between idleMs and idleMs + interval after its last use.
    const checkMs = this.dmcp.idleCheckIntervalMs ?? Math.min(Math.max(Math.floor(idleMs / 4), 100), 60_000);
    await runSideBySide(running, worker, own, prepared, { idleMs, checkMs });
  }

  private async prepare(
    taskQueue: string,
    workerQueue: string,
    metrics: ReturnType<typeof createWorkerMetrics> | undefined,
  ): Promise<PreparedWorker> {
    const { settings, env } = this;
    // Stdio servers start in their config dir: the one made up for servers given in code must exist.
    if (this.configIO) await mkdir(configSettings(env).configDir!, { recursive: true });
    const boundary = this.dmcp.boundary ?? (await workerBoundary(settings, 'joined'));
    const options = { logger: this.logger, env, settings, taskQueue, boundary };
    const parts = await createWorkerParts(
      this.configIO ? { ...options, configIO: this.configIO } : options,
      settings,
      env,
      {
        workerQueue,
        ...(metrics ? { metrics } : {}),
      },
    );
    const metricsServer =
      metrics && settings.metrics.port !== undefined
        ? await startMetricsServer({
            registry: metrics.registry,
            host: settings.metrics.host,
            port: settings.metrics.port,
            runtimeUrl: this.dmcp.runtimeMetricsUrl ?? runtimeMetricsUrl(),
            logger: parts.logger,
          })
        : undefined;
    parts.logger.info({ taskQueue, ...(metricsServer ? { metrics: metricsServer.url } : {}) }, 'worker started');
    return { ...parts, ...(metricsServer ? { metricsServer } : {}) };
  }
}

/**
 * The environment naming the operator's config dir, and for servers given in code the reader that
 * serves them as that dir's `mcp.json`.
 */
function operatorConfig(options: DurableMcpPluginOptions): { env: NodeJS.ProcessEnv; configIO?: ConfigIO } {
  const base = options.env ?? process.env;
  if (options.mcpServers === undefined) {
    if (options.configDir === undefined) return { env: base };
    return { env: { ...base, DMCP_CONFIG_DIR: options.configDir, DMCP_NO_USER_CONFIG: '0' } };
  }
  if (options.configDir !== undefined) throw new TypeError('DurableMcpPlugin: give configDir or mcpServers, not both');
  const dir = join(loadSettings(base).dataDir, 'plugin');
  const file = join(dir, 'mcp.json');
  const text = JSON.stringify({ mcpServers: options.mcpServers }, null, 2);
  const configIO: ConfigIO = {
    ...nodeConfigIO,
    readText: (path) => (path === file ? Promise.resolve(text) : nodeConfigIO.readText(path)),
  };
  return { env: { ...base, DMCP_CONFIG_DIR: dir, DMCP_NO_USER_CONFIG: '0' }, configIO };
}

/**
 * Runs the user's worker and the plugin's own poller together: if one stops (or fails), the other
 * must not keep taking work for servers that are about to be stopped. Idle sessions are stopped
 * meanwhile; at the end every server stops.
 */
async function runSideBySide(
  running: Promise<void>,
  worker: Worker,
  own: Worker,
  prepared: PreparedWorker,
  idle: { idleMs: number; checkMs: number },
): Promise<void> {
  const { pool, logger } = prepared;
  const idleTimer = setInterval(() => {
    pool.stopIdle(idle.idleMs).catch((err: unknown) => logger.warn({ err }, 'stopping idle sessions failed'));
  }, idle.checkMs);
  idleTimer.unref();
  const stopBoth = () => {
    for (const w of [worker, own]) if (w.getState() === 'RUNNING') w.shutdown();
  };
  const results = await Promise.allSettled([running.finally(stopBoth), own.run().finally(stopBoth)]);
  clearInterval(idleTimer);
  await pool.shutdown();
  await prepared.metricsServer?.close();
  logger.info('worker stopped');
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * The activities, registered before their parts exist (a Worker's options are made synchronously,
 * the parts are not): each waits for the parts, then runs in the activity's own context.
 */
function lazyActivities(prepared: Promise<PreparedWorker>): Activities {
  const out: Record<string, (input: never) => Promise<unknown>> = {};
  for (const name of Object.values(ActivityName)) {
    out[name] = async (input: never) => {
      const activity = (await prepared).activities[name] as (input: never) => Promise<unknown>;
      return activity(input);
    };
  }
  return out as unknown as Activities;
}
