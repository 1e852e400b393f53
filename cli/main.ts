#!/usr/bin/env node
import { randomBytes } from 'node:crypto';
import { Command, CommanderError } from 'commander';
import type { Logger } from 'pino';
import { loadConfig } from '../config/load.js';
import { ConfigError } from '../config/types.js';
import { outcomeText, renderTranscript, saveImages } from '../client/transcript.js';
import { stripTerminalControls } from '../text/terminal.js';
import { handleStopSignals, killGroup } from './signals.js';
import { createLogger } from '../worker/logger.js';
import { SecretInInputError } from '../client/turnClient.js';
import { dataConverterFor } from '../payloads/dataConverter.js';
import { SettingsError, loadSettings, type Settings } from '../settings/index.js';
import { agentIdProblem, type CallRequest } from '../contract/index.js';
import { listProblem } from '../governance/toolRules.js';
import { connect, devDbFile, devSettings, removeDevState, runningDev, stopOnSignals, writeDevState } from './embedded.js';
import { registerApiCommand } from './api.js';
import { registerMcpCommand } from './mcp.js';
import { ConnectionConfigError, resolveTemporalTarget } from '../connection/index.js';
import { codecServerCommand, payloadsGcCommand } from './payloads.js';

/** A refusal of the command line itself: one line on stderr, exit code 2. */
class UsageError extends Error {}

const collect = (value: string, previous: string[]) => [...previous, value];
/** Like collect, but undefined until the option is given once (an allow list that is absent is not empty). */
const collectOptional = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];
const progress = (message: string) => {
  if (process.stderr.isTTY) process.stderr.write(`${message}\n`);
};

/** `--call 'TOOL JSON'`: the tool's public name, then its arguments as a JSON object. */
export function parseCallSpec(spec: string, index: number): CallRequest {
  const trimmed = spec.trim();
  const space = trimmed.search(/\s/);
  const name = space < 0 ? trimmed : trimmed.slice(0, space);
  const json = space < 0 ? '' : trimmed.slice(space + 1).trim();
  if (!name) throw new UsageError(`--call #${index + 1}: expected 'TOOL JSON', got an empty value`);
  let args: unknown = {};
  if (json) {
    try {
      args = JSON.parse(json);
    } catch (err) {
      throw new UsageError(`--call #${index + 1} (${name}): arguments are not valid JSON: ${(err as Error).message}`);
    }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new UsageError(`--call #${index + 1} (${name}): arguments must be a JSON object, got ${JSON.stringify(args)}`);
  }
  return { id: `call-${index + 1}`, name, arguments: args as Record<string, unknown> };
}

/** The settings of this command, from its environment: read once, at the edge. */
function commandSettings(): Settings {
  return loadSettings(process.env);
}

/** DMCP_LOG_LEVEL when set; otherwise the command's own default (quieter for one-shot commands). */
function cliLogger(settings: Settings, fallback = 'info') {
  return createLogger({ level: process.env.DMCP_LOG_LEVEL ? settings.logLevel : fallback });
}

/** What only the long-running commands need: loaded on demand, so one-shot commands start fast. */
async function workerParts() {
  const [worker, runtime, devServer, codec, cli] = await Promise.all([
    import('../worker/index.js'),
    import('../worker/runtimeLogger.js'),
    import('../dev/devServer.js'),
    import('../payloads/codecServer.js'),
    import('../dev/temporalCli.js'),
  ]);
  return { ...worker, ...runtime, ...devServer, ...codec, ...cli };
}

/**
 * `dev` serves the HTTP API too, so orchestrators in other languages can drive the embedded
 * default. A taken port is reported and dev goes on without it: the API is an extra, not the job.
 */
async function devApi(settings: Settings, logger: Logger, target: { address: string; namespace: string; taskQueue: string }, undo: (() => Promise<unknown>)[]): Promise<string> {
  const [{ serveApi, apiAuthLines }, { TUNED_MAX_IN_FLIGHT_UPDATES }] = await Promise.all([import('./api.js'), import('../dev/devServer.js')]);
  const { host, port } = settings.api;
  try {
    const api = await serveApi(settings, logger, { ...target, maxCallsInFlight: TUNED_MAX_IN_FLIGHT_UPDATES }, { host, port });
    undo.push(() => api.close());
    // The token's file, never the token: the output of dev ends up in terminals' scrollback and logs.
    return [`  HTTP API:         ${api.url} (reference ${api.url}/api/v1/docs)`, ...apiAuthLines(api.auth, api.url).map((l) => `  API token:        ${l}`)].join('\n');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    logger.warn({ host, port }, 'HTTP API not started: port in use');
    return `  HTTP API:         not started: ${host}:${port} is in use (set DMCP_API_PORT, or run \`durable-mcp api --port <n>\`)`;
  }
}

async function devCommand(): Promise<void> {
  const env = process.env;
  const settings = devSettings(commandSettings(), env);
  const { NativeConnection, installRuntime, startCodecServer, startDevServer, startWorker, temporalCliVersion } = await workerParts();
  const logger = cliLogger(settings);
  await installRuntime({ logger, level: settings.sdkLogLevel, metrics: settings.metrics.port !== undefined });
  if (settings.temporal.address) throw new UsageError('dev starts its own Temporal server: unset TEMPORAL_ADDRESS, or run `durable-mcp worker` against your cluster');
  const existing = await runningDev(settings.dataDir);
  if (existing) throw new UsageError(`durable-mcp dev is already running (pid ${existing.pid}, ${existing.address}, UI ${existing.uiAddress ?? 'off'})`);
  const { port, uiPort } = settings.dev;
  const dataConverter = dataConverterFor(settings);
  // Everything started is undone in reverse order, on a signal, on a failed start, or when the
  // worker stops by itself, so no server, connection or state file outlives the command.
  const undo: (() => Promise<unknown>)[] = [];
  // Kept for a forced stop: what must die even when nothing may be waited for.
  let pool: { killAll(): void } | undefined;
  let devServerPid: number | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => {
    stopping ??= (async () => {
      logger.info({ reason }, 'stopping');
      for (const step of undo.reverse()) await step().catch((err: unknown) => logger.warn({ err }, 'cleanup step failed'));
    })();
    return stopping;
  };
  handleStopSignals({
    notice: (signal) => process.stderr.write(`stopping (${signal}): running calls may finish; send it again to stop at once\n`),
    graceful: (signal) => stop(signal),
    force: (signal) => {
      logger.warn({ signal }, 'stopping at once');
      pool?.killAll();
      killGroup(devServerPid);
    },
  });
  try {
    // Started first: the UI learns the codec endpoint when the dev server starts.
    const codec = await startCodecServer({
      codecs: dataConverter.payloadCodecs ?? [],
      externalStorage: dataConverter.externalStorage,
      port: settings.dev.codecPort,
      token: settings.dev.codecToken,
    });
    undo.push(() => codec.close());
    progress('starting the Temporal dev server...');
    const server = await startDevServer({ dbFile: devDbFile(settings.dataDir), port, uiPort, env, codecEndpoint: codec.url, ownProcessGroup: true });
    devServerPid = server.pid;
    undo.push(() => server.stop());
    const taskQueue = settings.taskQueue;
    const connection = await NativeConnection.connect({ address: server.address });
    undo.push(() => connection.close());
    const worker = await startWorker({ connection, logger, env, settings, taskQueue, dataConverter });
    pool = worker.pool;
    undo.push(() => worker.shutdown());
    const apiLine = await devApi(settings, logger, { address: server.address, namespace: server.namespace, taskQueue }, undo);
    await writeDevState({ address: server.address, namespace: server.namespace, uiAddress: server.uiAddress, pid: process.pid, serverPid: server.pid, taskQueue }, settings.dataDir);
    undo.push(() => removeDevState(settings.dataDir));
    const version = await temporalCliVersion(server.binary).catch(() => 'unknown version');
    process.stdout.write(
      [
        'durable-mcp dev is running.',
        `  Temporal UI:      ${server.uiAddress}`,
        `  Temporal server:  ${server.address} (namespace ${server.namespace}; ${version})`,
        `  Codec server:     ${codec.url} (payloads ${settings.payloads.encryptionKey ? 'compressed and encrypted' : 'compressed'}; the UI decodes through it)`,
        apiLine,
        `  Task queue:       ${taskQueue} (worker queue ${worker.workerQueue})`,
        `  Data:             ${settings.dataDir}`,
        'Run turns from another shell, e.g.:',
        `  npx durable-mcp run --mcp 'everything:npx mcp-server-everything' --call 'mcp__everything__echo {"message":"hi"}'`,
        'Press Ctrl-C to stop.',
        '',
      ].join('\n'),
    );
    await worker.done;
  } finally {
    await stop('exit');
  }
}

async function workerCommand(): Promise<void> {
  const env = process.env;
  const settings = commandSettings();
  const { NativeConnection, installRuntime, startWorker, workerBoundary } = await workerParts();
  const logger = cliLogger(settings);
  await installRuntime({ logger, level: settings.sdkLogLevel, metrics: settings.metrics.port !== undefined });
  // TEMPORAL_ADDRESS or a Temporal TOML profile (with TLS or an API key) names the cluster.
  const target = resolveTemporalTarget(env);
  const dev = target.address ? undefined : await runningDev(settings.dataDir);
  const address = target.address ?? dev?.address;
  if (!address) throw new UsageError('no Temporal server: set TEMPORAL_ADDRESS (or a Temporal config profile), or start `durable-mcp dev` first');
  const connection = await NativeConnection.connect({ ...(target.address ? target.options : {}), address });
  logger.info({ temporal: target.address ? target.summary : `${address} (durable-mcp dev)` }, 'connected to Temporal');
  const worker = await startWorker({
    connection,
    logger,
    env,
    settings,
    namespace: target.namespaceExplicit ? target.namespace : (dev?.namespace ?? target.namespace),
    dataConverter: dataConverterFor(settings),
    // Whoever can start a workflow on the queue is not necessarily this worker's operator.
    boundary: await workerBoundary(settings, 'joined'),
  });
  handleStopSignals({ graceful: () => worker.shutdown(), force: () => worker.pool.killAll() }, ['SIGINT', 'SIGTERM']);
  await worker.done;
  await connection.close();
}

interface RunOptions {
  session?: string;
  workspace: string;
  mcpConfig: string[];
  mcp: string[];
  plugin: string[];
  call: string[];
  parallel?: boolean;
  json?: boolean;
  allowedTools?: string[];
  disallowedTools: string[];
  agent?: string;
}

/** `--allowed-tools a,b --allowed-tools c`: every matcher, split on commas and spaces as Claude Code does. */
function toolMatchers(values: string[] | undefined, flag: string): string[] | undefined {
  if (values === undefined) return undefined;
  const rules = values.flatMap((v) => v.split(/[\s,]+/)).filter(Boolean);
  const problem = listProblem(rules, flag);
  if (problem) throw new UsageError(problem);
  return rules;
}

async function runCommand(opts: RunOptions): Promise<number> {
  const calls = opts.call.map(parseCallSpec);
  if (calls.length === 0) throw new UsageError("run needs at least one --call 'TOOL JSON'");
  const allowedTools = toolMatchers(opts.allowedTools, '--allowed-tools');
  const disallowedTools = toolMatchers(opts.disallowedTools, '--disallowed-tools');
  const agentProblem = opts.agent !== undefined ? agentIdProblem(opts.agent) : undefined;
  if (agentProblem) throw new UsageError(`--agent: ${agentProblem}`);
  // Explicit files and inline specs are fatal layers: refuse them here, before anything starts. Only
  // checked: their commands run once, on the worker, whose environment is the one that counts.
  try {
    const refs = { workspace: opts.workspace, mcpConfigFiles: opts.mcpConfig, inlineSpecs: opts.mcp };
    await loadConfig(refs, { ...process.env, DMCP_NO_USER_CONFIG: '1', DMCP_WORKSPACE_MCP: 'false' }, undefined, { checkOnly: true });
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  const sessionId = opts.session ?? `run-${Date.now()}-${randomBytes(3).toString('hex')}`;
  const settings = commandSettings();
  const logger = cliLogger(settings, 'warn');
  const session = await connect({ logger, withWorker: true, settings, env: process.env, progress });
  stopOnSignals(session);
  try {
    const result = await session.client.runBatch({
      sessionId,
      workspace: opts.workspace,
      servers: { mcpConfigFiles: opts.mcpConfig, inlineSpecs: opts.mcp, plugins: opts.plugin },
      calls: opts.parallel ? [calls] : calls.map((c) => [c]),
      ...(allowedTools !== undefined ? { allowedTools } : {}),
      ...(disallowedTools?.length ? { disallowedTools } : {}),
      ...(opts.agent !== undefined ? { agent: opts.agent } : {}),
    }).catch((err: unknown) => {
      throw err instanceof SecretInInputError ? new UsageError(err.message) : err;
    });
    const failed = result.calls.filter((c) => c.outcome.status === 'error' || c.outcome.isError);
    if (opts.json) {
      process.stdout.write(`${JSON.stringify({ turnId: result.turnId, sessionId, endedBy: result.endedBy, calls: result.calls }, null, 2)}\n`);
    } else {
      // Tool output goes to a terminal: it must not be able to drive it.
      for (const call of result.calls) process.stdout.write(`${call.name}: ${stripTerminalControls(outcomeText(call.outcome))}\n`);
      process.stderr.write(`turn ${result.turnId} (see it again: durable-mcp transcript ${result.turnId})\n`);
    }
    const unknown = failed.filter((c) => c.outcome.errorKind === 'bad_request' && /unknown tool/.test(c.outcome.errorMessage ?? ''));
    if (unknown.length > 0) {
      const status = await session.client.transcript(result.turnId);
      const available = status.tools.map((t) => t.name).join(', ') || 'none';
      for (const c of unknown) process.stderr.write(`error: unknown tool "${c.name}" (available: ${available})\n`);
      for (const s of status.status?.servers ?? []) if (s.error) process.stderr.write(`error: server "${s.name}" failed: ${stripTerminalControls(s.error)}\n`);
    }
    return failed.length > 0 ? 1 : 0;
  } finally {
    await session.close();
  }
}

async function transcriptCommand(turnId: string, opts: { json?: boolean; saveImages?: string }): Promise<number> {
  const settings = commandSettings();
  const session = await connect({ logger: cliLogger(settings, 'warn'), withWorker: false, settings, env: process.env, progress });
  try {
    const t = await session.client.transcript(turnId);
    process.stdout.write(opts.json ? `${JSON.stringify(t, null, 2)}\n` : `${renderTranscript(t)}\n`);
    if (opts.saveImages) {
      const saved = await saveImages(t, opts.saveImages);
      process.stderr.write(`saved ${saved.written.length} image(s) to ${opts.saveImages}\n`);
      for (const file of saved.skipped) process.stderr.write(`error: ${file} already exists; not overwritten\n`);
      if (saved.skipped.length > 0) return 1;
    }
    return 0;
  } catch (err) {
    if ((err as Error).name === 'WorkflowNotFoundError' || /not found/i.test((err as Error).message)) {
      throw new UsageError(`no turn "${turnId}" on ${session.address}`);
    }
    throw err;
  } finally {
    await session.close();
  }
}

async function statusCommand(sessionId: string, opts: { json?: boolean }): Promise<number> {
  const settings = commandSettings();
  const session = await connect({ logger: cliLogger(settings, 'warn'), withWorker: false, settings, env: process.env, progress });
  try {
    const latest = await session.client.getStatus(sessionId);
    if (!latest) throw new UsageError(`no turns for session "${sessionId}"`);
    if (opts.json) process.stdout.write(`${JSON.stringify(latest, null, 2)}\n`);
    else {
      process.stdout.write(`session ${sessionId}, latest turn ${latest.turnId}, reported ${latest.status?.reportedAt ?? 'never'}\n`);
      for (const s of latest.status?.servers ?? []) {
        process.stdout.write(`  ${s.name} [${s.state}] ${s.transport}: ${s.tools.length} tools${s.error ? `; ${stripTerminalControls(s.error)}` : ''}\n`);
      }
    }
    return 0;
  } finally {
    await session.close();
  }
}

export function buildProgram(): Command {
  const program = new Command('durable-mcp')
    .description('Durable tool executor for AI agents: every MCP tool call is a Temporal activity.')
    .showHelpAfterError('(run with --help for usage)')
    .version('0.1.0')
    .exitOverride();
  program.command('dev').description('start the embedded Temporal dev server (with UI), a worker, and print the UI address').action(devCommand);
  program.command('worker').description('run a worker against TEMPORAL_ADDRESS (or a running `dev`)').action(workerCommand);
  program
    .command('run')
    .description('run one batch turn and print the outcome of each call')
    .option('--session <id>', 'session ID (default: a new one)')
    .option('--workspace <dir>', 'the turn workspace (default: current directory)', process.cwd())
    .option('--mcp-config <file>', 'an mcp.json file (repeatable, in order)', collect, [])
    .option('--mcp <spec>', "an inline server 'name:command arg1 arg2' (repeatable)", collect, [])
    .option('--plugin <dir>', 'a plugin folder with .mcp.json and/or plugin.json (repeatable; untrusted)', collect, [])
    .option('--call <call>', "a call 'TOOL JSON', e.g. 'mcp__x__echo {\"text\":\"hi\"}' (repeatable)", collect, [])
    .option('--parallel', 'run the calls in parallel (default: one after another)')
    .option('--json', 'print one JSON object: { turnId, calls: [{ id, name, arguments, outcome }] }')
    .option('--allowed-tools <matchers>', 'only these tools, e.g. "mcp__github__*,mcp__docs__search" (repeatable; narrows the worker\'s rules)', collectOptional)
    .option('--disallowed-tools <matchers>', 'never these tools (repeatable; a deny always wins)', collect, [])
    .option('--agent <id>', 'run as this agent: the servers granted to it on the shelf join the turn (durable-mcp mcp grant)')
    .action(async (opts: RunOptions) => {
      process.exitCode = await runCommand(opts);
    });
  program
    .command('transcript')
    .description("render a turn from its history (status, tools, calls, outcomes)")
    .argument('<turnId>', 'the turn, e.g. my-session/turn-1')
    .option('--json', 'print the transcript as JSON')
    .option('--save-images <dir>', 'write every image of every call to DIR as <call>-<n>.<ext>')
    .action(async (turnId: string, opts: { json?: boolean; saveImages?: string }) => {
      process.exitCode = await transcriptCommand(turnId, opts);
    });
  program
    .command('status')
    .description("the latest server status of a session")
    .argument('<sessionId>')
    .option('--json', 'print the status as JSON')
    .action(async (sessionId: string, opts: { json?: boolean }) => {
      process.exitCode = await statusCommand(sessionId, opts);
    });
  registerApiCommand(program);
  registerMcpCommand(program);
  program
    .command('setup')
    .description('prepare a Temporal cluster: create the namespace if missing, register the DmcpSessionId search attribute')
    .option('--retention <duration>', 'retention of a namespace created here', '72h')
    .option('--no-create-namespace', 'fail instead of creating a missing namespace')
    .action(async (opts: { retention: string; createNamespace: boolean }) => {
      const target = resolveTemporalTarget(process.env);
      if (!target.address) throw new UsageError('setup needs a cluster: set TEMPORAL_ADDRESS (or a Temporal config profile); `durable-mcp dev` sets itself up');
      const print = (line: string) => process.stdout.write(`${line}\n`);
      print(`Temporal: ${target.summary}`);
      // Loaded here: the other commands need none of the cluster-admin client.
      const { SetupRefusedError, runSetup } = await import('./setup.js');
      try {
        await runSetup({ target: { ...target, address: target.address }, retention: opts.retention, createNamespace: opts.createNamespace, print });
      } catch (err) {
        if (!(err instanceof SetupRefusedError)) throw err;
        process.stderr.write(`error: ${err.message}\n`);
        process.exitCode = 3;
      }
    });
  const payloads = program.command('payloads').description('the payload store (large tool results kept outside history)');
  payloads
    .command('gc')
    .description('delete filesystem-store payloads last written longer ago than --older-than (the namespace retention plus a margin)')
    .requiredOption('--older-than <duration>', 'e.g. 30d or 720h: at least the namespace retention plus the longest turn')
    .option('--dry-run', 'only count what would be deleted')
    .action(async (opts: { olderThan: string; dryRun?: boolean }) => {
      try {
        await payloadsGcCommand(commandSettings(), opts, (line) => process.stdout.write(`${line}\n`));
      } catch (err) {
        if (/--older-than/.test((err as Error).message)) throw new UsageError((err as Error).message);
        throw err;
      }
    });
  payloads
    .command('codec-server')
    .description('serve /encode and /decode on 127.0.0.1 for the Temporal UI and CLI (reads the configured payload store)')
    .option('--port <port>', 'port (default DMCP_CODEC_PORT, 8234)')
    .option('--allowed-origin <origin>', 'a web origin allowed besides loopback ones (repeatable)', collect, [])
    .action(async (opts: { port?: string; allowedOrigin: string[] }) => {
      const codec = await codecServerCommand(commandSettings(), opts, (line) => process.stdout.write(`${line}\n`));
      handleStopSignals({ graceful: () => codec.close(), force: () => undefined }, ['SIGINT', 'SIGTERM']);
      await new Promise<never>(() => undefined);
    });
  return program;
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; usage mistakes exit 2 (commander already printed the message).
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    if (err instanceof UsageError || err instanceof SettingsError || err instanceof ConnectionConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`error: ${(err as Error).message}\n`);
    if (process.env.DMCP_DEBUG) process.stderr.write(`${(err as Error).stack}\n`);
    process.exitCode = 1;
  }
}

void main(process.argv);
