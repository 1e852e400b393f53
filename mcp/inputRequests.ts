/**
 * A 2026-07-28 server's `input_required` result, read for a durable caller: the elicitations go to
 * a person through the turn, roots are answered here, and sampling is refused (the worker holds no
 * model). Nothing is fulfilled in memory across a wait: the call ends, and a new call carries the
 * answers.
 */
import type { InputRequiredResult } from '@modelcontextprotocol/client';
import {
  MAX_INPUT_KEY_CHARS,
  MAX_INPUT_TEXT_CHARS,
  MAX_REQUEST_STATE_BYTES,
  type InputRequestSpec,
} from '../contract/index.js';
import { inertLine } from '../text/terminal.js';
import { refuseServerRequest } from './era.js';

/** What a call answered when its server asks for input that only a person can give. */
export interface NeedsInput {
  resultType: 'input_required';
  requests: InputRequestSpec[];
  requestState?: string;
  /** Answers this client gave itself (roots), sent along with the person's answers. */
  ownResponses: Record<string, unknown>;
}

/** Whether a call's result is {@link NeedsInput} rather than the tool's result. */
export function isNeedsInput(result: object): result is NeedsInput {
  return (
    (result as { resultType?: unknown }).resultType === 'input_required' &&
    Array.isArray((result as { requests?: unknown }).requests)
  );
}

/** Thrown for an embedded request this client never serves; the model reads the message. */
export class UnservedInputRequestError extends Error {
  override name = 'UnservedInputRequestError';
}

/**
 * A 2026-07-28 task's `inputRequests` (from `tasks/get`) read as a call's are (see
 * {@link readInputRequired}); anything but an object reads as no requests.
 */
export function readTaskInputRequests(
  inputRequests: unknown,
  roots: (() => { uri: string; name?: string }[]) | undefined,
): NeedsInput {
  const requests =
    typeof inputRequests === 'object' && inputRequests !== null && !Array.isArray(inputRequests)
      ? (inputRequests as Record<string, unknown>)
      : {};
  return readInputRequired({ resultType: 'input_required', inputRequests: requests } as InputRequiredResult, roots);
}

/**
 * Splits an `input_required` result into what a person must answer and what this client answers
 * itself (`roots`: the roots offered to the server, or none). Throws
 * {@link UnservedInputRequestError} for sampling and for a request it cannot read.
 */
export function readInputRequired(
  result: InputRequiredResult,
  roots: (() => { uri: string; name?: string }[]) | undefined,
): NeedsInput {
  const requests: InputRequestSpec[] = [];
  const ownResponses: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(result.inputRequests ?? {})) {
    if (key.length > MAX_INPUT_KEY_CHARS)
      throw new UnservedInputRequestError(
        `the server asked for input under a key of ${key.length} characters; at most ${MAX_INPUT_KEY_CHARS}`,
      );
    // The key is part of the request ID a person reads and types: it is refused, not rewritten,
    // because the server reads its answers back under it.
    if (inertLine(key) !== key)
      throw new UnservedInputRequestError(
        `the server asked for input under a key with control or bidi characters: ${JSON.stringify(key)}`,
      );
    const method = (entry as { method?: unknown }).method;
    if (method === 'roots/list') {
      ownResponses[key] = { roots: roots?.() ?? [] };
      continue;
    }
    if (method !== 'elicitation/create')
      throw new UnservedInputRequestError(refuseServerRequest(String(method)).message);
    requests.push(elicitationSpec(key, (entry as { params?: unknown }).params));
  }
  return {
    resultType: 'input_required',
    requests,
    ...(result.requestState !== undefined ? { requestState: result.requestState } : {}),
    ownResponses,
  };
}

/**
 * Why a server's `requestState` may not be recorded, or undefined when it may. The next attempt
 * must send it back byte for byte, so it cannot be scrubbed like the rest of a result: one that holds
 * a secret `scrub` finds (plain or encoded) is refused instead, and so is one past
 * {@link MAX_REQUEST_STATE_BYTES}. The message never quotes the state.
 */
export function requestStateProblem(state: unknown, scrub: (text: string) => string): string | undefined {
  if (typeof state !== 'string') return 'the server sent a request state that is not a string';
  // Measured before it is scrubbed: scrubbing an unbounded string is work the bound should spare.
  const bytes = Buffer.byteLength(state, 'utf8');
  if (bytes > MAX_REQUEST_STATE_BYTES)
    return `the server's request state is ${bytes} bytes, past the ${MAX_REQUEST_STATE_BYTES} bytes (64 KiB) a call may record; it was not recorded, and the call ends here`;
  if (scrub(state) !== state) {
    return 'the server put a credential it was given into its request state (the opaque state it wants back on the next attempt); scrubbing it would change what the server gets back, so it was not recorded, and the call ends here';
  }
  return undefined;
}

/**
 * One elicitation's params as the turn records them: message and schema, or message and URL. What
 * a person is shown is made plain here, once, for every caller: the message and the form's titles
 * and descriptions become one line without control or bidi characters ({@link inertLine}), and a
 * URL must be one a person may be sent to ({@link personPageUrl}).
 */
export function elicitationSpec(key: string, raw: unknown): InputRequestSpec {
  const params = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const sent = typeof params.message === 'string' ? params.message : '';
  if (sent.length > MAX_INPUT_TEXT_CHARS)
    throw new UnservedInputRequestError(
      `the server's question is ${sent.length} characters long; at most ${MAX_INPUT_TEXT_CHARS}`,
    );
  const message = inertLine(sent);
  if (params.mode === 'url') {
    const url = typeof params.url === 'string' ? params.url : '';
    if (url === '' || url.length > MAX_INPUT_TEXT_CHARS)
      throw new UnservedInputRequestError('the server asked for a URL-mode answer without a usable URL');
    return {
      key,
      kind: 'url',
      message,
      url: personPageUrl(url),
      ...(typeof params.elicitationId === 'string' ? { elicitationId: params.elicitationId } : {}),
    };
  }
  const schema = params.requestedSchema;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    throw new UnservedInputRequestError('the server asked for a form answer without a requestedSchema object');
  return { key, kind: 'form', message, requestedSchema: shownSchema(schema as Record<string, unknown>) };
}

const LOOPBACK_HOST = /^(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/;

/**
 * The URL of a URL-mode question as a person is shown it: `https:`, or `http:` to a loopback host
 * (a local sign-in callback), without a user name or password (`https://bank.example@evil.example/`
 * reads as the bank's). Recorded as parsed, so what is shown is ASCII with nothing to reorder it.
 * Throws {@link UnservedInputRequestError} for anything else (`javascript:`, `file:`, `data:`, ...).
 */
export function personPageUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnservedInputRequestError(
      `the server asked a person to open something that is not a URL: ${JSON.stringify(inertLine(raw).slice(0, 200))}`,
    );
  }
  const allowed = url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOST.test(url.hostname));
  if (!allowed)
    throw new UnservedInputRequestError(
      `the server asked a person to open a ${url.protocol} URL; a person is sent to https: pages, and to http: only to a loopback host`,
    );
  if (url.username !== '' || url.password !== '')
    throw new UnservedInputRequestError(
      'the server asked a person to open a URL with a user name or password in it, which hides the host it goes to',
    );
  return url.href;
}

/** The schema with the text a form shows (titles, descriptions) made plain; names and values stay as sent, since the server reads them back. */
function shownSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const shown = plainTexts(schema);
  const props = schema.properties;
  if (typeof props !== 'object' || props === null || Array.isArray(props)) return shown;
  const fields = Object.entries(props).map(([name, field]): [string, unknown] => {
    if (typeof field !== 'object' || field === null || Array.isArray(field)) return [name, field];
    const out = plainTexts(field as Record<string, unknown>);
    for (const list of ['oneOf', 'anyOf'] as const) {
      const alternatives = out[list];
      if (Array.isArray(alternatives))
        out[list] = alternatives.map((a: unknown) =>
          typeof a === 'object' && a !== null && !Array.isArray(a) ? plainTexts(a as Record<string, unknown>) : a,
        );
    }
    if (Array.isArray(out.enumNames))
      out.enumNames = out.enumNames.map((n: unknown) => (typeof n === 'string' ? inertLine(n) : n));
    return [name, out];
  });
  // fromEntries keeps a field named `__proto__` an own field.
  return { ...shown, properties: Object.fromEntries(fields) };
}

function plainTexts(object: Record<string, unknown>): Record<string, unknown> {
  const out = { ...object };
  for (const key of ['title', 'description'] as const) if (typeof out[key] === 'string') out[key] = inertLine(out[key]);
  return out;
}
