/**
 * The HTTP API over `TurnClient`: turns, calls, status, events and transcripts. Stateless: every
 * answer is read from, or sent to, Temporal, so several instances can serve behind one balancer.
 */
import { randomUUID } from 'node:crypto';
import { OpenAPIHono, createRoute, z, type RouteConfig } from '@hono/zod-openapi';
import type { HttpBindings } from '@hono/node-server';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { streamSSE } from 'hono/streaming';
import type { Logger } from 'pino';
import type { CallOutcome, CallRequest } from '../contract/index.js';
import type { TurnClient } from '../client/turnClient.js';
import type { Transcript } from '../client/transcript.js';
import { shapeForModel, type ShapeLimits } from '../shaping/index.js';
import { bearerToken, findToken, tokenAllows, tokenAllowsAgent, type ApiToken } from './auth.js';
import { hostAllowed, originAllowed } from '../text/localHost.js';
import { admitRefs, type ApiBoundary } from './boundary.js';
import { binaryOf, linkBinaryContent } from './content.js';
import { ApiError, errorBody, toApiError, type ErrorCode } from './errors.js';
import { sessionEvents } from './events.js';
import { callProgress } from './progress.js';
import { callFingerprint, createCallRecords, type RecordedCall } from './recorded.js';
import { referencePage } from './referencePage.js';
import { registerShelfRoutes } from './shelf.js';
import * as S from './schemas.js';

/** Options of {@link createApi}. */
export interface ApiOptions {
  turns: TurnClient;
  logger: Logger;
  /**
   * Hashed bearer tokens. Every route but health and the document needs one of them; none: those
   * routes answer 401 to everyone (the API is never open for want of a token).
   */
  tokens: readonly ApiToken[];
  /**
   * Where the tokens come from, as the document says to its readers: DMCP_API_TOKENS (or its file),
   * or the data dir's `api.token` (default: DMCP_API_TOKENS).
   */
  tokenSource?: 'configured' | 'dataDir';
  /**
   * Which `Host` and `Origin` headers are served. Loopback names and origins always are, and an
   * origin naming the request's own `Host`; `anyHost` serves every `Host` (an API listening on a
   * network, where a rebound name gains nothing over reaching it directly) unless `allowedHosts`
   * names some. Default: loopback names only.
   */
  requestOrigins?: { allowedHosts?: readonly string[]; allowedOrigins?: readonly string[]; anyHost?: boolean };
  /** Which turn references callers may name (see `api/boundary.ts`). */
  boundary: ApiBoundary;
  /** Request bodies larger than this get 413. */
  maxBodyBytes: number;
  /** How long a call request waits for its outcome before answering 202 with where to poll. */
  callWaitMs: number;
  /** What `?render=model` renders (the worker's shaping limits). */
  shapeLimits: ShapeLimits;
  /** How often an event stream reads Temporal (default 500 ms). */
  eventsPollMs?: number;
  /** Aborted when the server shuts down: event streams end so the server can close. */
  shutdown?: AbortSignal;
  /**
   * The shelf routes: the operator's turn key (adding and granting are signed with it; without it
   * they are refused), the environment whose secret values an entry may not hold, and how long a
   * shelf request waits for a worker (default 20 s).
   */
  shelf?: { turnKey?: Buffer; env?: NodeJS.ProcessEnv; timeoutMs?: number };
}

type Env = { Bindings: HttpBindings; Variables: { requestId: string; token?: ApiToken } };

const API = '/api/v1';
const JSON_TYPE = 'application/json';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Every error answer a route may give, described once. */
function errors(...codes: number[]): RouteConfig['responses'] {
  const out: RouteConfig['responses'] = {};
  for (const code of [...new Set([400, 401, 403, 413, 415, 429, 500, 503, ...codes])]) {
    out[code] = { description: 'An error; `error.code` is stable.', content: { [JSON_TYPE]: { schema: S.ErrorSchema } } };
  }
  return out;
}

/** What a route that needs no token may still answer: a `Host` or `Origin` that is not served. */
const hostRefused: RouteConfig['responses'] = {
  403: { description: 'The `Host` or `Origin` is not served (see docs/api.md).', content: { [JSON_TYPE]: { schema: S.ErrorSchema } } },
};

function ok<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { [JSON_TYPE]: { schema } } };
}

const jsonBody = <T extends z.ZodType>(schema: T) => ({ body: { required: true, content: { [JSON_TYPE]: { schema } } } });

const turnIdOf = (sessionId: string, turn: string) => `${sessionId}/${turn}`;
const turnPath = (sessionId: string, turn: string) => `${API}/sessions/${encodeURIComponent(sessionId)}/turns/${turn}`;
const callPath = (sessionId: string, turn: string, callId: string) => `${turnPath(sessionId, turn)}/calls/${encodeURIComponent(callId)}`;

/** The transcript as JSON for a client: binary content as links. */
function linkedTranscript(t: Transcript, sessionId: string, turn: string) {
  return {
    ...t,
    calls: t.calls.map((c) => ({
      ...c,
      ...(c.outcome ? { outcome: { ...c.outcome, content: linkBinaryContent(c.outcome.content, `${callPath(sessionId, turn, c.id)}/content`) } } : {}),
    })),
  };
}

const requestIdRe = /^[\w.:-]{1,64}$/;

/** Whether a route's path (`/a/:b/c`) matches a request path. */
function routeMatches(route: string, path: string): boolean {
  const r = route.split('/');
  const p = path.split('/');
  return r.length === p.length && r.every((part, i) => (part.startsWith(':') ? p[i] !== '' : part === p[i]));
}

export function createApi(options: ApiOptions): OpenAPIHono<Env> {
  const { turns, logger } = options;
  const records = createCallRecords(turns.client);
  const app = new OpenAPIHono<Env>({
    defaultHook: (result) => {
      if (!result.success) {
        const issue = result.error.issues[0];
        const target = result.target === 'param' ? 'path' : result.target === 'json' ? 'body' : result.target;
        const field = [target, ...(issue?.path ?? []).map(String)].join('.');
        throw new ApiError('bad_request', `${field}: ${issue?.message ?? 'invalid'}`, field);
      }
    },
  });

  const fail = (c: Context<Env>, err: ApiError) => {
    if (err.retryAfter !== undefined) c.header('Retry-After', String(err.retryAfter));
    if (err.code === 'unauthorized') c.header('WWW-Authenticate', 'Bearer');
    return c.json(errorBody(err, c.get('requestId') ?? ''), err.status);
  };

  app.use('*', async (c, next) => {
    const given = c.req.header('x-request-id');
    const requestId = given && requestIdRe.test(given) ? given : randomUUID();
    c.set('requestId', requestId);
    const started = performance.now();
    await next();
    c.header('X-Request-Id', requestId);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Cache-Control', 'no-store');
    // The path only: a query may hold a caller's data, and headers (the token) are never logged.
    logger.info({ requestId, method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - started) }, 'request');
  });

  app.onError((err, c) => {
    if (err instanceof HTTPException && !(err instanceof ApiError)) {
      const code: ErrorCode = err.status === 413 ? 'payload_too_large' : err.status === 415 ? 'unsupported_media_type' : err.status === 401 ? 'unauthorized' : 'bad_request';
      const message = code === 'unsupported_media_type' ? 'body: send it as application/json (Content-Type)' : `body: ${err.message || 'malformed request'}`;
      return fail(c, new ApiError(code, message, code === 'bad_request' || code === 'unsupported_media_type' ? 'body' : undefined));
    }
    const apiError = toApiError(err);
    if (apiError.code === 'internal' || apiError.code === 'unavailable') logger.error({ requestId: c.get('requestId'), err }, 'request failed');
    return fail(c, apiError);
  });
  app.notFound((c) => {
    // A path that exists with other methods: 405 with the ones it has, as HTTP asks.
    const methods = [...new Set(app.routes.filter((r) => r.method !== 'ALL' && routeMatches(r.path, c.req.path)).map((r) => r.method))];
    if (methods.length > 0) {
      c.header('Allow', methods.join(', '));
      return fail(c, new ApiError('method_not_allowed', `${c.req.method} is not a method of ${c.req.path}: ${methods.join(', ')}`));
    }
    return fail(c, new ApiError('not_found', `no route ${c.req.method} ${c.req.path}`));
  });

  // Every route checks `Host` and `Origin` first, health and the document too: a page that rebinds
  // its own name to 127.0.0.1 reaches the API through its visitor's browser, and its requests carry
  // that name as `Host` and its site as `Origin`. Without this, the token is all that stands between.
  const origins = options.requestOrigins ?? {};
  const hostServed = (host: string | undefined) => {
    if (origins.anyHost && !origins.allowedHosts?.length) return host !== undefined && host !== '';
    return hostAllowed(host, origins.allowedHosts);
  };
  const originServed = (origin: string, host: string | undefined) =>
    originAllowed(origin, origins.allowedOrigins) || (host !== undefined && (origin.toLowerCase() === `http://${host.toLowerCase()}` || origin.toLowerCase() === `https://${host.toLowerCase()}`));
  app.use('*', async (c, next) => {
    // Node's server builds the request's URL from `Host`; a request made in-process has only the URL.
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    if (!hostServed(host)) {
      throw new ApiError('forbidden', `Host ${JSON.stringify(host ?? '')} is not a name of this API: use 127.0.0.1 or localhost, or list the name in DMCP_API_ALLOWED_HOSTS`);
    }
    const origin = c.req.header('origin');
    if (origin === undefined) return next();
    if (!originServed(origin, host)) {
      throw new ApiError('forbidden', `Origin ${JSON.stringify(origin)} may not call this API: pages on loopback and on the API's own address may; list others in DMCP_API_ALLOWED_ORIGINS`);
    }
    // An allowed page may send the token and JSON: that needs a preflight, answered here.
    c.header('Access-Control-Allow-Origin', origin);
    c.header('Vary', 'Origin');
    c.header('Access-Control-Expose-Headers', 'Location, Retry-After, X-Request-Id, WWW-Authenticate');
    if (c.req.method === 'OPTIONS' && c.req.header('access-control-request-method')) {
      c.header('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE');
      c.header('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Request-Id');
      c.header('Access-Control-Max-Age', '600');
      return c.body(null, 204);
    }
    return next();
  });

  app.use(`${API}/*`, bodyLimit({ maxSize: options.maxBodyBytes, onError: () => { throw new ApiError('payload_too_large', `the body is larger than ${options.maxBodyBytes} bytes (DMCP_API_MAX_BODY)`); } }));

  // Every route but health and the document needs a token; there is no open mode.
  const authenticate: MiddlewareHandler<Env> = async (c, next) => {
    if (options.tokens.length === 0) throw new ApiError('unauthorized', 'this API has no tokens configured, so it serves no one: set DMCP_API_TOKENS, or start it with `durable-mcp api`, which creates api.token in DMCP_DATA_DIR');
    const presented = bearerToken(c.req.header('authorization'));
    if (!presented) throw new ApiError('unauthorized', 'send "Authorization: Bearer <token>" (the token of `durable-mcp dev` is in api.token in its DMCP_DATA_DIR)');
    const token = findToken(options.tokens, presented);
    if (!token) throw new ApiError('unauthorized', 'the token is not known to this API');
    c.set('token', token);
    // A cross-site form or a no-cors fetch sends a body as one of the types a page may send without
    // asking; the routes take JSON or nothing, so any other type is refused before anything changes.
    if (!SAFE_METHODS.has(c.req.method)) {
      const type = c.req.header('content-type');
      if (type !== undefined && type.split(';')[0]!.trim().toLowerCase() !== JSON_TYPE) throw new ApiError('unsupported_media_type', 'send the body as application/json (Content-Type), or send no body and no Content-Type', 'body');
    }
    return next();
  };
  for (const path of [`${API}/sessions/*`, `${API}/shelf`, `${API}/shelf/*`, `${API}/agents/*`]) app.use(path, authenticate);
  // The routes whose body is required: without one (and its type) there is nothing to validate.
  const bodyRequired: MiddlewareHandler<Env> = async (c, next) => {
    if (c.req.method === 'POST' || c.req.method === 'PUT') {
      if (c.req.header('content-type') === undefined) throw new ApiError('unsupported_media_type', 'this route needs a JSON body: send it as application/json (Content-Type)', 'body');
    }
    return next();
  };
  for (const path of [`${API}/sessions/:sessionId/turns`, `${API}/sessions/:sessionId/turns/:turn/calls`, `${API}/shelf/servers/:name`]) app.use(path, bodyRequired);

  const authorize: MiddlewareHandler<Env> = async (c, next) => {
    const sessionId = c.req.param('sessionId') ?? '';
    const token = c.get('token')!;
    if (!tokenAllows(token, sessionId)) throw new ApiError('forbidden', `the token may not reach session ${JSON.stringify(sessionId)}`);
    return next();
  };
  app.use(`${API}/sessions/:sessionId/*`, authorize);
  app.use(`${API}/sessions/:sessionId`, authorize);

  // --- operations ---

  app.openapi(
    createRoute({ method: 'get', path: '/healthz', tags: ['operations'], summary: 'The process is up', security: [], responses: { 200: ok(S.HealthSchema, 'Up'), ...hostRefused } }),
    (c) => c.json({ ok: true }, 200),
  );
  app.openapi(
    createRoute({
      method: 'get', path: '/readyz', tags: ['operations'], summary: 'Temporal is reachable', security: [],
      responses: { 200: ok(S.HealthSchema, 'Ready'), 503: ok(S.HealthSchema, 'Temporal is not reachable'), ...hostRefused },
    }),
    async (c) => {
      try {
        await withTimeout(turns.client.connection.workflowService.getSystemInfo({}), 3000);
        return c.json({ ok: true, temporal: 'reachable' }, 200);
      } catch {
        return c.json({ ok: false, temporal: 'unreachable' }, 503);
      }
    },
  );

  // --- turns ---

  app.openapi(
    createRoute({
      method: 'post', path: `${API}/sessions/{sessionId}/turns`, tags: ['turns'],
      summary: 'Start a turn (interactive), or run one (batch, with `calls`)',
      description: 'Interactive: answers once the servers are reconciled and the tool list is frozen. Batch: answers with every outcome once the turn has run.',
      request: { params: S.SessionParams, ...jsonBody(S.StartTurnSchema) },
      responses: {
        200: ok(S.TurnResultSchema, 'The batch ran; every outcome'),
        201: ok(S.TurnStartedSchema, 'The turn started: status, frozen tool list, servers paragraph'),
        ...errors(404, 409, 422),
      },
    }),
    async (c) => {
      const { sessionId } = c.req.valid('param');
      const body = c.req.valid('json');
      const refs = {
        workspace: body.workspace ?? process.cwd(),
        mcpConfigFiles: body.servers?.mcpConfigFiles ?? [],
        inlineSpecs: body.servers?.inlineSpecs ?? [],
        plugins: body.servers?.plugins ?? [],
      };
      const admitted = await admitRefs(options.boundary, refs);
      if ('refused' in admitted) throw new ApiError('forbidden', `body.${admitted.refused.field}: ${admitted.refused.message}`, `body.${admitted.refused.field}`);
      if (body.agent !== undefined) {
        const token = c.get('token');
        if (token && !tokenAllowsAgent(token, body.agent)) throw new ApiError('forbidden', `body.agent: the token may not run turns as agent ${JSON.stringify(body.agent)} (none of its prefixes starts the agent ID)`, 'body.agent');
        // The agent is signed with the other references, the workspace among them.
        if (!admitted.sign) throw new ApiError('forbidden', `body.workspace: the turn names an agent, so its references are signed as a whole, and the workspace ${JSON.stringify(refs.workspace)} is not under DMCP_WORKSPACE_ROOTS`, 'body.workspace');
      }
      const start = {
        sessionId,
        workspace: refs.workspace,
        servers: { mcpConfigFiles: refs.mcpConfigFiles, inlineSpecs: refs.inlineSpecs, plugins: refs.plugins },
        ...(body.limits ? { limits: body.limits } : {}),
        ...(body.turn !== undefined ? { turn: body.turn } : {}),
        ...(body.agent !== undefined ? { agent: body.agent } : {}),
        unsigned: !admitted.sign,
      };
      if (body.calls) {
        const result = await turns.runBatch({ ...start, calls: body.calls as CallRequest[][] });
        const turn = result.turnId.slice(sessionId.length + 1);
        return c.json({ sessionId, turnId: result.turnId, turn, endedBy: result.endedBy, calls: result.calls, ...(result.callsBefore !== undefined ? { callsBefore: result.callsBefore } : {}) }, 200);
      }
      const t = await turns.startTurn(start);
      const turn = t.turnId.slice(sessionId.length + 1);
      const base = turnPath(sessionId, turn);
      c.header('Location', base);
      return c.json(
        {
          sessionId, turnId: t.turnId, turn, workerQueue: t.workerQueue, status: t.status, tools: t.tools, serversParagraph: t.serversParagraph,
          links: { calls: `${base}/calls`, end: `${base}/end`, transcript: `${base}/transcript` },
        },
        201,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'get', path: `${API}/sessions/{sessionId}/turns`, tags: ['turns'], summary: "The session's turns, oldest first",
      request: { params: S.SessionParams },
      responses: { 200: ok(S.TurnListSchema, 'Turns'), ...errors() },
    }),
    async (c) => {
      const { sessionId } = c.req.valid('param');
      const ids = await turns.sessionTurns(sessionId);
      const list = ids.map((turnId) => {
        const turn = turnId.slice(sessionId.length + 1);
        return { turnId, turn, href: turnPath(sessionId, turn) };
      });
      return c.json({ sessionId, turns: list }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post', path: `${API}/sessions/{sessionId}/turns/{turn}/end`, tags: ['turns'], summary: 'End an interactive turn',
      request: { params: S.TurnParams },
      responses: { 200: ok(S.TurnResultSchema, 'The turn ended; its calls'), ...errors(404, 409) },
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const result = await answerWithin(turns.endTurn(turnIdOf(sessionId, turn)), options.callWaitMs, 'the turn did not end');
      return c.json({ sessionId, turnId: result.turnId, turn, endedBy: result.endedBy, calls: result.calls, ...(result.callsBefore !== undefined ? { callsBefore: result.callsBefore } : {}) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get', path: `${API}/sessions/{sessionId}/turns/{turn}/transcript`, tags: ['transcripts'],
      summary: 'A turn rendered from its history (across continue-as-new runs)',
      description: 'Images, audio and blobs are links (`href`) to their bytes, authorized like the rest.',
      request: { params: S.TurnParams },
      responses: { 200: ok(S.TranscriptSchema, 'The transcript'), ...errors(404) },
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const t = await readTranscript(turns, sessionId, turn);
      return c.json(linkedTranscript(t, sessionId, turn), 200);
    },
  );

  // --- calls ---

  app.openapi(
    createRoute({
      method: 'post', path: `${API}/sessions/{sessionId}/turns/{turn}/calls`, tags: ['calls'],
      summary: 'Run one tool call (idempotent by call ID)',
      description:
        'The call ID is the Update ID: the same ID returns the recorded outcome and never runs the tool again; the same ID with other arguments is 409. ' +
        'A call still running after `wait` (default DMCP_API_CALL_WAIT) answers 202 with where to poll; a 202 comes only once the turn has accepted the call, so the poll finds it.',
      request: { params: S.TurnParams, query: S.CallQuerySchema, ...jsonBody(S.CallRequestSchema) },
      responses: {
        200: ok(S.CallResultSchema, 'The outcome (the recorded one for a repeated ID)'),
        202: ok(S.CallPendingSchema, 'Still running; poll `poll`'),
        ...errors(404, 409, 422),
      },
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const query = c.req.valid('query');
      const request = c.req.valid('json') as CallRequest;
      const turnId = turnIdOf(sessionId, turn);
      const waitMs = Math.min(query.wait !== undefined ? Number(query.wait) : options.callWaitMs, options.callWaitMs);
      const deadline = Date.now() + waitMs;
      // Only an accepted call is in history, where a poll finds it: a 202 comes after acceptance.
      const accepted = await answerWithin(turns.startCall(turnId, request), options.callWaitMs, 'the turn did not accept the call');
      // Once accepted, history holds what the ID was first sent with: read it while the tool runs.
      const outcome = accepted.result();
      // A call still running when we answer 202 settles later, unobserved.
      outcome.catch(() => undefined);
      const [recorded, answer]: [RecordedCall | undefined, CallOutcome | typeof TIMED_OUT] = await Promise.all([
        records.recorded(turnId, request.id, accepted.workflowRunId),
        raceTimeout(outcome, Math.max(0, deadline - Date.now())),
      ]);
      if (recorded && 'earlier' in recorded) {
        throw new ApiError('call_id_conflict', `call ID ${JSON.stringify(request.id)} ran earlier in this turn; its outcome is in the transcript`, 'body.id');
      }
      if (recorded && recorded.fingerprint !== callFingerprint(request)) {
        throw new ApiError('call_id_conflict', `call ID ${JSON.stringify(request.id)} was already sent with another tool or other arguments; a new call needs a new ID`, 'body.id');
      }
      const poll = callPath(sessionId, turn, request.id);
      if (answer === TIMED_OUT) {
        const progress = await callProgress(turns.client, turnId, request.id).catch(() => undefined);
        c.header('Location', poll);
        c.header('Retry-After', '1');
        return c.json({ id: request.id, state: 'running' as const, poll, ...(progress ? { progress } : {}) }, 202);
      }
      return c.json(await callResult(request.id, request.name, answer, query.render === 'model', options.shapeLimits), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get', path: `${API}/sessions/{sessionId}/turns/{turn}/calls/{callId}`, tags: ['calls'],
      summary: 'A call sent earlier: its outcome, or 202 while it runs',
      request: { params: S.CallParams, query: S.CallQuerySchema.pick({ render: true }) },
      responses: { 200: ok(S.CallResultSchema, 'The recorded outcome'), 202: ok(S.CallPendingSchema, 'Still running'), ...errors(404) },
    }),
    async (c) => {
      const { sessionId, turn, callId } = c.req.valid('param');
      const { render } = c.req.valid('query');
      const turnId = turnIdOf(sessionId, turn);
      const t = await readTranscript(turns, sessionId, turn);
      const call = t.calls.find((x) => x.id === callId);
      if (!call) throw new ApiError('not_found', `no call ${JSON.stringify(callId)} in turn ${turnId}`, 'path.callId');
      if (!call.outcome) {
        const poll = callPath(sessionId, turn, callId);
        const progress = await callProgress(turns.client, turnId, callId).catch(() => undefined);
        c.header('Retry-After', '1');
        return c.json({ id: callId, state: 'running' as const, poll, ...(progress ? { progress } : {}) }, 202);
      }
      return c.json(await callResult(call.id, call.name, call.outcome, render === 'model', options.shapeLimits), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post', path: `${API}/sessions/{sessionId}/turns/{turn}/calls/{callId}/cancel`, tags: ['calls'],
      summary: 'Cancel a running call (the server is sent notifications/cancelled)',
      request: { params: S.CallParams },
      responses: { 200: ok(S.CancelResultSchema, '`cancelled` is false when no such call was running'), ...errors(404, 409) },
    }),
    async (c) => {
      const { sessionId, turn, callId } = c.req.valid('param');
      const cancelled = await answerWithin(turns.cancelCall(turnIdOf(sessionId, turn), callId), options.callWaitMs, 'the turn did not answer the cancellation');
      return c.json({ id: callId, cancelled }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get', path: `${API}/sessions/{sessionId}/turns/{turn}/calls/{callId}/content/{index}`, tags: ['transcripts'],
      summary: "The bytes of one binary content block of a call's outcome",
      description: 'Images are served as the type their bytes show; other blocks as application/octet-stream (audio as its declared audio type).',
      request: { params: S.ContentParams },
      responses: {
        200: { description: 'The bytes', content: { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) }, 'image/png': { schema: z.string().openapi({ format: 'binary' }) } } },
        ...errors(404),
      },
    }),
    async (c) => {
      const { sessionId, turn, callId, index } = c.req.valid('param');
      const t = await readTranscript(turns, sessionId, turn);
      const call = t.calls.find((x) => x.id === callId);
      const bin = binaryOf(call?.outcome?.content[Number(index)]);
      if (!bin) throw new ApiError('not_found', `no binary content block ${index} in call ${JSON.stringify(callId)}`, 'path.index');
      c.header('Content-Security-Policy', "default-src 'none'");
      c.header('Content-Disposition', `inline; filename="${callId.replace(/[^\w.-]/g, '_')}-${index}"`);
      return c.body(new Uint8Array(bin.bytes), 200, { 'Content-Type': bin.contentType });
    },
  );

  // --- status and events ---

  app.openapi(
    createRoute({
      method: 'get', path: `${API}/sessions/{sessionId}/mcp`, tags: ['status'],
      summary: "The session's latest server status, with the time it was reported",
      request: { params: S.SessionParams },
      responses: { 200: ok(S.SessionStatusSchema, 'The newest turn\'s status'), ...errors(404) },
    }),
    async (c) => {
      const { sessionId } = c.req.valid('param');
      const latest = await turns.getStatus(sessionId);
      if (!latest) throw new ApiError('not_found', `no turns for session ${JSON.stringify(sessionId)}`, 'path.sessionId');
      return c.json({ sessionId, turnId: latest.turnId, ...(latest.status ? { reportedAt: latest.status.reportedAt, status: latest.status } : {}) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get', path: `${API}/sessions/{sessionId}/events`, tags: ['status'],
      summary: "The session's events (Server-Sent Events)",
      description:
        '`mcp.status` at the start of every turn, `call.started` and `call.finished` per call, `turn.ended`. The newest turn is sent from its start on connect; ' +
        'event IDs are stable, so a reconnecting client can drop what it has.',
      request: { params: S.SessionParams },
      responses: { 200: { description: 'An event stream; each event is one of these, its `data` JSON', content: { 'text/event-stream': { schema: S.sessionEventSchema() } } }, ...errors() },
    }),
    (c) => {
      const { sessionId } = c.req.valid('param');
      return streamSSE(c, async (stream) => {
        const stop = new AbortController();
        const abort = () => stop.abort();
        stream.onAbort(abort);
        options.shutdown?.addEventListener('abort', abort, { once: true });
        const keepAlive = setInterval(() => void stream.write(': keep-alive\n\n').catch(abort), 15_000);
        try {
          for await (const e of sessionEvents(turns, sessionId, { pollMs: options.eventsPollMs ?? 500, signal: stop.signal })) {
            await stream.writeSSE({ id: e.id, event: e.event, data: JSON.stringify(e.data) });
          }
        } catch (err) {
          if (!stop.signal.aborted) {
            const apiError = toApiError(err);
            logger.warn({ requestId: c.get('requestId'), err }, 'event stream failed');
            await stream.writeSSE({ event: 'error', data: JSON.stringify(errorBody(apiError, c.get('requestId')).error) }).catch(() => undefined);
          }
        } finally {
          clearInterval(keepAlive);
          options.shutdown?.removeEventListener('abort', abort);
        }
      });
    },
  );

  registerShelfRoutes(app, {
    temporal: { client: turns.client, taskQueue: turns.taskQueue },
    ...options.shelf,
  });

  // --- the document and its page ---

  app.doc31(`${API}/openapi.json`, {
    openapi: '3.1.0',
    info: {
      title: 'durable-mcp API',
      version: '1',
      description: 'Turns, tool calls (idempotent by call ID), server status, events and transcripts of durable-mcp. Every fact lives in Temporal.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
  });
  for (const [, name, schema] of S.SESSION_EVENT_DATA) app.openAPIRegistry.register(name, schema);
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description:
      (options.tokenSource === 'dataDir'
        ? 'The token in the file api.token of the API\'s data dir (DMCP_DATA_DIR), created 0600 when the API first starts without DMCP_API_TOKENS: it reaches every session and agent, and has the shelf scope. '
        : 'A token whose SHA-256 is configured in DMCP_API_TOKENS or DMCP_API_TOKENS_FILE: it reaches the sessions and agents its prefixes start; `shelf` routes need an entry ending in the word shelf. ') +
      'Every route needs one except /healthz, /readyz, this document and its page. A `Host` that is not a name of the API and a cross-site `Origin` are refused with 403 before the token is looked at.',
  });
  app.get(`${API}/docs`, (c) => {
    c.header('Content-Security-Policy', "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'");
    return c.html(referencePage(`${API}/openapi.json`));
  });

  return app;
}

async function readTranscript(turns: TurnClient, sessionId: string, turn: string): Promise<Transcript> {
  const turnId = turnIdOf(sessionId, turn);
  const t = await turns.transcript(turnId);
  // A turn that never existed reads as an empty history; one of another session cannot be named.
  if (t.sessionId !== sessionId) throw new ApiError('not_found', `no turn ${turnId}`, 'path.turn');
  return t;
}

async function callResult(id: string, name: string, outcome: CallOutcome, render: boolean, limits: ShapeLimits) {
  return { id, name, outcome, ...(render ? { model: await shapeForModel(outcome, limits) } : {}) };
}

const TIMED_OUT = Symbol('timed out');

async function raceTimeout<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `p`, or a 503 when the turn has not answered within `ms` (a turn still starting, or one whose
 * worker is gone). Ending and cancelling are idempotent, so the client may send them again.
 */
async function answerWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  p.catch(() => undefined);
  const answer = await raceTimeout(p, ms);
  if (answer === TIMED_OUT) throw new ApiError('turn_not_answering', `${what} within ${Math.round(ms / 1000)} s; sending the same request again is safe`, undefined, 1);
  return answer;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), ms)))]).finally(() => clearTimeout(timer));
}
