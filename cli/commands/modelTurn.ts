/**
 * `durable-mcp run --model NAME --prompt TEXT` and `durable-mcp chat --model NAME`: turns that run
 * the operator's model. The steps are printed as they finish (the model's text and the calls it
 * asks for, on stderr); the answer on stdout.
 */
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import type { ModelTurnRun, StartTurnOptions, TurnClient } from '../../client/turnClient.js';
import { SecretInInputError } from '../../client/turnClient.js';
import type { TurnResult } from '../../contract/index.js';
import { stripTerminalControls, terminalJson } from '../../text/terminal.js';
import { UsageError, cliLogger, collect, commandSettings, notice, progress } from '../common.js';
import { connect, stopOnSignals } from '../embedded.js';
import { cliInputHandler, parseAnswerMode } from '../inputPrompt.js';

/** What a model turn's command line gives besides the model. */
export interface ModelTurnCommandOptions {
  model: string;
  prompt: string;
  maxSteps?: string;
  json?: boolean;
  answerInput?: string;
}

/** `--max-steps N`: an integer from 1 to 1000. */
export function parseMaxSteps(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new UsageError(`--max-steps must be an integer from 1 to 1000, got ${JSON.stringify(value)}`);
  return n;
}

/** Prints the steps of `run` as they finish (the model's text between calls, and the calls it asks for), then returns its result. */
async function followSteps(run: ModelTurnRun): Promise<TurnResult> {
  for await (const step of run.steps()) {
    if (step.toolCalls.length === 0) continue;
    if (step.text.trim() !== '') process.stderr.write(`${stripTerminalControls(step.text.trim())}\n`);
    for (const call of step.toolCalls)
      process.stderr.write(`  → ${stripTerminalControls(call.name)} (${stripTerminalControls(call.id)})\n`);
  }
  return run.result();
}

/** Runs one model turn for `run --model`; exit code 0 when it ended with an answer. */
export async function runModelTurnCommand(
  client: TurnClient,
  start: StartTurnOptions,
  opts: ModelTurnCommandOptions,
): Promise<number> {
  const maxSteps = parseMaxSteps(opts.maxSteps);
  const run = await client
    .startModelTurn({
      ...start,
      model: { name: opts.model, prompt: opts.prompt, ...(maxSteps !== undefined ? { maxSteps } : {}) },
      onInput: cliInputHandler(parseAnswerMode(opts.answerInput)),
    })
    .catch((err: unknown) => {
      throw err instanceof SecretInInputError ? new UsageError(err.message) : err;
    });
  const result = await followSteps(run);
  if (opts.json) {
    const { turnId, sessionId, endedBy, answer, modelSteps, calls, conversation, model } = result;
    process.stdout.write(
      `${terminalJson({ turnId, sessionId, model, endedBy, answer, modelSteps, calls, conversation }, 2)}\n`,
    );
  } else {
    process.stdout.write(`${stripTerminalControls(result.answer ?? '')}\n`);
    process.stderr.write(
      `turn ${result.turnId} ended by ${result.endedBy} (see it again: durable-mcp transcript ${result.turnId})\n`,
    );
  }
  return result.endedBy === 'answer' ? 0 : 1;
}

interface ChatOptions {
  model: string;
  session?: string;
  workspace?: string;
  mcpConfig: string[];
  mcp: string[];
  maxSteps?: string;
  answerInput?: string;
}

/**
 * `durable-mcp chat --model NAME`: one turn per line read, each continuing the conversation of the
 * one before (the session's conversation, so `--session` resumes an earlier chat); an empty line
 * or end of input ends the chat, and with it a session made for it.
 */
async function chatCommand(opts: ChatOptions): Promise<number> {
  const maxSteps = parseMaxSteps(opts.maxSteps);
  const answerMode = parseAnswerMode(opts.answerInput);
  const sessionId = opts.session ?? `chat-${Date.now()}-${randomBytes(3).toString('hex')}`;
  const settings = commandSettings();
  const session = await connect({
    logger: cliLogger(settings, 'warn'),
    withWorker: true,
    settings,
    env: process.env,
    progress,
    notice,
  });
  stopOnSignals(session);
  const lines = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY });
  let conversation: string | undefined;
  let failed = false;
  try {
    process.stderr.write(`chat with ${opts.model} in session ${sessionId}; an empty line ends it\n`);
    for (;;) {
      const prompt = await lines.question('> ').catch(() => '');
      if (prompt.trim() === '') break;
      try {
        const run = await session.client.startModelTurn({
          sessionId,
          ...(opts.workspace !== undefined ? { workspace: opts.workspace } : {}),
          servers: { mcpConfigFiles: opts.mcpConfig, inlineSpecs: opts.mcp },
          model: {
            name: opts.model,
            prompt,
            ...(conversation !== undefined ? { conversation } : {}),
            ...(maxSteps !== undefined ? { maxSteps } : {}),
          },
          onInput: cliInputHandler(answerMode),
        });
        const result = await followSteps(run);
        conversation = result.conversation ?? conversation;
        process.stdout.write(`${stripTerminalControls(result.answer ?? '')}\n`);
      } catch (err) {
        // One turn failing (the model refused, a secret in the prompt) leaves the chat open.
        failed = true;
        process.stderr.write(`error: ${stripTerminalControls((err as Error).message)}\n`);
      }
    }
    if (opts.session === undefined) await session.client.endSession(sessionId);
    return failed ? 1 : 0;
  } finally {
    lines.close();
    await session.close();
  }
}

/** Adds `durable-mcp chat` to the program. */
export function registerChatCommand(program: Command): void {
  program
    .command('chat')
    .description("talk with one of the operator's models (models.json); each line is a turn that may call tools")
    .requiredOption('--model <name>', "the model's name in the workers' models.json")
    .option(
      '--session <id>',
      'session ID (default: a new one, ended with the chat; a named one resumes its conversation)',
    )
    .option('--workspace <dir>', 'the turn workspace, also offered to the servers as their MCP root')
    .option('--mcp-config <file>', 'an mcp.json file (repeatable, in order)', collect, [])
    .option('--mcp <spec>', "an inline server 'name:command arg1 arg2' (repeatable)", collect, [])
    .option('--max-steps <n>', 'most model steps per turn (default 25)')
    .option(
      '--answer-input <mode>',
      'answer every input request a call asks: accept-defaults, decline or cancel; approve or deny answer approvals',
    )
    .action(async (opts: ChatOptions) => {
      process.exitCode = await chatCommand(opts);
    });
}
