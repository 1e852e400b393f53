import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { scrubDeep, scrubSecrets } from '../config/secrets.js';

// The Temporal runtime is one per process and can be installed once: these mirror that.
let runtimeInstalled = false;
let runtimeMetrics: string | undefined;

/**
 * Routes the Temporal SDK's own logs through pino, without its startup chatter. The SDK quotes
 * errors and activity details in its messages and meta, so both are scrubbed like every other log
 * line (`scrub`: by default, of this process's secrets, plain and encoded).
 */
export function installRuntimeLogger(
  logger: Logger,
  level: LogLevel = 'WARN',
  scrub: (text: string) => string = (text) => scrubSecrets(text, process.env),
): void {
  install({ logger, level, scrub });
}

/** Options of {@link installRuntime}. */
export interface InstallRuntimeOptions {
  logger: Logger;
  /** DMCP_SDK_LOG_LEVEL (default `WARN`). */
  level?: LogLevel;
  /** Removes secrets from the SDK's log lines (default: this process's secrets). */
  scrub?: (text: string) => string;
  /**
   * Whether the runtime exports its own worker metrics (task slots, poll and schedule-to-start
   * latencies, ...): on a free loopback port, which the worker's `/metrics` reads on each scrape.
   * Pass `settings.metrics.port !== undefined`.
   */
  metrics?: boolean;
}

/**
 * Installs the Temporal runtime: the logger of {@link installRuntimeLogger} and, with `metrics`,
 * its Prometheus exporter. Returns the exporter's URL (also {@link runtimeMetricsUrl}); a second
 * call changes nothing and returns what the first one set up.
 */
export async function installRuntime(options: InstallRuntimeOptions): Promise<{ metricsUrl?: string }> {
  if (runtimeInstalled) return runtimeMetrics ? { metricsUrl: runtimeMetrics } : {};
  const port = options.metrics ? await freeLoopbackPort() : undefined;
  install({ logger: options.logger, level: options.level ?? 'WARN', scrub: options.scrub, metricsPort: port });
  return runtimeMetrics ? { metricsUrl: runtimeMetrics } : {};
}

/** Where the installed runtime serves its Prometheus metrics, if it was installed with them. */
export function runtimeMetricsUrl(): string | undefined {
  return runtimeMetrics;
}

function install(options: {
  logger: Logger;
  level: LogLevel;
  scrub?: (text: string) => string;
  metricsPort?: number;
}): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const { logger } = options;
  const scrub = options.scrub ?? ((text: string) => scrubSecrets(text, process.env));
  const bindAddress = options.metricsPort !== undefined ? `127.0.0.1:${options.metricsPort}` : undefined;
  Runtime.install({
    // The commands handle their own signals and stop what they started in order.
    shutdownSignals: [],
    logger: new DefaultLogger(options.level, (entry) => {
      // The pinned worker queue deliberately has no workflows; the SDK warns about that.
      if (entry.message.startsWith('No workflows registered')) return;
      const method = entry.level === 'ERROR' ? 'error' : entry.level === 'WARN' ? 'warn' : 'debug';
      logger[method]({ sdk: scrubDeep(entry.meta, scrub) }, scrub(entry.message));
    }),
    // Seconds and the _total/_seconds suffixes: the Prometheus conventions our own metrics follow.
    ...(bindAddress
      ? {
          telemetryOptions: {
            metrics: {
              prometheus: { bindAddress, useSecondsForDurations: true, countersTotalSuffix: true, unitSuffix: true },
            },
          },
        }
      : {}),
  });
  if (bindAddress) runtimeMetrics = `http://${bindAddress}/metrics`;
}

/** A port free on 127.0.0.1 now, for the runtime's exporter (which cannot report the port it took). */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
