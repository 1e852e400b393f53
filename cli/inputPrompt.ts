/**
 * How the CLI answers a call's input requests: on a terminal it asks the person field by field; an
 * unattended run answers as `--answer-input` says; otherwise the question is left open for
 * `durable-mcp answer` from another shell.
 */
import { createInterface } from 'node:readline/promises';
import { UnattendedAnswer, unattendedAnswer, type InputAnswer, type InputRequest } from '../contract/index.js';
import type { InputContext, InputHandler } from '../client/inputs.js';
import { inertLine, stripTerminalControls } from '../text/terminal.js';
import { UsageError } from './common.js';

/** `--answer-input`, checked. */
export function parseAnswerMode(value: string | undefined): UnattendedAnswer | undefined {
  if (value === undefined) return undefined;
  if (!(UnattendedAnswer as readonly string[]).includes(value))
    throw new UsageError(`--answer-input must be one of ${UnattendedAnswer.join(', ')}, got ${JSON.stringify(value)}`);
  return value as UnattendedAnswer;
}

/**
 * What a person reads of one request. The message and URL were made plain when the question was
 * recorded; the line is made plain again because the request ID carries the server's key.
 */
export function describeRequest(request: InputRequest): string {
  const head = inertLine(`${request.tool} asks (${request.requestId}): ${request.message}`);
  if (request.kind === 'url') return `${head}\n  open this page yourself: ${inertLine(request.url ?? '')}`;
  return head;
}

/** The handler `run` uses: `mode` when given, a terminal prompt on a TTY, else a hint on stderr. */
export function cliInputHandler(mode: UnattendedAnswer | undefined): InputHandler {
  if (mode) {
    return (request) => {
      process.stderr.write(`${describeRequest(request)}\n  answered: ${mode}\n`);
      return unattendedAnswer(mode, request);
    };
  }
  if (process.stdin.isTTY && process.stderr.isTTY) return promptOnTerminal;
  return (request, { turnId }) => {
    process.stderr.write(
      `${describeRequest(request)}\n  waiting; answer from another shell: durable-mcp answer ${turnId} ${request.requestId} (the answer JSON on stdin, or --decline, --cancel)\n`,
    );
    return undefined;
  };
}

type Field = {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  oneOf?: { const?: unknown }[];
};

/** Asks for each field of a form (or for the action of a URL request) on the terminal. */
export async function promptOnTerminal(
  request: InputRequest,
  { refused }: InputContext,
): Promise<InputAnswer | undefined> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    process.stderr.write(
      `${refused ? `refused: ${stripTerminalControls(refused)}\n` : ''}${describeRequest(request)}\n`,
    );
    if (request.kind === 'url') {
      const action = (await rl.question('  done? [accept/decline/cancel] ')).trim() || 'accept';
      return { action: action === 'decline' || action === 'cancel' ? action : 'accept' };
    }
    const first = (await rl.question('  answer it? [Y/decline/cancel] ')).trim().toLowerCase();
    if (first === 'decline' || first === 'cancel') return { action: first };
    const schema = request.requestedSchema ?? {};
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    const content: Record<string, string | number | boolean | string[]> = {};
    for (const [name, field] of Object.entries((schema.properties ?? {}) as Record<string, Field>)) {
      const choices = field.enum ?? field.oneOf?.map((o) => o.const);
      const hint = [
        field.type,
        choices ? `one of ${choices.join('|')}` : undefined,
        required.has(name) ? 'required' : undefined,
      ]
        .filter(Boolean)
        .join(', ');
      const shownDefault = field.default !== undefined ? ` [${String(field.default)}]` : '';
      const raw = (await rl.question(`  ${inertLine(`${field.title ?? name} (${hint})${shownDefault}`)}: `)).trim();
      const value = raw === '' ? field.default : fieldValue(field, raw);
      if (value !== undefined) content[name] = value as string | number | boolean | string[];
    }
    return { action: 'accept', content };
  } finally {
    rl.close();
  }
}

function fieldValue(field: Field, raw: string): unknown {
  if (field.type === 'boolean') return /^(y|yes|true|1)$/i.test(raw);
  if (field.type === 'number' || field.type === 'integer') return Number(raw);
  if (field.type === 'array')
    return raw
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
  return raw;
}
