/** `durable-mcp worker`: a worker against the configured cluster, or a running `dev`. */
import type { Command } from 'commander';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { cliLogger, commandSettings } from '../common.js';
import { handleStopSignals } from '../signals.js';
import { requireTemporalServer } from '../temporalServer.js';

/** What only the long-running commands need: loaded on demand, so one-shot commands start fast. */
export async function workerParts() {
  const [worker, runtime, devServer, codec, cli] = await Promise.all([
    import('../../worker/index.js'),
    import('../../worker/runtimeLogger.js'),
    import('../../dev/devServer.js'),
    import('../../payloads/codecServer.js'),
    import('../../dev/temporalCli.js'),
  ]);
  return { ...worker, ...runtime, ...devServer, ...codec, ...cli };
}

/** Runs until a signal or until the worker stops. */
async function workerCommand(): Promise<void> {
  const env = process.env;
  const settings = commandSettings();
  const { NativeConnection, installRuntime, startWorker, workerBoundary } = await workerParts();
  const logger = cliLogger(settings);
  await installRuntime({ logger, level: settings.sdkLogLevel, metrics: settings.metrics.port !== undefined });
  const server = await requireTemporalServer(env, settings.dataDir);
  const connection = await NativeConnection.connect({ ...server.options, address: server.address });
  logger.info({ temporal: server.summary }, 'connected to Temporal');
  const worker = await startWorker({
    connection,
    logger,
    env,
    settings,
    namespace: server.namespace,
    dataConverter: dataConverterFor(settings),
    // Whoever can start a workflow on the queue is not necessarily this worker's operator.
    boundary: await workerBoundary(settings, 'joined'),
  });
  handleStopSignals({ graceful: () => worker.shutdown(), force: () => worker.pool.killAll() }, ['SIGINT', 'SIGTERM']);
  await worker.done;
  await connection.close();
}

/** Adds `durable-mcp worker` to the program. */
export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('run a worker against TEMPORAL_ADDRESS (or a running `dev`)')
    .action(workerCommand);
}
