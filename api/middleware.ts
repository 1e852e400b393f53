/**
 * What runs around every route: the request ID and its log line, the `Host` and `Origin` checks,
 * the body limit, the token and its reach, and the one place errors become answers.
 */
import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { Logger } from 'pino';
import { hostAllowed, originAllowed } from '../text/localHost.js';
import { bearerToken, findToken, tokenAllows, type ApiToken } from './auth.js';
import { ApiError, errorBody, toApiError, type ErrorCode } from './errors.js';
import { API, JSON_TYPE, type ApiApp, type Env } from './routing.js';

/** Which `Host` and `Origin` headers are served (see `ApiOptions.requestOrigins`). */
export interface RequestOrigins {
  allowedHosts?: readonly string[];
  allowedOrigins?: readonly string[];
  anyHost?: boolean;
}

/** What the middleware needs of the API's options. */
export interface MiddlewareOptions {
  logger: Logger;
  tokens: readonly ApiToken[];
  requestOrigins?: RequestOrigins;
  maxBodyBytes: number;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const requestIdRe = /^[\w.:-]{1,64}$/;

/** Installs the middleware, the error answers and the 404/405 answer on `app`. */
export function installMiddleware(app: ApiApp, options: MiddlewareOptions): void {
  installErrorAnswers(app, options.logger);
  app.use('*', requestLog(options.logger));
  // Every route checks `Host` and `Origin` first, health and the document too: a page that rebinds
  // its own name to 127.0.0.1 reaches the API through its visitor's browser, and its requests carry
  // that name as `Host` and its site as `Origin`. Without this, the token is all that stands between.
  app.use('*', originCheck(options.requestOrigins ?? {}));
  // Every route but health and the document needs a token; there is no open mode. The token is
  // checked before the body limit, which reads a chunked body whole: a caller without a token
  // must not make the API read what it sends.
  const authenticate = tokenCheck(options.tokens);
  const limitBody = bodyLimit({
    maxSize: options.maxBodyBytes,
    onError: () => {
      throw new ApiError(
        'payload_too_large',
        `the body is larger than ${options.maxBodyBytes} bytes (DMCP_API_MAX_BODY)`,
      );
    },
  });
  for (const path of [`${API}/sessions/*`, `${API}/shelf`, `${API}/shelf/*`, `${API}/agents/*`])
    app.use(path, authenticate, limitBody);
  for (const path of [
    `${API}/sessions/:sessionId/turns`,
    `${API}/sessions/:sessionId/turns/:turn/calls`,
    `${API}/shelf/servers/:name`,
  ])
    app.use(path, bodyRequired);
  app.use(`${API}/sessions/:sessionId/*`, sessionReach);
  app.use(`${API}/sessions/:sessionId`, sessionReach);
}

/** A request's validation failure as a 400 naming the field (the app's `defaultHook`). */
export function validationHook(result: {
  success: boolean;
  target: string;
  error?: { issues: { path: PropertyKey[]; message: string; code?: string; keys?: string[] }[] };
}): void {
  if (result.success) return;
  const issue = result.error?.issues[0];
  const target = result.target === 'param' ? 'path' : result.target === 'json' ? 'body' : result.target;
  // A field the schema does not have is named itself (`body.model.apiKey`), not the object holding it.
  const unknown = issue?.code === 'unrecognized_keys' && issue.keys?.[0] !== undefined ? [issue.keys[0]] : [];
  const field = [target, ...(issue?.path ?? []).map(String), ...unknown].join('.');
  throw new ApiError('bad_request', `${field}: ${issue?.message ?? 'invalid'}`, field);
}

function fail(c: Context<Env>, err: ApiError) {
  if (err.retryAfter !== undefined) c.header('Retry-After', String(err.retryAfter));
  if (err.code === 'unauthorized') c.header('WWW-Authenticate', 'Bearer');
  return c.json(errorBody(err, c.get('requestId') ?? ''), err.status);
}

function installErrorAnswers(app: ApiApp, logger: Logger): void {
  app.onError((err, c) => {
    if (err instanceof HTTPException && !(err instanceof ApiError)) {
      const code: ErrorCode =
        err.status === 413
          ? 'payload_too_large'
          : err.status === 415
            ? 'unsupported_media_type'
            : err.status === 401
              ? 'unauthorized'
              : 'bad_request';
      const message =
        code === 'unsupported_media_type'
          ? 'body: send it as application/json (Content-Type)'
          : `body: ${err.message || 'malformed request'}`;
      return fail(
        c,
        new ApiError(code, message, code === 'bad_request' || code === 'unsupported_media_type' ? 'body' : undefined),
      );
    }
    const apiError = toApiError(err);
    if (apiError.code === 'internal' || apiError.code === 'unavailable')
      logger.error({ requestId: c.get('requestId'), err }, 'request failed');
    return fail(c, apiError);
  });
  app.notFound((c) => {
    // A path that exists with other methods: 405 with the ones it has, as HTTP asks.
    const methods = [
      ...new Set(app.routes.filter((r) => r.method !== 'ALL' && routeMatches(r.path, c.req.path)).map((r) => r.method)),
    ];
    if (methods.length > 0) {
      c.header('Allow', methods.join(', '));
      return fail(
        c,
        new ApiError('method_not_allowed', `${c.req.method} is not a method of ${c.req.path}: ${methods.join(', ')}`),
      );
    }
    return fail(c, new ApiError('not_found', `no route ${c.req.method} ${c.req.path}`));
  });
}

/** Whether a route's path (`/a/:b/c`) matches a request path. */
function routeMatches(route: string, path: string): boolean {
  const r = route.split('/');
  const p = path.split('/');
  return r.length === p.length && r.every((part, i) => (part.startsWith(':') ? p[i] !== '' : part === p[i]));
}

function requestLog(logger: Logger): MiddlewareHandler<Env> {
  return async (c, next) => {
    const given = c.req.header('x-request-id');
    const requestId = given && requestIdRe.test(given) ? given : randomUUID();
    c.set('requestId', requestId);
    const started = performance.now();
    await next();
    c.header('X-Request-Id', requestId);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Cache-Control', 'no-store');
    // The path only: a query may hold a caller's data, and headers (the token) are never logged.
    logger.info(
      {
        requestId,
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      },
      'request',
    );
  };
}

function originCheck(origins: RequestOrigins): MiddlewareHandler<Env> {
  const hostServed = (host: string | undefined) => {
    if (origins.anyHost && !origins.allowedHosts?.length) return host !== undefined && host !== '';
    return hostAllowed(host, origins.allowedHosts);
  };
  const originServed = (origin: string, host: string | undefined) =>
    originAllowed(origin, origins.allowedOrigins) ||
    (host !== undefined &&
      (origin.toLowerCase() === `http://${host.toLowerCase()}` ||
        origin.toLowerCase() === `https://${host.toLowerCase()}`));
  return async (c, next) => {
    // Node's server builds the request's URL from `Host`; a request made in-process has only the URL.
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    if (!hostServed(host)) {
      throw new ApiError(
        'forbidden',
        `Host ${JSON.stringify(host ?? '')} is not a name of this API: use 127.0.0.1 or localhost, or list the name in DMCP_API_ALLOWED_HOSTS`,
      );
    }
    const origin = c.req.header('origin');
    if (origin === undefined) return next();
    if (!originServed(origin, host)) {
      throw new ApiError(
        'forbidden',
        `Origin ${JSON.stringify(origin)} may not call this API: pages on loopback and on the API's own address may; list others in DMCP_API_ALLOWED_ORIGINS`,
      );
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
  };
}

function tokenCheck(tokens: readonly ApiToken[]): MiddlewareHandler<Env> {
  return async (c, next) => {
    if (tokens.length === 0)
      throw new ApiError(
        'unauthorized',
        'this API has no tokens configured, so it serves no one: set DMCP_API_TOKENS, or start it with `durable-mcp api`, which creates api.token in DMCP_DATA_DIR',
      );
    const presented = bearerToken(c.req.header('authorization'));
    if (!presented)
      throw new ApiError(
        'unauthorized',
        'send "Authorization: Bearer <token>" (the token of `durable-mcp dev` is in api.token in its DMCP_DATA_DIR)',
      );
    const token = findToken(tokens, presented);
    if (!token) throw new ApiError('unauthorized', 'the token is not known to this API');
    c.set('token', token);
    // A cross-site form or a no-cors fetch sends a body as one of the types a page may send without
    // asking; the routes take JSON or nothing, so any other type is refused before anything changes.
    if (!SAFE_METHODS.has(c.req.method)) {
      const type = c.req.header('content-type');
      if (type !== undefined && type.split(';')[0]!.trim().toLowerCase() !== JSON_TYPE)
        throw new ApiError(
          'unsupported_media_type',
          'send the body as application/json (Content-Type), or send no body and no Content-Type',
          'body',
        );
    }
    return next();
  };
}

/** The routes whose body is required: without one (and its type) there is nothing to validate. */
const bodyRequired: MiddlewareHandler<Env> = async (c, next) => {
  if (c.req.method === 'POST' || c.req.method === 'PUT') {
    if (c.req.header('content-type') === undefined)
      throw new ApiError(
        'unsupported_media_type',
        'this route needs a JSON body: send it as application/json (Content-Type)',
        'body',
      );
  }
  return next();
};

const sessionReach: MiddlewareHandler<Env> = async (c, next) => {
  const sessionId = c.req.param('sessionId') ?? '';
  const token = c.get('token')!;
  if (!tokenAllows(token, sessionId))
    throw new ApiError('forbidden', `the token may not reach session ${JSON.stringify(sessionId)}`);
  return next();
};
