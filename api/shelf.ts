/**
 * The shelf over HTTP: read it, put servers on it and take them off, grant and drop them. Reading
 * and changing the shelf needs a token with the `shelf` scope, always (the data dir's token has
 * it: whoever can read that file can read the turn key beside it). The shelf is the operator's:
 * whoever may change it chooses commands that workers run, and the API signs what they choose with
 * the operator's turn key.
 */
import { createRoute } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import type { Client } from '@temporalio/client';
import type { ShelfChangeResult, ShelfEntry, ShelfState } from '../contract/index.js';
import { isSecretName, secretValues } from '../config/secrets.js';
import { ShelfInputError, shelfEntryProblem } from '../plane/shelf.js';
import { ShelfClient, ShelfUnavailableError } from '../plane/shelfClient.js';
import { ApiError } from './errors.js';
import { API, errors, jsonBody, ok, type ApiApp, type Env } from './routing.js';
import {
  GrantParams,
  PutShelfServerSchema,
  ServerParams,
  ShelfChangeSchema,
  ShelfStateSchema,
} from './shelfSchemas.js';

/** What the shelf routes need. */
export interface ShelfRoutesOptions {
  /** A Temporal client of the deployment's namespace, and its shared task queue (where the shelf runs). */
  temporal: { client: Client; taskQueue: string };
  /** The operator's turn key: adding and granting are signed with it. Without it they are refused. */
  turnKey?: Buffer;
  /** The API process's environment: an entry holding one of its secret values is refused. */
  env?: NodeJS.ProcessEnv;
  /** How long a shelf request waits for a worker to answer (default 20 s). */
  timeoutMs?: number;
}

/** A shelf client acting for the request's token. */
export type ShelfFor = (c: Context<Env>) => ShelfClient;

/** The fields of an entry (`ShelfEntry`), which a refusal's field starts with when it is about one. */
const ENTRY_FIELDS = new Set(['type', 'url', 'headers', 'oauth', 'command', 'args', 'env']);

/** A token with the `shelf` scope (OpenAPI 3.1 lets a bearer requirement name the roles it needs). */
const SHELF_SCOPE = [{ bearer: ['shelf'] }];

/** The shelf client of each request: its changes are recorded as made by the request's token. */
export function shelfClients(options: ShelfRoutesOptions): ShelfFor {
  return (c) =>
    new ShelfClient({
      client: options.temporal.client,
      taskQueue: options.temporal.taskQueue,
      turnKey: options.turnKey,
      by: `api token ${c.get('token')!.source}`,
      env: options.env ?? {},
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
}

/** Adds the shelf routes and their authorization to the API. */
export function registerShelfRoutes(app: ApiApp, options: ShelfRoutesOptions): void {
  // The API's middleware has found the request's token (it refuses a request without one).
  const shelfScope: MiddlewareHandler<Env> = async (c, next) => {
    if (!c.get('token')?.shelf)
      throw new ApiError(
        'forbidden',
        'the token has no shelf scope (its entry in DMCP_API_TOKENS ends in the word "shelf")',
      );
    return next();
  };
  app.use(`${API}/shelf`, shelfScope);
  app.use(`${API}/shelf/*`, shelfScope);
  const shelfFor = shelfClients(options);

  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/shelf`,
      tags: ['shelf'],
      security: SHELF_SCOPE,
      summary: 'The shelf: servers, grants, the newest changes',
      responses: { 200: ok(ShelfStateSchema, 'The shelf (empty before its first change)'), ...errors() },
    }),
    async (c) => c.json(shown(await shelfFor(c).read().catch(shelfRefusal)), 200),
  );
  registerServerRoutes(app, shelfFor, options.env ?? {});
  registerGrantRoutes(app, shelfFor);
}

/** Putting a server on the shelf and taking it off. */
function registerServerRoutes(app: ApiApp, shelfFor: ShelfFor, env: NodeJS.ProcessEnv): void {
  app.openapi(
    createRoute({
      method: 'put',
      path: `${API}/shelf/servers/{name}`,
      tags: ['shelf'],
      security: SHELF_SCOPE,
      summary: 'Put a server on the shelf (idempotent: the same entry again changes nothing)',
      description:
        "Refused with 409 when the name is on the shelf with another entry, with 422 when the entry would write a secret into the shelf's history (the field is named).",
      request: { params: ServerParams, ...jsonBody(PutShelfServerSchema) },
      responses: {
        200: ok(ShelfChangeSchema, 'It was there already'),
        201: ok(ShelfChangeSchema, 'Added'),
        ...errors(409, 422),
      },
    }),
    async (c) => {
      const { name } = c.req.valid('param');
      const { entry, agents = [] } = c.req.valid('json');
      // Checked here as well as in the client, so that what the shelf itself refuses is told apart.
      const problem = shelfEntryProblem(name, entry, env);
      if (problem) throw entryRefusal(problem, holdsSecretValue(entry, env));
      const shelf = shelfFor(c);
      const [first, ...more] = agents;
      const results: ShelfChangeResult[] = [
        await shelf
          .add(name, entry, first !== undefined ? { agent: first } : {})
          .catch((err: unknown) => addRefusal(shelf, name, entry, err)),
      ];
      for (const agent of more) results.push(await shelf.grant(name, agent).catch(shelfRefusal));
      const changed = results.some((r) => r.changed);
      return c.json({ changed, version: Math.max(...results.map((r) => r.version)) }, changed ? 201 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: `${API}/shelf/servers/{name}`,
      tags: ['shelf'],
      security: SHELF_SCOPE,
      summary: 'Take a server off the shelf and away from every agent (calls in flight finish)',
      request: { params: ServerParams },
      responses: { 200: ok(ShelfChangeSchema, '`changed` is false when it was not on the shelf'), ...errors() },
    }),
    async (c) => {
      const { name } = c.req.valid('param');
      const r = await shelfFor(c).forget(name).catch(shelfRefusal);
      return c.json({ changed: r.changed, version: r.version, agents: r.agents ?? [] }, 200);
    },
  );
}

/** Granting a server on the shelf to an agent, and dropping the grant. */
function registerGrantRoutes(app: ApiApp, shelfFor: ShelfFor): void {
  app.openapi(
    createRoute({
      method: 'put',
      path: `${API}/shelf/servers/{name}/agents/{agent}`,
      tags: ['shelf'],
      security: SHELF_SCOPE,
      summary: 'Give an agent a server on the shelf (from its next turn)',
      request: { params: GrantParams },
      responses: {
        200: ok(ShelfChangeSchema, 'The agent had it already'),
        201: ok(ShelfChangeSchema, 'Granted'),
        ...errors(404),
      },
    }),
    async (c) => {
      const { name, agent } = c.req.valid('param');
      const r = await shelfFor(c).grant(name, agent).catch(shelfRefusal);
      return c.json({ changed: r.changed, version: r.version }, r.changed ? 201 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete',
      path: `${API}/shelf/servers/{name}/agents/{agent}`,
      tags: ['shelf'],
      security: SHELF_SCOPE,
      summary: 'Take a server away from an agent (from its next turn)',
      request: { params: GrantParams },
      responses: { 200: ok(ShelfChangeSchema, '`changed` is false when the agent did not have it'), ...errors() },
    }),
    async (c) => {
      const { name, agent } = c.req.valid('param');
      const r = await shelfFor(c).drop(name, agent).catch(shelfRefusal);
      return c.json({ changed: r.changed, version: r.version }, 200);
    },
  );
}

/** The shelf as the API shows it: no proofs, each server with its agents. */
function shown(state: ShelfState) {
  return {
    version: state.version,
    servers: state.servers.map((s) => ({
      name: s.name,
      entry: s.entry,
      addedAt: s.addedAt,
      addedBy: s.addedBy,
      agents: state.grants
        .filter((g) => g.server === s.name)
        .map((g) => g.agent)
        .sort(),
    })),
    grants: state.grants.map((g) => ({ server: g.server, agent: g.agent, grantedAt: g.grantedAt })),
    log: state.log,
  };
}

/**
 * A refusal of the shelf as an API error, by the error's class and the field it names: `server`
 * is a server that is not on the shelf (the path's name passed the rule the shelf applies to names).
 */
export function shelfRefusal(err: unknown): never {
  if (err instanceof ShelfUnavailableError) throw new ApiError('unavailable', err.message, undefined, 2);
  if (!(err instanceof ShelfInputError)) throw err;
  if (err.field === 'turnKey')
    throw new ApiError(
      'forbidden',
      'this API cannot sign shelf changes: it has no turn key (turn.key in its DMCP_DATA_DIR, as the workers have it)',
    );
  if (err.field === 'server') throw new ApiError('not_found', err.message, 'path.name');
  throw entryRefusal(err, false);
}

/**
 * An entry the shelf refuses: the value of a secret variable of this process has its own code, as
 * for turns and calls. Any other refusal of an entry the schema admits (a literal credential, a
 * reference the workers cannot resolve) is well-formed, refused for what it says: 422, not 400.
 */
function entryRefusal(err: ShelfInputError, secret: boolean): ApiError {
  const field =
    err.field === undefined
      ? undefined
      : err.field === 'name'
        ? 'path.name'
        : err.field === 'agent'
          ? 'body.agents'
          : `body.entry.${err.field}`;
  const code = secret
    ? 'secret_in_input'
    : field === undefined || field.startsWith('body.entry')
      ? 'entry_refused'
      : 'bad_request';
  return new ApiError(code, err.message, field);
}

/**
 * A refused `add`. The entry passed the client's checks, so a refusal naming one of its fields is
 * the shelf's: a conflict when the name is on the shelf with another entry (read back to tell).
 */
async function addRefusal(shelf: ShelfClient, name: string, entry: ShelfEntry, err: unknown): Promise<never> {
  if (err instanceof ShelfInputError && err.field !== undefined && ENTRY_FIELDS.has(err.field.split(/[.[]/)[0]!)) {
    const existing = (await shelf.read().catch(() => undefined))?.servers.find((s) => s.name === name);
    if (existing && JSON.stringify(canonical(existing.entry)) !== JSON.stringify(canonical(entry)))
      throw new ApiError('shelf_conflict', err.message, `body.entry.${err.field}`);
  }
  return shelfRefusal(err);
}

/** Whether a string of the entry holds the value of one of `env`'s secret variables. */
function holdsSecretValue(entry: ShelfEntry, env: NodeJS.ProcessEnv): boolean {
  const values = new Set(secretValues(env));
  const secrets = Object.entries(env).flatMap(([k, v]) =>
    typeof v === 'string' && values.has(v) && isSecretName(k, env) ? [v] : [],
  );
  const strings =
    entry.type === 'stdio'
      ? [entry.command, ...entry.args, ...Object.values(entry.env ?? {})]
      : [entry.url, ...Object.values(entry.headers ?? {}), ...(entry.oauth ? [entry.oauth.clientId] : [])];
  return strings.some((s) => secrets.some((secret) => s.includes(secret)));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  return value;
}
