/** `durable-mcp api`: the HTTP API on its own, against the configured cluster or a running `dev`. */
import { Option, type Command } from 'commander';
import { TUNED_MAX_IN_FLIGHT_UPDATES } from '../../dev/devServer.js';
import { apiAuthLines, serveApi } from '../api.js';
import { UsageError, cliLogger, commandSettings, givenOnCommandLine } from '../common.js';
import { handleStopSignals } from '../signals.js';
import { requireTemporalServer } from '../temporalServer.js';

/** Serves until a signal; the listening server keeps the process alive. */
async function apiCommand(command: Command): Promise<void> {
  const settings = commandSettings();
  const logger = cliLogger(settings);
  const portFlag = givenOnCommandLine<string>(command, 'port');
  const host = givenOnCommandLine<string>(command, 'host') ?? settings.api.host;
  const port = portFlag !== undefined ? Number(portFlag) : settings.api.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be a port number (0-65535), got ${JSON.stringify(portFlag)}`);
  const server = await requireTemporalServer(process.env, settings.dataDir);
  const { dev } = server;
  const api = await serveApi(
    settings,
    logger,
    {
      address: server.address,
      ...(dev ? { maxCallsInFlight: TUNED_MAX_IN_FLIGHT_UPDATES } : { connection: server.options }),
      namespace: server.namespace,
      taskQueue: dev?.taskQueue ?? settings.taskQueue,
    },
    { host, port },
  );
  const [how] = apiAuthLines(api.auth, api.url);
  process.stdout.write(
    `durable-mcp api is listening on ${api.url} (Temporal ${server.address})\n  reference: ${api.url}/api/v1/docs\n  token:     ${how}\n`,
  );
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= api.close());
  handleStopSignals({
    graceful: stop,
    force: () => undefined,
    notice: (signal) => process.stderr.write(`stopping (${signal}): requests in flight may finish\n`),
  });
}

/** Adds `durable-mcp api` to the program. */
export function registerApiCommand(program: Command): void {
  program
    .command('api')
    .description(
      'serve the HTTP API (turns, calls, status, events, transcripts) against TEMPORAL_ADDRESS or a running `dev`',
    )
    // The flags win over the variables, the variables over the defaults (both read through the settings).
    .addOption(new Option('--host <host>', 'address to listen on (default 127.0.0.1)').env('DMCP_API_HOST'))
    .addOption(new Option('--port <port>', 'port to listen on (default 8235; 0 picks one)').env('DMCP_API_PORT'))
    .action((_opts: unknown, command: Command) => apiCommand(command));
}
