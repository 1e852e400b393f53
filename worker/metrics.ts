/**
 * The worker's Prometheus metrics: MCP calls per server and tool and model steps per model (seen by
 * an activity interceptor, so the activities stay as they are), server starts, restarts and states (told by the pool), and
 * the Temporal SDK runtime's own worker metrics, served together on one `/metrics`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure, CancelledFailure, type Next } from '@temporalio/common';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
} from '@temporalio/worker';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import {
  ActivityName,
  FailureType,
  type CallOutcome,
  type CallToolInput,
  type ModelStepInput,
  type ModelStepResult,
} from '../contract/index.js';
import type { PoolObserver, ServerPool } from '../mcp/pool.js';

/** How a call ended, as counted: the label values of `dmcp_tool_calls_total{outcome}`. */
export const CALL_OUTCOMES = [
  'ok',
  'tool_error',
  'bad_request',
  'transport',
  'timeout',
  'cancelled',
  'unknown',
] as const;
export type CallOutcomeKind = (typeof CALL_OUTCOMES)[number];

/** The outcome of a call activity that returned. */
export function outcomeOfResult(result: unknown): CallOutcomeKind {
  return (result as Partial<CallOutcome> | undefined)?.isError === true ? 'tool_error' : 'ok';
}

/**
 * The outcome of a call activity that threw, from the failure type the activity gave it. A server
 * that is not running counts as `transport`; anything without a known type as `unknown`.
 */
export function outcomeOfFailure(err: unknown): CallOutcomeKind {
  if (err instanceof CancelledFailure) return 'cancelled';
  if (!(err instanceof ApplicationFailure)) return 'unknown';
  switch (err.type) {
    case FailureType.BadRequest:
      return 'bad_request';
    case FailureType.ToolTimeout:
      return 'timeout';
    case FailureType.Transport:
    case FailureType.ServerUnavailable:
      return 'transport';
    default:
      return 'unknown';
  }
}

/**
 * Bytes of a call's result as recorded: UTF-8 text, decoded base64 data of images, audio and
 * embedded blobs, and the JSON of structured content and of blocks of other kinds.
 */
export function resultBytes(result: unknown): number {
  const outcome = result as Partial<CallOutcome> | undefined;
  let bytes = 0;
  for (const block of outcome?.content ?? []) {
    const b = block as { type?: string; text?: unknown; data?: unknown; resource?: { text?: unknown; blob?: unknown } };
    if (typeof b.text === 'string') bytes += Buffer.byteLength(b.text);
    else if (typeof b.data === 'string') bytes += base64Bytes(b.data);
    else if (typeof b.resource?.text === 'string') bytes += Buffer.byteLength(b.resource.text);
    else if (typeof b.resource?.blob === 'string') bytes += base64Bytes(b.resource.blob);
    else bytes += Buffer.byteLength(JSON.stringify(block) ?? '');
  }
  if (outcome?.structuredContent) bytes += Buffer.byteLength(JSON.stringify(outcome.structuredContent));
  return bytes;
}

function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** Latency buckets in seconds: from a local echo (ms) to a long tool run (minutes). */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Result size buckets in bytes: 64 B to 16 MiB, times 4. */
export const SIZE_BUCKETS = [64, 256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216];

/** The worker's metrics: a registry, the pool's observer and the activity interceptor feeding it. */
export interface WorkerMetrics {
  registry: Registry;
  /** Pass to the pool (`ServerPoolOptions.observer`). */
  observer: PoolObserver;
  /** Pass to `Worker.create({ interceptors: { activity: [interceptor] } })`. */
  interceptor: ActivityInterceptorsFactory;
  /** Counts servers by state on every scrape (the pool is made after the metrics). */
  watchPool(pool: Pick<ServerPool, 'serverStates'>): void;
}

type Execute = Next<ActivityInboundCallsInterceptor, 'execute'>;

/** The metrics of tool call attempts. */
interface CallMetrics {
  calls: Counter<'server' | 'tool' | 'outcome'>;
  latency: Histogram<'server' | 'tool'>;
  bytes: Histogram<'server' | 'tool'>;
  retries: Counter<'server' | 'tool'>;
}

/** The metrics of model step attempts. */
interface ModelMetrics {
  steps: Counter<'model' | 'outcome'>;
  latency: Histogram<'model'>;
  tokens: Counter<'model' | 'kind'>;
}

/**
 * The activity interceptor that counts and times each tool call attempt (`callTool`, fast path or
 * not) and each model step attempt (`modelStep`).
 */
function activityInterceptor(calls: CallMetrics, models: ModelMetrics): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      execute(input, next) {
        const type = ctx.info.activityType;
        // A fast-path call (a local activity) is a call attempt like any other.
        if (type === ActivityName.callTool || type === ActivityName.callToolLocal)
          return countCall(calls, ctx.info.attempt, input, next);
        if (type === ActivityName.modelStep) return countModelStep(models, input, next);
        return next(input);
      },
    },
  });
}

async function countCall(m: CallMetrics, attempt: number, input: ActivityExecuteInput, next: Execute) {
  const call = input.args[0] as Pick<CallToolInput, 'server' | 'tool'>;
  const labels = { server: String(call.server), tool: String(call.tool) };
  if (attempt > 1) m.retries.inc(labels);
  const stop = m.latency.startTimer(labels);
  try {
    const result = await next(input);
    stop();
    m.calls.inc({ ...labels, outcome: outcomeOfResult(result) });
    m.bytes.observe(labels, resultBytes(result));
    return result;
  } catch (err) {
    // A fast-path miss ran nothing: the regular attempt that follows is the one counted.
    if (err instanceof ApplicationFailure && err.type === FailureType.FastPathMiss) throw err;
    stop();
    m.calls.inc({ ...labels, outcome: outcomeOfFailure(err) });
    throw err;
  }
}

/** A model step attempt: labelled by the model's name in `models.json` alone, never by what it was asked. */
async function countModelStep(m: ModelMetrics, input: ActivityExecuteInput, next: Execute) {
  const labels = { model: String((input.args[0] as Pick<ModelStepInput, 'model'> | undefined)?.model) };
  const stop = m.latency.startTimer(labels);
  try {
    const result = await next(input);
    stop();
    m.steps.inc({ ...labels, outcome: 'ok' });
    const usage = (result as Partial<ModelStepResult> | undefined)?.usage;
    for (const [kind, tokens] of [
      ['input', usage?.inputTokens],
      ['output', usage?.outputTokens],
    ] as const) {
      if (typeof tokens === 'number' && tokens > 0) m.tokens.inc({ ...labels, kind }, tokens);
    }
    return result;
  } catch (err) {
    stop();
    m.steps.inc({ ...labels, outcome: 'error' });
    throw err;
  }
}

/**
 * Creates the metrics of one worker in a registry of its own. Labels are server and tool names
 * (config keys and listed tool names) and model names (`models.json` keys), never session IDs,
 * arguments or prompts.
 */
export function createWorkerMetrics(options: { defaultMetrics?: boolean } = {}): WorkerMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'dmcp_' });
  const calls = new Counter({
    name: 'dmcp_tool_calls_total',
    help: 'MCP tool call attempts by how they ended',
    labelNames: ['server', 'tool', 'outcome'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'dmcp_tool_call_duration_seconds',
    help: 'Time of one MCP tool call attempt in the worker',
    labelNames: ['server', 'tool'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const bytes = new Histogram({
    name: 'dmcp_tool_result_bytes',
    help: 'Size of the results of MCP tool calls that returned',
    labelNames: ['server', 'tool'] as const,
    buckets: SIZE_BUCKETS,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'dmcp_tool_call_retries_total',
    help: 'MCP tool call attempts after the first (Temporal activity retries)',
    labelNames: ['server', 'tool'] as const,
    registers: [registry],
  });
  const starts = new Counter({
    name: 'dmcp_server_starts_total',
    help: 'MCP server starts (process or connection, handshake, first listing) by result',
    labelNames: ['server', 'result'] as const,
    registers: [registry],
  });
  const startTime = new Histogram({
    name: 'dmcp_server_start_duration_seconds',
    help: 'Time of MCP server starts',
    labelNames: ['server'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const restarts = new Counter({
    name: 'dmcp_server_restarts_total',
    help: 'MCP servers started again after they crashed or lost their connection',
    labelNames: ['server'] as const,
    registers: [registry],
  });
  let pool: Pick<ServerPool, 'serverStates'> | undefined;
  new Gauge({
    name: 'dmcp_servers',
    help: 'MCP servers of all sessions on this worker by state',
    labelNames: ['server', 'state'] as const,
    registers: [registry],
    collect() {
      // Reset first: a state no server is in any more must read 0 rather than its last count.
      this.reset();
      for (const row of pool?.serverStates() ?? []) this.set({ server: row.server, state: row.state }, row.count);
    },
  });

  const interceptor = activityInterceptor({ calls, latency, bytes, retries }, modelMetrics(registry));

  return {
    registry,
    interceptor,
    observer: {
      serverStarted(server, result, durationMs) {
        starts.inc({ server, result });
        startTime.observe({ server }, durationMs / 1000);
      },
      serverRestarted(server) {
        restarts.inc({ server });
      },
    },
    watchPool(p) {
      pool = p;
    },
  };
}

/** The model step metrics, in `registry`. */
function modelMetrics(registry: Registry): ModelMetrics {
  return {
    steps: new Counter({
      name: 'dmcp_model_steps_total',
      help: 'Model step attempts by how they ended',
      labelNames: ['model', 'outcome'] as const,
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'dmcp_model_step_duration_seconds',
      help: 'Time of one model step attempt in the worker',
      labelNames: ['model'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    tokens: new Counter({
      name: 'dmcp_model_tokens_total',
      help: 'Tokens of model steps that answered, as the provider reported them',
      labelNames: ['model', 'kind'] as const,
      registers: [registry],
    }),
  };
}

/** Options of {@link startMetricsServer}. */
export interface MetricsServerOptions {
  registry: Registry;
  /** DMCP_METRICS_HOST. */
  host: string;
  /** DMCP_METRICS_PORT (0: a free port; see {@link MetricsServer.port}). */
  port: number;
  /**
   * The Temporal runtime's own Prometheus endpoint (a loopback URL, see `installRuntimeLogger`),
   * appended to every scrape; absent: only this worker's metrics.
   */
  runtimeUrl?: string;
  logger: Logger;
}

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  host: string;
  port: number;
  url: string;
  close(): Promise<void>;
}

/** How long a scrape waits for the runtime's endpoint before answering without it. */
const RUNTIME_SCRAPE_TIMEOUT_MS = 2000;

/**
 * Serves `GET /metrics`: this worker's registry, then the runtime's exposition text. Both are
 * Prometheus text format and their families never share a name (`dmcp_` and `temporal_`), so the
 * two texts are concatenated as they are.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const { registry, logger } = options;
  if (!options.runtimeUrl)
    logger.warn(
      'the Temporal runtime was installed without metrics (installRuntime({ metrics: true })): /metrics serves the worker metrics alone',
    );
  let runtimeFailing = false;
  const runtimeText = async (): Promise<string> => {
    if (!options.runtimeUrl) return '';
    try {
      const res = await fetch(options.runtimeUrl, { signal: AbortSignal.timeout(RUNTIME_SCRAPE_TIMEOUT_MS) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      runtimeFailing = false;
      return await res.text();
    } catch (err) {
      if (!runtimeFailing)
        logger.warn(
          { err: (err as Error).message, url: options.runtimeUrl },
          'the Temporal runtime metrics could not be read; serving the worker metrics alone',
        );
      runtimeFailing = true;
      return '# the Temporal runtime metrics could not be read\n';
    }
  };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are served at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    Promise.all([registry.metrics(), runtimeText()])
      .then(([own, runtime]) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : own + (own.endsWith('\n') ? '' : '\n') + runtime);
      })
      .catch((err: unknown) => {
        logger.warn({ err: (err as Error).message }, 'collecting metrics failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('collecting metrics failed\n');
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: Error) => {
    throw new Error(`DMCP_METRICS_PORT: cannot serve metrics on ${options.host}:${options.port}: ${err.message}`);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    host: options.host,
    port,
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
