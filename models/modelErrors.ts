/**
 * What a failed model request means for the step: retry it (rate limits, server errors, lost
 * connections), with the delay the provider asked for, or end the turn (a request the provider
 * refuses will be refused again). Pure, so the rule is table-tested.
 */

/** How a failed model request is handled. */
export interface ModelFailure {
  retryable: boolean;
  /** One line for history: the status and the provider's message, never a header or the request. */
  message: string;
  /** The provider's `Retry-After`, in ms (capped), when it gave one. */
  retryAfterMs?: number;
}

/** Longest `Retry-After` honoured: past it the step's own backoff decides. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;
const RETRYABLE_STATUS = new Set([408, 409, 425, 429]);

/** The shape of the AI SDK's `APICallError` this reads (checked by field, not by class, across SDK copies). */
interface ApiCallErrorLike {
  statusCode?: number;
  responseHeaders?: Record<string, string>;
  message: string;
  data?: unknown;
}

/** Classifies `err`, thrown by a model request of model `name`, at workflow time `now`. */
export function classifyModelError(err: unknown, name: string, now: number = Date.now()): ModelFailure {
  const e = err as Partial<ApiCallErrorLike> | undefined;
  const status = typeof e?.statusCode === 'number' ? e.statusCode : undefined;
  const detail = oneLine(typeof e?.message === 'string' ? e.message : String(err));
  if (status === undefined) {
    return { retryable: true, message: `model ${name}: the request failed: ${detail}` };
  }
  // A success whose streamed body broke off (a lost connection mid-answer) is tried again too.
  if (status < 400) return { retryable: true, message: `model ${name}: the answer broke off: ${detail}` };
  const retryable = status >= 500 || RETRYABLE_STATUS.has(status);
  const retryAfterMs = retryAfter(e?.responseHeaders, now);
  return {
    retryable,
    message: `model ${name} answered ${status}: ${detail}${retryable ? '' : ' (not retried: the same request would be refused again)'}`,
    ...(retryable && retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/** `Retry-After` in ms: seconds, or an HTTP date; undefined when absent or unreadable. */
export function retryAfter(headers: Record<string, string> | undefined, now: number): number | undefined {
  const value = headers?.['retry-after'] ?? headers?.['Retry-After'];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) && value.trim() !== '' ? seconds * 1000 : Date.parse(value) - now;
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 500 ? `${flat.slice(0, 500)}…` : flat;
}

/** The operator's configuration does not let this step run: retrying will not help. */
export class ModelConfigError extends Error {}

/** The model's endpoint refused or failed the request; `failure` says whether to retry. */
export class ModelRequestError extends Error {
  constructor(readonly failure: ModelFailure) {
    super(failure.message);
  }
}
