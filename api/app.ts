/**
 * The HTTP API over `TurnClient`: turns, calls, status, events and transcripts. Stateless: every
 * answer is read from, or sent to, Temporal, so several instances can serve behind one balancer.
 * Each resource registers its own routes (`*Routes.ts`); this file puts them together.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Logger } from 'pino';
import type { TurnClient } from '../client/turnClient.js';
import type { ShapeLimits } from '../shaping/index.js';
import { registerAgentRoutes } from './agentRoutes.js';
import type { ApiToken } from './auth.js';
import type { ApiBoundary } from './boundary.js';
import { registerCallRoutes } from './callRoutes.js';
import { registerInputRoutes } from './inputRoutes.js';
import { registerEventRoutes, type EventStreamLimits } from './eventRoutes.js';
import { installMiddleware, validationHook, type RequestOrigins } from './middleware.js';
import { registerDocument, registerHealthRoutes } from './operationRoutes.js';
import type { Env } from './routing.js';
import { registerShelfRoutes, shelfClients } from './shelf.js';
import { registerTranscriptRoutes } from './transcriptRoutes.js';
import { registerSessionRoutes, registerTurnRoutes } from './turnRoutes.js';
import { registerTurnStateRoutes } from './turnStateRoutes.js';

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
  requestOrigins?: RequestOrigins;
  /** Which turn references callers may name (see `api/boundary.ts`). */
  boundary: ApiBoundary;
  /** Request bodies larger than this get 413. */
  maxBodyBytes: number;
  /** How long a call request waits for its outcome before answering 202 with where to poll. */
  callWaitMs: number;
  /** What `?render=model` renders (the worker's shaping limits). */
  shapeLimits: ShapeLimits;
  /** How often an event stream lists its session's turns to find a new one (default 500 ms). */
  eventsPollMs?: number;
  /** Aborted when the server shuts down: event streams end so the server can close. */
  shutdown?: AbortSignal;
  /** Event streams open at once, overall and per token (default 64 and 16); one more is answered 429. */
  maxEventStreams?: EventStreamLimits;
  /**
   * The shelf routes: the operator's turn key (adding and granting are signed with it; without it
   * they are refused), the environment whose secret values an entry may not hold, and how long a
   * shelf request waits for a worker (default 20 s).
   */
  shelf?: { turnKey?: Buffer; env?: NodeJS.ProcessEnv; timeoutMs?: number };
}

/** The API as a hono app: its middleware, every resource's routes, and the document describing them. */
export function createApi(options: ApiOptions): OpenAPIHono<Env> {
  const { turns } = options;
  const app = new OpenAPIHono<Env>({ defaultHook: (result) => validationHook(result) });
  installMiddleware(app, options);
  registerHealthRoutes(app, turns);
  registerTurnRoutes(app, options);
  registerTurnStateRoutes(app, turns);
  registerSessionRoutes(app, options);
  registerTranscriptRoutes(app, turns);
  registerCallRoutes(app, options);
  registerInputRoutes(app, options);
  registerEventRoutes(app, options);
  const shelf = { temporal: { client: turns.client, taskQueue: turns.taskQueue }, ...options.shelf };
  registerShelfRoutes(app, shelf);
  registerAgentRoutes(app, shelfClients(shelf), shelf.turnKey);
  registerDocument(app, options.tokenSource);
  return app;
}
