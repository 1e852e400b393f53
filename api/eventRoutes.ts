/**
 * A session's status and its event stream (Server-Sent Events), both read from its turns' history.
 */
import { createRoute } from '@hono/zod-openapi';
import { streamSSE } from 'hono/streaming';
import type { Logger } from 'pino';
import type { TurnClient } from '../client/turnClient.js';
import type { ApiToken } from './auth.js';
import { ApiError, errorBody, toApiError } from './errors.js';
import { sessionEvents } from './events.js';
import { API, errors, ok, type ApiApp } from './routing.js';
import { sessionEventSchema } from './eventSchemas.js';
import { SessionParams } from './paramSchemas.js';
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
  const { turns, logger, shutdown } = deps;
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

  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/events`,
      tags: ['status'],
      summary: "The session's events (Server-Sent Events)",
      description:
        '`mcp.status` at the start of every turn, `call.started` and `call.finished` per call, `call.input_required` per question a call asks a person ' +
        "(answer it at `.../inputs/{requestId}`), `call.progress` per change of a call's MCP task, `turn.ended`. The newest turn is sent from its start on connect; " +
        'event IDs are stable, so a reconnecting client can drop what it has. ' +
        `At most ${slots.perToken} streams per token and ${slots.total} in all are open at once: one more is 429.`,
      request: { params: SessionParams },
      responses: {
        200: {
          description: 'An event stream; each event is one of these, its `data` JSON',
          content: { 'text/event-stream': { schema: sessionEventSchema() } },
        },
        ...errors(),
      },
    }),
    (c) => {
      const { sessionId } = c.req.valid('param');
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
          for await (const e of sessionEvents(turns, sessionId, {
            pollMs: deps.eventsPollMs ?? 500,
            signal: stop.signal,
          })) {
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
    },
  );
}
