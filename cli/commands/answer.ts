/** `durable-mcp answer <turnId> [requestId] [json]`: list a turn's open input requests, or answer one. */
import type { Command } from 'commander';
import { failureTypeOf, applicationFailureOf } from '../../client/failures.js';
import { RefusalType, type InputAnswer } from '../../contract/index.js';
import { UsageError, cliLogger, commandSettings, progress } from '../common.js';
import { connect } from '../embedded.js';
import { describeRequest } from '../inputPrompt.js';

interface AnswerOptions {
  decline?: boolean;
  cancel?: boolean;
  json?: boolean;
}

/** The answer the command line gives: `--decline`, `--cancel`, or accept with the JSON object of the fields. */
export function answerFromArgs(json: string | undefined, opts: AnswerOptions): InputAnswer {
  if (opts.decline && opts.cancel) throw new UsageError('give at most one of --decline and --cancel');
  if (opts.decline || opts.cancel) {
    if (json !== undefined) throw new UsageError('--decline and --cancel take no answer JSON');
    return { action: opts.decline ? 'decline' : 'cancel' };
  }
  if (json === undefined) return { action: 'accept' };
  let content: unknown;
  try {
    content = JSON.parse(json);
  } catch (err) {
    throw new UsageError(`the answer is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof content !== 'object' || content === null || Array.isArray(content)) throw new UsageError('the answer must be a JSON object of the requested fields, e.g. \'{"name":"db"}\'');
  return { action: 'accept', content: content as InputAnswer['content'] };
}

async function answerCommand(turnId: string, requestId: string | undefined, json: string | undefined, opts: AnswerOptions): Promise<number> {
  const answer = requestId !== undefined ? answerFromArgs(json, opts) : undefined;
  const settings = commandSettings();
  const session = await connect({ logger: cliLogger(settings, 'warn'), withWorker: false, settings, env: process.env, progress });
  try {
    if (requestId === undefined || answer === undefined) {
      const open = await session.client.pendingInputs(turnId);
      if (opts.json) process.stdout.write(`${JSON.stringify(open, null, 2)}\n`);
      else if (open.length === 0) process.stdout.write(`no open input requests in ${turnId}\n`);
      else for (const r of open) process.stdout.write(`${describeRequest(r)}${r.requestedSchema ? `\n  schema: ${JSON.stringify(r.requestedSchema)}` : ''}\n`);
      return 0;
    }
    try {
      const receipt = await session.client.answerInput(turnId, requestId, answer);
      process.stdout.write(opts.json ? `${JSON.stringify(receipt)}\n` : `${receipt.requestId}: ${receipt.action}\n`);
      return 0;
    } catch (err) {
      if (failureTypeOf(err) === RefusalType.inputAnswer) {
        process.stderr.write(`error: ${applicationFailureOf(err)!.message}\n`);
        return 1;
      }
      throw err;
    }
  } finally {
    await session.close();
  }
}

/** Adds `durable-mcp answer` to the program. */
export function registerAnswerCommand(program: Command): void {
  program
    .command('answer')
    .description("answer a running call's input request (without a request ID: list the open ones)")
    .argument('<turnId>', 'the turn, e.g. my-session/turn-1')
    .argument('[requestId]', 'the request, e.g. toolu_01:1:name')
    .argument('[json]', 'accept with these fields, e.g. \'{"name":"db"}\' (none: accept a URL request, or a form without fields)')
    .option('--decline', 'decline the request')
    .option('--cancel', 'cancel the request')
    .option('--json', 'print JSON')
    .action(async (turnId: string, requestId: string | undefined, json: string | undefined, opts: AnswerOptions) => {
      process.exitCode = await answerCommand(turnId, requestId, json, opts);
    });
}
