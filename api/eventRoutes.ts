/**
 * A session's status and its event stream (Server-Sent Events), both read from its turns' history.
 */
import { createRoute } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import type { Logger } from 'pino';
import type { TurnClient } from '../client/turnClient.js';
import type { ApiToken } from './auth.js';
import { ApiError, errorBody, toApiError } from './errors.js';
import { EventIdError, placeOf, turnEvents, type TurnEvent } from '../client/turnEvents.js';
import { WorkflowType } from '../contract/index.js';
import { sessionEvents, turnOfEventId } from './events.js';
import type { Context } from 'hono';
import { API, errors, ok, turnIdOf, type ApiApp, type Env } from './routing.js';
import { sessionEventSchema } from './eventSchemas.js';
import { SessionParams, TurnParams } from './paramSchemas.js';
import { z } from '@hono/zod-openapi';
import * as S from './schemas.js';

/** What the status and event routes need. */
export interface EventRoutesDeps {
  turns: TurnClient;
  logger: Logger;
  /** How often an event stream lists its session's turns to find a new one (default 500 ms). */
  eventsPollMs?: number;
  /** Aborted when the server shuts down: event streams end so the server can close. */
  shutdown?: AbortSignal;
  /** Event streams open at once (default {@link DEFAULT_EVENT_STREAMS}); one more is answered 429. */
  maxEventStreams?: EventStreamLimits;
}

/** How many event streams may be open at once: overall, and per token. */
export interface EventStreamLimits {
  total?: number;
  perToken?: number;
}

/**
 * Each stream lists its session's turns every poll and long-polls the history of those running:
 * 64 of them keep a Temporal frontend busy enough. A token gets a quarter, so one caller cannot
 * hold every stream.
 */
export const DEFAULT_EVENT_STREAMS = { total: 64, perToken: 16 } as const;

/** Counts open streams; `take` refuses one beyond the limits and returns how to give it back. */
function streamSlots(limits: EventStreamLimits = {}) {
  const total = limits.total ?? DEFAULT_EVENT_STREAMS.total;
  const perToken = limits.perToken ?? DEFAULT_EVENT_STREAMS.perToken;
  let open = 0;
  const byToken = new Map<string, number>();
  return {
    total,
    perToken,
    take(token: ApiToken): () => void {
      const key = token.hash.toString('hex');
      const mine = byToken.get(key) ?? 0;
      if (mine >= perToken)
        throw new ApiError(
          'rate_limited',
          `this token has ${perToken} event streams open, the most it may (${perToken} event streams per token): close one first`,
          undefined,
          5,
        );
      if (open >= total)
        throw new ApiError(
          'rate_limited',
          `the API serves at most ${total} event streams at once, and that many are open: try again shortly`,
          undefined,
          5,
        );
      open += 1;
      byToken.set(key, mine + 1);
      let given = false;
      return () => {
        if (given) return;
        given = true;
        open -= 1;
        const left = (byToken.get(key) ?? 1) - 1;
        if (left > 0) byToken.set(key, left);
        else byToken.delete(key);
      };
    },
  };
}

/** Adds a session's latest status and its event stream. */
export function registerEventRoutes(app: ApiApp, deps: EventRoutesDeps): void {
  const { turns } = deps;
  const slots = streamSlots(deps.maxEventStreams);
  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/mcp`,
      tags: ['status'],
      summary: "The session's latest server status, with the time it was reported",
      request: { params: SessionParams },
      responses: { 200: ok(S.SessionStatusSchema, "The newest turn's status"), ...errors(404) },
    }),
    async (c) => {
      const { sessionId } = c.req.valid('param');
      const latest = await turns.getStatus(sessionId);
      if (!latest)
        throw new ApiError('not_found', `no turns for session ${JSON.stringify(sessionId)}`, 'path.sessionId');
      return c.json(
        {
          sessionId,
          turnId: latest.turnId,
          ...(latest.status ? { reportedAt: latest.status.reportedAt, status: latest.status } : {}),
          ...(latest.sessionEndedAt !== undefined ? { sessionEndedAt: latest.sessionEndedAt } : {}),
        },
        200,
      );
    },
  );

  registerStreamRoutes(app, deps, slots);
}

/** The session's stream and each turn's. */
/** What a stream route answers: the stream, or an error (404: no such session, turn or Last-Event-ID). */
const STREAM_RESPONSES = {
  200: {
    description: 'An event stream; each event is one of these, its `data` JSON',
    content: { 'text/event-stream': { schema: sessionEventSchema() } },
  },
  ...errors(404),
};

function registerStreamRoutes(app: ApiApp, deps: EventRoutesDeps, slots: ReturnType<typeof streamSlots>): void {
  const { turns } = deps;
  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/events`,
      tags: ['status'],
      summary: "The session's events (Server-Sent Events)",
      description:
        '`mcp.status` at the start of every turn, `call.started` and `call.finished` per call, `call.input_required` per question a call asks a person ' +
        "(answer it at `.../inputs/{requestId}`), `call.approval_required` per call held for a person's approval, `call.progress` per change of a call's MCP task, " +
        '`model.text` and `model.reset` as a model step produces its text, `model.step` per model step, `turn.ended`. ' +
        "On connect the newest turn is sent from its start. Each event's ID is its place in its turn: reconnect with `Last-Event-ID` to be sent that turn's events after it, then the later turns'. " +
        `At most ${slots.perToken} streams per token and ${slots.total} in all are open at once: one more is 429.`,
      request: { params: SessionParams, headers: LastEventIdHeader },
      responses: STREAM_RESPONSES,
    }),
    async (c) => {
      const { sessionId } = c.req.valid('param');
      const after = c.req.valid('header')['last-event-id'];
      if (after !== undefined) {
        const turnIds = await turns.sessionTurns(sessionId);
        if (resumable(() => turnOfEventId(after, turnIds)) === undefined)
          throw new ApiError(
            'not_found',
            `Last-Event-ID names no event of a turn of session ${JSON.stringify(sessionId)}`,
            'header.Last-Event-ID',
          );
      }
      return serveEvents(c, deps, slots, (signal) =>
        sessionEvents(turns, sessionId, {
          pollMs: deps.eventsPollMs ?? 500,
          signal,
          stepText: turns.stepText,
          ...(after !== undefined ? { after } : {}),
        }),
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/turns/{turn}/events`,
      tags: ['turns'],
      summary: "One turn's events in order, from its start or after Last-Event-ID (Server-Sent Events)",
      description:
        "Every event of the turn, in the order it happened, each with its place in the turn as its ID: the session stream's events, and a model step's text as it is produced " +
        '(`model.text`; `model.reset` when the step was tried again, voiding the text sent of it). ' +
        'Reconnect with `Last-Event-ID` (EventSource does) to be sent exactly the events after it. The stream ends after `turn.ended`. ' +
        `It counts toward the same limits as session streams.`,
      request: { params: TurnParams, headers: LastEventIdHeader },
      responses: STREAM_RESPONSES,
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const turnId = turnIdOf(sessionId, turn);
      const after = c.req.valid('header')['last-event-id'];
      if (after !== undefined) resumable(() => placeOf(after, turnId));
      const described = await turns.client.workflow.getHandle(turnId).describe();
      if (described.type !== WorkflowType.agentTurn) throw new ApiError('not_found', `no turn ${turnId}`, 'path.turn');
      return serveEvents(c, deps, slots, (signal) =>
        turnEvents(turns.client, turnId, {
          signal,
          stepText: turns.stepText,
          ...(after !== undefined ? { after } : {}),
        }),
      );
    },
  );
}

/** The `Last-Event-ID` header of a stream that resumes. */
const LastEventIdHeader = z.object({
  'last-event-id': z
    .string()
    .max(1000)
    .optional()
    .openapi({ description: 'The last event ID read: the stream resumes after it', example: 'agent-7/turn-1|0.11.0' }),
});

/** What `check` returns; an ID that is no event of the stream (another turn's, or none at all) is 404. */
function resumable<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof EventIdError) throw new ApiError('not_found', err.message, 'header.Last-Event-ID');
    throw err;
  }
}

/** Streams `events` as SSE while the client stays, holding one of the stream slots. */
function serveEvents(
  c: Context<Env>,
  deps: EventRoutesDeps,
  slots: ReturnType<typeof streamSlots>,
  events: (signal: AbortSignal) => AsyncIterable<TurnEvent>,
) {
  const { logger, shutdown } = deps;
  const release = slots.take(c.get('token')!);
  return streamSSE(c, async (stream) => {
    const stop = new AbortController();
    const abort = () => stop.abort();
    stream.onAbort(abort);
    // A client gone before the stream began sends no abort: its place would be held for good.
    if (stream.aborted || c.req.raw.signal.aborted) abort();
    shutdown?.addEventListener('abort', abort, { once: true });
    const keepAlive = setInterval(() => void stream.write(': keep-alive\n\n').catch(abort), 15_000);
    try {
      for await (const e of events(stop.signal)) {
        await stream.writeSSE({ id: e.id, event: e.event, data: JSON.stringify(e.data) });
      }
    } catch (err) {
      if (!stop.signal.aborted) {
        logger.warn({ requestId: c.get('requestId'), err }, 'event stream failed');
        await stream
          .writeSSE({ event: 'error', data: JSON.stringify(errorBody(toApiError(err), c.get('requestId')).error) })
          .catch(() => undefined);
      }
    } finally {
      release();
      clearInterval(keepAlive);
      shutdown?.removeEventListener('abort', abort);
    }
  });
}
