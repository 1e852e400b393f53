/**
 * A 2026-07-28 server's `input_required` result, read for a durable caller: the elicitations go to
 * a person through the turn, roots are answered here, and sampling is refused (the worker holds no
 * model). Nothing is fulfilled in memory across a wait: the call ends, and a new call carries the
 * answers.
 */
import type { InputRequiredResult } from '@modelcontextprotocol/client';
import { MAX_INPUT_KEY_CHARS, MAX_INPUT_TEXT_CHARS, MAX_REQUEST_STATE_BYTES, type InputRequestSpec } from '../contract/index.js';
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
  return (result as { resultType?: unknown }).resultType === 'input_required' && Array.isArray((result as { requests?: unknown }).requests);
}

/** Thrown for an embedded request this client never serves; the model reads the message. */
export class UnservedInputRequestError extends Error {
  override name = 'UnservedInputRequestError';
}

/**
 * Splits an `input_required` result into what a person must answer and what this client answers
 * itself (`roots`: the roots offered to the server, or none). Throws
 * {@link UnservedInputRequestError} for sampling and for a request it cannot read.
 */
export function readInputRequired(result: InputRequiredResult, roots: (() => { uri: string; name?: string }[]) | undefined): NeedsInput {
  const requests: InputRequestSpec[] = [];
  const ownResponses: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(result.inputRequests ?? {})) {
    if (key.length > MAX_INPUT_KEY_CHARS) throw new UnservedInputRequestError(`the server asked for input under a key of ${key.length} characters; at most ${MAX_INPUT_KEY_CHARS}`);
    const method = (entry as { method?: unknown }).method;
    if (method === 'roots/list') {
      ownResponses[key] = { roots: roots?.() ?? [] };
      continue;
    }
    if (method !== 'elicitation/create') throw new UnservedInputRequestError(refuseServerRequest(String(method)).message);
    requests.push(elicitationSpec(key, (entry as { params?: unknown }).params));
  }
  return { resultType: 'input_required', requests, ...(result.requestState !== undefined ? { requestState: result.requestState } : {}), ownResponses };
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
  if (bytes > MAX_REQUEST_STATE_BYTES) return `the server's request state is ${bytes} bytes, past the ${MAX_REQUEST_STATE_BYTES} bytes (64 KiB) a call may record; it was not recorded, and the call ends here`;
  if (scrub(state) !== state) {
    return 'the server put a credential it was given into its request state (the opaque state it wants back on the next attempt); scrubbing it would change what the server gets back, so it was not recorded, and the call ends here';
  }
  return undefined;
}

/** One elicitation's params as the turn records them: message and schema, or message and URL. */
export function elicitationSpec(key: string, raw: unknown): InputRequestSpec {
  const params = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const message = typeof params.message === 'string' ? params.message : '';
  if (message.length > MAX_INPUT_TEXT_CHARS) throw new UnservedInputRequestError(`the server's question is ${message.length} characters long; at most ${MAX_INPUT_TEXT_CHARS}`);
  if (params.mode === 'url') {
    const url = typeof params.url === 'string' ? params.url : '';
    if (url === '' || url.length > MAX_INPUT_TEXT_CHARS) throw new UnservedInputRequestError('the server asked for a URL-mode answer without a usable URL');
    return { key, kind: 'url', message, url, ...(typeof params.elicitationId === 'string' ? { elicitationId: params.elicitationId } : {}) };
  }
  const schema = params.requestedSchema;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new UnservedInputRequestError('the server asked for a form answer without a requestedSchema object');
  return { key, kind: 'form', message, requestedSchema: schema as Record<string, unknown> };
}
