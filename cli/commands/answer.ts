/**
 * `durable-mcp answer <turnId> [requestId]`: list a turn's open input requests, or answer one. The
 * answer is read from stdin (or asked for on a terminal), never taken from the command line, where
 * every local user can read it (`ps`, /proc) and shell history keeps it.
 */
import type { Command } from 'commander';
import { failureTypeOf, applicationFailureOf } from '../../client/failures.js';
import { RefusalType, type InputAnswer } from '../../contract/index.js';
import { terminalJson } from '../../text/terminal.js';
import { UsageError } from '../common.js';
import { withCommandSession } from '../commandSession.js';
import { turnIdProblem } from '../turnIds.js';
import { describeRequest, promptOnTerminal } from '../inputPrompt.js';

interface AnswerOptions {
  decline?: boolean;
  cancel?: boolean;
  json?: boolean;
}

/** Longest answer read from stdin; a form's answer is a few fields. */
const MAX_STDIN_ANSWER_BYTES = 1024 * 1024;

/**
 * The answer given without a terminal: `--decline`, `--cancel`, or accept with `text` (what stdin
 * held), a JSON object of the fields; empty text accepts with no fields (a URL request, a form
 * without fields).
 */
export function answerFromText(text: string, opts: AnswerOptions): InputAnswer {
  if (opts.decline && opts.cancel) throw new UsageError('give at most one of --decline and --cancel');
  if (opts.decline || opts.cancel) return { action: opts.decline ? 'decline' : 'cancel' };
  if (text.trim() === '') return { action: 'accept' };
  let content: unknown;
  try {
    content = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`the answer on stdin is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof content !== 'object' || content === null || Array.isArray(content))
    throw new UsageError('the answer on stdin must be a JSON object of the requested fields, e.g. {"name":"db"}');
  return { action: 'accept', content: content as InputAnswer['content'] };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_STDIN_ANSWER_BYTES)
      throw new UsageError(`the answer on stdin is longer than ${MAX_STDIN_ANSWER_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function answerCommand(turnId: string, requestId: string | undefined, opts: AnswerOptions): Promise<number> {
  const badId = turnIdProblem(turnId);
  if (badId) throw new UsageError(badId);
  if (opts.decline && opts.cancel) throw new UsageError('give at most one of --decline and --cancel');
  const asksOnTerminal = requestId !== undefined && !opts.decline && !opts.cancel && process.stdin.isTTY === true;
  // Read before connecting, so a piped answer is taken even if the connection fails.
  const answer =
    requestId !== undefined && !asksOnTerminal
      ? answerFromText(opts.decline || opts.cancel ? '' : await readStdin(), opts)
      : undefined;
  return withCommandSession(async (session) => {
    if (requestId === undefined) {
      const open = await session.client.pendingInputs(turnId);
      if (opts.json) process.stdout.write(`${terminalJson(open, 2)}\n`);
      else if (open.length === 0) process.stdout.write(`no open input requests in ${turnId}\n`);
      else
        for (const r of open)
          process.stdout.write(
            `${describeRequest(r)}${r.requestedSchema ? `\n  schema: ${terminalJson(r.requestedSchema)}` : ''}\n`,
          );
      return 0;
    }
    let given = answer;
    if (asksOnTerminal) {
      const request = (await session.client.pendingInputs(turnId)).find((r) => r.requestId === requestId);
      if (!request) {
        process.stderr.write(
          `error: no open input request ${JSON.stringify(requestId)} in ${turnId}: it was answered, timed out, or never asked\n`,
        );
        return 1;
      }
      given = await promptOnTerminal(request, { turnId });
    }
    if (!given) return 1;
    try {
      const receipt = await session.client.answerInput(turnId, requestId, given);
      process.stdout.write(opts.json ? `${terminalJson(receipt)}\n` : `${receipt.requestId}: ${receipt.action}\n`);
      return 0;
    } catch (err) {
      if (failureTypeOf(err) === RefusalType.inputAnswer) {
        process.stderr.write(`error: ${applicationFailureOf(err)!.message}\n`);
        return 1;
      }
      throw err;
    }
  });
}

/** Adds `durable-mcp answer` to the program. */
export function registerAnswerCommand(program: Command): void {
  program
    .command('answer')
    .description("answer a running call's input request (without a request ID: list the open ones)")
    .argument('<turnId>', 'the turn, e.g. my-session/turn-1')
    .argument(
      '[requestId]',
      'the request, e.g. toolu_01:1:name; the answer, a JSON object of the fields, is read from stdin (on a terminal: asked field by field)',
    )
    .option('--decline', 'decline the request')
    .option('--cancel', 'cancel the request')
    .option('--json', 'print JSON')
    .allowExcessArguments()
    .action(async (turnId: string, requestId: string | undefined, opts: AnswerOptions, command: Command) => {
      if (command.args.length > 2) {
        throw new UsageError(
          'the answer is read from stdin, never from the command line, where other local users can read it and shell history keeps it: durable-mcp answer TURN REQUEST < answer.json',
        );
      }
      process.exitCode = await answerCommand(turnId, requestId, opts);
    });
}
