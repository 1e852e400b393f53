/**
 * What every route module shares: the app's type, the API's paths, how a route describes its
 * answers, and how a route waits on a turn without waiting forever.
 */
import type { OpenAPIHono, RouteConfig, z } from '@hono/zod-openapi';
import type { HttpBindings } from '@hono/node-server';
import { WorkflowNotFoundError } from '@temporalio/common';
import { findCause } from '../client/failures.js';
import type { TurnClient } from '../client/turnClient.js';
import type { Transcript } from '../client/transcript.js';
import type { ApiToken } from './auth.js';
import { ApiError } from './errors.js';
import { ErrorSchema } from './schemas.js';

/** The variables a request carries through the middleware: its ID, and the token that was presented. */
export type Env = { Bindings: HttpBindings; Variables: { requestId: string; token?: ApiToken } };

/** The app every route module registers on. */
export type ApiApp = OpenAPIHono<Env>;

/** Where the versioned API lives. */
export const API = '/api/v1';
export const JSON_TYPE = 'application/json';

/** The error answers every route that needs a token may give. */
const COMMON_ERRORS = [400, 401, 403, 413, 415, 429, 500, 503];

/** Every error answer a route may give, described once: the common ones and `codes`. */
export function errors(...codes: number[]): RouteConfig['responses'] {
  const out: RouteConfig['responses'] = {};
  for (const code of [...new Set([...COMMON_ERRORS, ...codes])]) {
    out[code] = { description: 'An error; `error.code` is stable.', content: { [JSON_TYPE]: { schema: ErrorSchema } } };
  }
  return out;
}

/** What a route that needs no token may still answer: a `Host` or `Origin` that is not served. */
export const hostRefused: RouteConfig['responses'] = {
  403: {
    description: 'The `Host` or `Origin` is not served (see docs/api.md).',
    content: { [JSON_TYPE]: { schema: ErrorSchema } },
  },
};

/** A JSON answer of `schema`. */
export function ok<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { [JSON_TYPE]: { schema } } };
}

/** A required JSON request body of `schema`. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  body: { required: true, content: { [JSON_TYPE]: { schema } } },
});

/** A turn's workflow ID from its path parts. */
export const turnIdOf = (sessionId: string, turn: string) => `${sessionId}/${turn}`;
/** A turn's path on the API. */
export const turnPath = (sessionId: string, turn: string) =>
  `${API}/sessions/${encodeURIComponent(sessionId)}/turns/${turn}`;
/** A call's path on the API. */
export const callPath = (sessionId: string, turn: string, callId: string) =>
  `${turnPath(sessionId, turn)}/calls/${encodeURIComponent(callId)}`;

/** A turn's transcript, or 404: a turn of another session cannot be named through this one. */
export async function readTranscript(turns: TurnClient, sessionId: string, turn: string): Promise<Transcript> {
  const turnId = turnIdOf(sessionId, turn);
  const t = await turns.transcript(turnId);
  // A turn that never existed reads as an empty history.
  if (t.sessionId !== sessionId) throw new ApiError('not_found', `no turn ${turnId}`, 'path.turn');
  return t;
}

export const TIMED_OUT = Symbol('timed out');

/** `p`, or {@link TIMED_OUT} once `ms` have passed. */
export async function raceTimeout<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `p`, or a 503 when the turn has not answered within `ms` (a turn still starting, or one whose
 * worker is gone). Ending and cancelling are idempotent, so the client may send them again.
 */
export async function answerWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  p.catch(() => undefined);
  const answer = await raceTimeout(p, ms);
  if (answer === TIMED_OUT)
    throw new ApiError(
      'turn_not_answering',
      `${what} within ${Math.round(ms / 1000)} s; sending the same request again is safe`,
      undefined,
      1,
    );
  return answer;
}

/**
 * `p`, an Update sent to a turn; when Temporal finds no run to deliver it to, `turn_ended` if the
 * turn exists (it has closed), else Temporal's error (404). Temporal answers both with the same
 * error, so the turn is looked up rather than the error's text read.
 */
export async function sentToTurn<T>(turns: Pick<TurnClient, 'client'>, turnId: string, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (
      findCause(err, (e): e is WorkflowNotFoundError => e instanceof WorkflowNotFoundError) &&
      (await turnClosed(turns, turnId))
    ) {
      throw new ApiError('turn_ended', 'the turn has ended; start a new turn');
    }
    throw err;
  }
}

async function turnClosed(turns: Pick<TurnClient, 'client'>, turnId: string): Promise<boolean> {
  try {
    return (await turns.client.workflow.getHandle(turnId).describe()).status.name !== 'RUNNING';
  } catch {
    return false;
  }
}
