/** `durable-mcp run`: one batch turn, and the outcome of each call. */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { outcomeText } from '../../client/transcriptText.js';
import { SecretInInputError, type TurnClient } from '../../client/turnClient.js';
import { loadConfig } from '../../config/load.js';
import { ConfigError } from '../../config/types.js';
import { agentIdProblem, taskIdProblem, type CallRequest, type TurnResult } from '../../contract/index.js';
import { listProblem } from '../../governance/toolRules.js';
import { stripTerminalControls, terminalJson } from '../../text/terminal.js';
import { UsageError, cliLogger, collect, collectOptional, commandSettings, notice, progress } from '../common.js';
import { connect, stopOnSignals } from '../embedded.js';
import { cliInputHandler, parseAnswerMode } from '../inputPrompt.js';
import { runModelTurnCommand } from './modelTurn.js';

interface RunOptions {
  session?: string;
  workspace?: string;
  mcpConfig: string[];
  mcp: string[];
  plugin: string[];
  call: string[];
  takeTask: string[];
  parallel?: boolean;
  json?: boolean;
  allowedTools?: string[];
  disallowedTools: string[];
  agent?: string;
  answerInput?: string;
  model?: string;
  prompt?: string;
  maxSteps?: string;
}

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
    throw new UsageError(
      `--call #${index + 1} (${name}): arguments must be a JSON object, got ${JSON.stringify(args)}`,
    );
  }
  return { id: `call-${index + 1}`, name, arguments: args as Record<string, unknown> };
}

/**
 * `--take-task 'TOOL TASK_ID'`: a call that takes up the MCP task a call of TOOL left running when
 * its turn ended with detach (the ID its outcome names), instead of calling the tool.
 */
export function parseTakeTaskSpec(spec: string, index: number): CallRequest {
  const parts = spec.trim().split(/\s+/);
  const [name, taskId] = parts;
  if (parts.length !== 2 || !name || !taskId)
    throw new UsageError(`--take-task #${index + 1}: expected 'TOOL TASK_ID', got ${JSON.stringify(spec)}`);
  const problem = taskIdProblem(taskId);
  if (problem) throw new UsageError(`--take-task #${index + 1} (${name}): ${problem}`);
  return { id: `take-task-${index + 1}`, name, taskId };
}

/** `--allowed-tools a,b --allowed-tools c`: every matcher, split on commas and spaces as Claude Code does. */
function toolMatchers(values: string[] | undefined, flag: string): string[] | undefined {
  if (values === undefined) return undefined;
  const rules = values.flatMap((v) => v.split(/[\s,]+/)).filter(Boolean);
  const problem = listProblem(rules, flag);
  if (problem) throw new UsageError(problem);
  return rules;
}

/** Explicit files and inline specs are fatal layers: refused here, before anything starts. */
async function checkServerRefs(opts: RunOptions): Promise<void> {
  // Only checked: their commands run once, on the worker, whose environment is the one that counts.
  try {
    const refs = { workspace: opts.workspace ?? process.cwd(), mcpConfigFiles: opts.mcpConfig, inlineSpecs: opts.mcp };
    await loadConfig(refs, { ...process.env, DMCP_NO_USER_CONFIG: '1', DMCP_WORKSPACE_MCP: 'false' }, undefined, {
      checkOnly: true,
    });
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * What to say of failed calls that named a tool the turn does not have: the servers that failed
 * first (their failure is why their tools are missing), then each unknown tool, with what the turn
 * has. The outcome says only `bad_request`; a name in none of the turn's tool lists is what makes it
 * an unknown tool.
 */
async function unknownToolReport(client: TurnClient, result: TurnResult, failed: TurnResult['calls']) {
  const badRequests = failed.filter((c) => c.outcome.errorKind === 'bad_request');
  if (badRequests.length === 0) return { servers: [], tools: [] };
  const status = await client.transcript(result.turnId);
  const listed = new Set(status.tools.map((t) => t.name));
  const unknown = badRequests.filter((c) => !listed.has(c.name));
  if (unknown.length === 0) return { servers: [], tools: [] };
  const failedServers = (status.status?.servers ?? []).filter((s) => s.error);
  const available = status.tools.map((t) => t.name).join(', ') || 'none';
  return {
    servers: failedServers.map((s) => `error: server "${s.name}" failed: ${stripTerminalControls(s.error ?? '')}`),
    tools: unknown.map((c) => {
      const server = failedServers.find((s) => c.name.split('__').includes(s.name));
      return server
        ? `error: unknown tool "${c.name}": its server "${server.name}" failed (above)`
        : `error: unknown tool "${c.name}" (available: ${available})`;
    }),
  };
}

/** Exit code 0 when every call succeeded, 1 when one failed. */
async function runCommand(opts: RunOptions): Promise<number> {
  const calls = [...opts.call.map(parseCallSpec), ...opts.takeTask.map(parseTakeTaskSpec)];
  const modelTurn = opts.model !== undefined || opts.prompt !== undefined;
  if (modelTurn && (opts.model === undefined || opts.prompt === undefined))
    throw new UsageError('a model turn needs both --model NAME and --prompt TEXT');
  if (modelTurn && calls.length > 0)
    throw new UsageError(
      '--call and --take-task run a batch turn; a model turn (--model) runs the calls its model asks for',
    );
  if (!modelTurn && calls.length === 0)
    throw new UsageError("run needs at least one --call 'TOOL JSON' (or --take-task 'TOOL TASK_ID')");
  const allowedTools = toolMatchers(opts.allowedTools, '--allowed-tools');
  const disallowedTools = toolMatchers(opts.disallowedTools, '--disallowed-tools');
  const agentProblem = opts.agent !== undefined ? agentIdProblem(opts.agent) : undefined;
  if (agentProblem) throw new UsageError(`--agent: ${agentProblem}`);
  const answerMode = parseAnswerMode(opts.answerInput);
  await checkServerRefs(opts);
  const sessionId = opts.session ?? `run-${Date.now()}-${randomBytes(3).toString('hex')}`;
  const settings = commandSettings();
  const logger = cliLogger(settings, 'warn');
  const session = await connect({ logger, withWorker: true, settings, env: process.env, progress, notice });
  stopOnSignals(session);
  try {
    if (modelTurn) {
      const start = {
        sessionId,
        ...(opts.workspace !== undefined ? { workspace: opts.workspace } : {}),
        ...(opts.session === undefined ? { endSession: true } : {}),
        servers: { mcpConfigFiles: opts.mcpConfig, inlineSpecs: opts.mcp, plugins: opts.plugin },
        ...(allowedTools !== undefined ? { allowedTools } : {}),
        ...(disallowedTools?.length ? { disallowedTools } : {}),
        ...(opts.agent !== undefined ? { agent: opts.agent } : {}),
      };
      return await runModelTurnCommand(session.client, start, { ...opts, model: opts.model!, prompt: opts.prompt! });
    }
    const result = await session.client
      .runBatch({
        sessionId,
        // Named: offered to the servers as their root too. Not named: the current directory, for the
        // workspace layer only, so a server keeps the directories its command line gave it.
        ...(opts.workspace !== undefined ? { workspace: opts.workspace } : {}),
        // A session made for this one turn is released with it, so no server waits on an idle client;
        // one the user named may have more turns coming.
        ...(opts.session === undefined ? { endSession: true } : {}),
        servers: { mcpConfigFiles: opts.mcpConfig, inlineSpecs: opts.mcp, plugins: opts.plugin },
        calls: opts.parallel ? [calls] : calls.map((c) => [c]),
        ...(allowedTools !== undefined ? { allowedTools } : {}),
        ...(disallowedTools?.length ? { disallowedTools } : {}),
        ...(opts.agent !== undefined ? { agent: opts.agent } : {}),
        onInput: cliInputHandler(answerMode),
      })
      .catch((err: unknown) => {
        throw err instanceof SecretInInputError ? new UsageError(err.message) : err;
      });
    const failed = result.calls.filter((c) => c.outcome.status === 'error' || c.outcome.isError);
    const unknown = await unknownToolReport(session.client, result, failed);
    // A server that failed is why its tools are unknown: say so before the calls' outcomes.
    for (const line of unknown.servers) process.stderr.write(`${line}\n`);
    if (opts.json) {
      process.stdout.write(
        `${terminalJson({ turnId: result.turnId, sessionId, endedBy: result.endedBy, calls: result.calls }, 2)}\n`,
      );
    } else {
      // Tool output goes to a terminal: it must not be able to drive it.
      for (const call of result.calls)
        process.stdout.write(`${call.name}: ${stripTerminalControls(outcomeText(call.outcome))}\n`);
      process.stderr.write(`turn ${result.turnId} (see it again: durable-mcp transcript ${result.turnId})\n`);
    }
    for (const line of unknown.tools) process.stderr.write(`${line}\n`);
    return failed.length > 0 ? 1 : 0;
  } finally {
    await session.close();
  }
}

/** Adds `durable-mcp run` to the program. */
export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description(
      "run one batch turn and print the outcome of each call, or a model turn (--model, --prompt) and print the model's answer",
    )
    .option(
      '--session <id>',
      'session ID (default: a new one, ended when run exits; a named one is kept for its next turn)',
    )
    .option(
      '--workspace <dir>',
      'the turn workspace, also offered to the servers as their MCP root (default: the current directory, offered to none)',
    )
    .option('--mcp-config <file>', 'an mcp.json file (repeatable, in order)', collect, [])
    .option('--mcp <spec>', "an inline server 'name:command arg1 arg2' (repeatable)", collect, [])
    .option('--plugin <dir>', 'a plugin folder with .mcp.json and/or plugin.json (repeatable; untrusted)', collect, [])
    .option('--call <call>', 'a call \'TOOL JSON\', e.g. \'mcp__x__echo {"text":"hi"}\' (repeatable)', collect, [])
    .option(
      '--take-task <call>',
      "take up an MCP task a detached call left running, 'TOOL TASK_ID' (repeatable; after the --call calls): its result is this call's outcome",
      collect,
      [],
    )
    .option('--model <name>', "run a model turn: the model's name in the workers' models.json (with --prompt)")
    .option('--prompt <text>', 'what the model is asked (with --model)')
    .option('--max-steps <n>', 'most model steps of a model turn (default 25)')
    .option('--parallel', 'run the calls in parallel (default: one after another)')
    .option('--json', 'print one JSON object: { turnId, calls: [{ id, name, arguments, outcome }] }')
    .option(
      '--allowed-tools <matchers>',
      'only these tools, e.g. "mcp__github__*,mcp__docs__search" (repeatable; narrows the worker\'s rules)',
      collectOptional,
    )
    .option('--disallowed-tools <matchers>', 'never these tools (repeatable; a deny always wins)', collect, [])
    .option(
      '--agent <id>',
      'run as this agent: the servers granted to it on the shelf join the turn (durable-mcp mcp grant)',
    )
    .option(
      '--answer-input <mode>',
      'answer every input request a call asks: accept-defaults, decline or cancel; approve or deny answer approvals (default: ask on a terminal, else wait for durable-mcp answer; nothing approves a call by default)',
    )
    .action(async (opts: RunOptions) => {
      process.exitCode = await runCommand(opts);
    });
}
