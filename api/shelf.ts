/**
 * The shelf over HTTP: read it, put servers on it and take them off, grant and drop them, and an
 * agent's servers. Reading and changing the shelf needs a token with the `shelf` scope, always
 * (the data dir's token has it: whoever can read that file can read the turn key beside it). The
 * shelf is the operator's: whoever may change it chooses commands that workers run, and the API
 * signs what they choose with the operator's turn key.
 */
import { OpenAPIHono, createRoute, z, type RouteConfig } from '@hono/zod-openapi';
import type { HttpBindings } from '@hono/node-server';
import type { Context, MiddlewareHandler } from 'hono';
import type { Client } from '@temporalio/client';
import { AGENT_ID_PATTERN, type ShelfChangeResult, type ShelfServer, type ShelfState } from '../contract/index.js';
import { ShelfInputError, verifyShelfGrant, verifyShelfServer } from '../plane/shelf.js';
import { ShelfClient, ShelfUnavailableError } from '../plane/shelfClient.js';
import { tokenAllowsAgent, type ApiToken } from './auth.js';
import { ApiError } from './errors.js';
import { ErrorSchema } from './schemas.js';

type Env = { Bindings: HttpBindings; Variables: { requestId: string; token?: ApiToken } };

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

const API = '/api/v1';
/** A token with the `shelf` scope (OpenAPI 3.1 lets a bearer requirement name the roles it needs). */
const SHELF_SCOPE = [{ bearer: ['shelf'] }];
/** Any token: the route decides by its prefixes, or the shelf scope. */
const ANY_TOKEN = [{ bearer: [] }];
const JSON_TYPE = 'application/json';

// --- schemas ---

const ServerNameParam = z
  .string()
  .max(32)
  .regex(/^[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*$/, 'a server name: a letter first, then letters and digits, with single "_" or "-" between them, at most 32')
  .openapi({ param: { name: 'name', in: 'path' }, example: 'docs' });
const AgentParam = z
  .string()
  .regex(AGENT_ID_PATTERN, 'an agent ID: letters, digits and . _ : @ / - (a "/" sent as %2F), starting with a letter or digit, at most 128')
  .openapi({ param: { name: 'agent', in: 'path' }, example: 'support-bot' });
const ServerParams = z.object({ name: ServerNameParam });
const GrantParams = z.object({ name: ServerNameParam, agent: AgentParam });
const AgentParams = z.object({ agent: AgentParam });

// What the workers' config parser accepts, said here so that the document says it: a URL is
// http(s) with a host a URL parser takes (no user name or password), header names are HTTP tokens
// and values one line, variable names are shell names, and nothing holds a NUL.
const IPV4_PART = String.raw`(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`;
// A reference the workers resolve (`${NAME}`, `${NAME:-default}`); RFC 3986 has no braces, so a URL
// holding one is not a URI until then, and the document says `pattern`, not `format: uri`.
const URL_VAR = String.raw`\$\{[A-Za-z_][A-Za-z0-9_]*(?::-(?:[A-Za-z0-9\-._~!&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?\}`;
const URL_CHAR = String.raw`(?:[A-Za-z0-9\-._~!&'()*+,;=:@/?]|%[0-9A-Fa-f]{2}|\$\$|${URL_VAR})`;
const URL_LABEL = String.raw`(?:[A-Za-z0-9-]|${URL_VAR})+`;
const URL_HOST = String.raw`(?:(?:${URL_LABEL}\.)*(?:[A-Za-z]|${URL_VAR})(?:[A-Za-z0-9-]|${URL_VAR})*|(?:${IPV4_PART}\.){3}${IPV4_PART})`;
const URL_RE = new RegExp(String.raw`^[Hh][Tt][Tt][Pp][Ss]?://${URL_HOST}(?::(?:[1-5]?\d{1,4}|${URL_VAR}))?(?:[/?]${URL_CHAR}*)?(?:#${URL_CHAR}*)?$`);
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `propertyNames` for a record's keys, which the document generator leaves out (its types do not know the keyword). */
const keysMatch = (re: RegExp) => ({ propertyNames: { type: 'string', pattern: re.source } }) as { description?: string };
// NUL is written \u0000, not \0: the document carries the pattern, and Schemathesis cannot use `\0`.
// eslint-disable-next-line no-control-regex
const noNul = (max: number) => z.string().max(max).regex(/^[^\u0000]*$/, 'no NUL character');
const RemoteEntry = z
  .object({
    type: z.enum(['http', 'sse']),
    url: z
      .string()
      .max(4096)
      .regex(URL_RE, 'an http:// or https:// URL (RFC 3986 characters; ${VAR} references), without a user name or password')
      .openapi({ description: 'The server\'s http:// or https:// URL: RFC 3986 characters, no user name or password, no literal credential in its query; it may hold `${VAR}` references, which the workers resolve (a URI once they have).' }),
    headers: z
      // eslint-disable-next-line no-control-regex
      .record(z.string().regex(HEADER_NAME, 'an HTTP header name'), z.string().max(4096).regex(/^[^\r\n\u0000]*$/, 'one line, no NUL'))
      .optional()
      .openapi({ ...keysMatch(HEADER_NAME), description: 'Header values; `${VAR}` is resolved on the workers. No literal credential: use `Authorization: Bearer ${VAR}` or an OAuth login.' }),
  })
  .strict();
const CommandEntry = z
  .object({
    type: z.literal('stdio'),
    // eslint-disable-next-line no-control-regex
    command: z.string().max(4096).regex(/^[^\u0000]*[^\s\u0000][^\u0000]*$/, 'not blank, no NUL character'),
    args: z.array(noNul(4096)).max(256).default([]),
    env: z
      .record(z.string().regex(ENV_NAME, 'a variable name'), noNul(4096))
      .optional()
      .openapi({ ...keysMatch(ENV_NAME), description: 'Variables of the command; `NAME: "${NAME}"` hands a secret variable over from the workers (listed in their DMCP_MCP_ENV).' }),
  })
  .strict();
export const ShelfEntrySchema = z.discriminatedUnion('type', [RemoteEntry, CommandEntry]).openapi('ShelfEntry');

export const PutShelfServerSchema = z
  .object({
    entry: ShelfEntrySchema,
    agents: z.array(z.string().regex(AGENT_ID_PATTERN, 'an agent ID')).max(100).optional().openapi({ description: 'Grant it to these agents at once.' }),
  })
  .strict()
  .openapi('PutShelfServer');

const ShelfServerSchema = z
  .object({ name: z.string(), entry: ShelfEntrySchema, addedAt: z.string(), addedBy: z.string(), agents: z.array(z.string()) })
  .openapi('ShelfServer');
const ShelfGrantSchema = z.object({ server: z.string(), agent: z.string(), grantedAt: z.string() }).openapi('ShelfGrant');
const ShelfLogEntrySchema = z
  .object({ at: z.string(), by: z.string(), op: z.enum(['add', 'grant', 'drop', 'forget']), server: z.string(), agent: z.string().optional() })
  .openapi('ShelfLogEntry');
export const ShelfStateSchema = z
  .object({
    version: z.number().int(),
    servers: z.array(ShelfServerSchema),
    grants: z.array(ShelfGrantSchema),
    log: z.array(ShelfLogEntrySchema).openapi({ description: 'The newest changes, oldest first; the shelf workflow\'s history holds every one.' }),
  })
  .openapi('Shelf');
export const ShelfChangeSchema = z
  .object({
    changed: z.boolean().openapi({ description: 'False when it was so already (the same entry, an existing grant, a missing one).' }),
    version: z.number().int(),
    agents: z.array(z.string()).optional().openapi({ description: 'Removing a server: the agents that had it.' }),
  })
  .openapi('ShelfChange');
export const AgentServersSchema = z
  .object({
    agent: z.string(),
    servers: z.array(
      z.object({
        name: z.string(),
        entry: ShelfEntrySchema,
        grantedAt: z.string(),
        verified: z.boolean().openapi({ description: 'Whether its proofs verify with this API\'s turn key (workers with the same key use only verified servers).' }),
      }),
    ),
  })
  .openapi('AgentServers');

function errors(...codes: number[]): RouteConfig['responses'] {
  const out: RouteConfig['responses'] = {};
  for (const code of [...new Set([400, 401, 403, 413, 415, 500, 503, ...codes])]) {
    out[code] = { description: 'An error; `error.code` is stable.', content: { [JSON_TYPE]: { schema: ErrorSchema } } };
  }
  return out;
}

const ok = <T extends z.ZodType>(schema: T, description: string) => ({ description, content: { [JSON_TYPE]: { schema } } });

// --- routes ---

/** The shelf as the API shows it: no proofs, each server with its agents. */
function shown(state: ShelfState) {
  return {
    version: state.version,
    servers: state.servers.map((s) => ({ name: s.name, entry: s.entry, addedAt: s.addedAt, addedBy: s.addedBy, agents: state.grants.filter((g) => g.server === s.name).map((g) => g.agent).sort() })),
    grants: state.grants.map((g) => ({ server: g.server, agent: g.agent, grantedAt: g.grantedAt })),
    log: state.log,
  };
}

/** A refusal of the shelf, as an API error: the field it names is in the path or the body. */
function refusal(err: unknown): never {
  if (err instanceof ShelfUnavailableError) throw new ApiError('unavailable', err.message, undefined, 2);
  if (!(err instanceof ShelfInputError)) throw err;
  if (/is not on the shelf/.test(err.message)) throw new ApiError('not_found', err.message, 'path.name');
  if (/is on the shelf already/.test(err.message)) throw new ApiError('shelf_conflict', err.message, err.field ? `body.entry.${err.field}` : 'body.entry');
  if (err.field === 'turnKey') throw new ApiError('forbidden', `this API cannot sign shelf changes: it has no turn key (turn.key in its DMCP_DATA_DIR, as the workers have it)`);
  const field = err.field === undefined ? undefined : err.field === 'name' ? 'path.name' : err.field === 'agent' ? 'body.agents' : `body.entry.${err.field}`;
  // As for turns and calls: the value of a secret variable of this process is its own code. Any
  // other refusal is of an entry the schema admits (a literal credential, a reference the workers
  // cannot resolve): well-formed, refused for what it says, so 422 rather than 400.
  const code = /value of the secret variable/.test(err.message) ? 'secret_in_input' : field?.startsWith('body.entry') || field === undefined ? 'entry_refused' : 'bad_request';
  throw new ApiError(code, err.message, field);
}

/** Adds the shelf routes and their authorization to the API. */
export function registerShelfRoutes(app: OpenAPIHono<Env>, options: ShelfRoutesOptions): void {
  // The API's middleware has found the request's token (it refuses a request without one).
  const shelfScope: MiddlewareHandler<Env> = async (c, next) => {
    if (!c.get('token')?.shelf) throw new ApiError('forbidden', 'the token has no shelf scope (its entry in DMCP_API_TOKENS ends in the word "shelf")');
    return next();
  };
  // An agent's own servers: the shelf scope, or a token whose prefixes reach the agent (as they reach its turns).
  const agentScope: MiddlewareHandler<Env> = async (c, next) => {
    const token = c.get('token');
    const agent = c.req.param('agent') ?? '';
    if (!token || (!token.shelf && !tokenAllowsAgent(token, agent))) throw new ApiError('forbidden', `the token may not reach agent ${JSON.stringify(agent)}`);
    return next();
  };
  app.use(`${API}/shelf`, shelfScope);
  app.use(`${API}/shelf/*`, shelfScope);
  app.use(`${API}/agents/:agent/servers`, agentScope);

  const shelfFor = (c: Context<Env>) => {
    const token = c.get('token')!;
    return new ShelfClient({
      client: options.temporal.client,
      taskQueue: options.temporal.taskQueue,
      turnKey: options.turnKey,
      by: `api token ${token.source}`,
      env: options.env ?? {},
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
  };

  app.openapi(
    createRoute({
      method: 'get', path: `${API}/shelf`, tags: ['shelf'], security: SHELF_SCOPE, summary: 'The shelf: servers, grants, the newest changes',
      responses: { 200: ok(ShelfStateSchema, 'The shelf (empty before its first change)'), ...errors() },
    }),
    async (c) => c.json(shown(await shelfFor(c).read().catch(refusal)), 200),
  );

  app.openapi(
    createRoute({
      method: 'put', path: `${API}/shelf/servers/{name}`, tags: ['shelf'], security: SHELF_SCOPE,
      summary: 'Put a server on the shelf (idempotent: the same entry again changes nothing)',
      description: 'Refused with 409 when the name is on the shelf with another entry, with 400 when the entry would write a secret into the shelf\'s history (the field is named).',
      request: { params: ServerParams, body: { required: true, content: { [JSON_TYPE]: { schema: PutShelfServerSchema } } } },
      responses: { 200: ok(ShelfChangeSchema, 'It was there already'), 201: ok(ShelfChangeSchema, 'Added'), ...errors(409, 422) },
    }),
    async (c) => {
      const { name } = c.req.valid('param');
      const { entry, agents = [] } = c.req.valid('json');
      const shelf = shelfFor(c);
      const [first, ...more] = agents;
      const results: ShelfChangeResult[] = [await shelf.add(name, entry, first !== undefined ? { agent: first } : {}).catch(refusal)];
      for (const agent of more) results.push(await shelf.grant(name, agent).catch(refusal));
      const changed = results.some((r) => r.changed);
      return c.json({ changed, version: Math.max(...results.map((r) => r.version)) }, changed ? 201 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete', path: `${API}/shelf/servers/{name}`, tags: ['shelf'], security: SHELF_SCOPE,
      summary: 'Take a server off the shelf and away from every agent (calls in flight finish)',
      request: { params: ServerParams },
      responses: { 200: ok(ShelfChangeSchema, '`changed` is false when it was not on the shelf'), ...errors() },
    }),
    async (c) => {
      const { name } = c.req.valid('param');
      const r = await shelfFor(c).forget(name).catch(refusal);
      return c.json({ changed: r.changed, version: r.version, agents: r.agents ?? [] }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'put', path: `${API}/shelf/servers/{name}/agents/{agent}`, tags: ['shelf'], security: SHELF_SCOPE,
      summary: 'Give an agent a server on the shelf (from its next turn)',
      request: { params: GrantParams },
      responses: { 200: ok(ShelfChangeSchema, 'The agent had it already'), 201: ok(ShelfChangeSchema, 'Granted'), ...errors(404) },
    }),
    async (c) => {
      const { name, agent } = c.req.valid('param');
      const r = await shelfFor(c).grant(name, agent).catch(refusal);
      return c.json({ changed: r.changed, version: r.version }, r.changed ? 201 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'delete', path: `${API}/shelf/servers/{name}/agents/{agent}`, tags: ['shelf'], security: SHELF_SCOPE,
      summary: 'Take a server away from an agent (from its next turn)',
      request: { params: GrantParams },
      responses: { 200: ok(ShelfChangeSchema, '`changed` is false when the agent did not have it'), ...errors() },
    }),
    async (c) => {
      const { name, agent } = c.req.valid('param');
      const r = await shelfFor(c).drop(name, agent).catch(refusal);
      return c.json({ changed: r.changed, version: r.version }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get', path: `${API}/agents/{agent}/servers`, tags: ['shelf'], security: ANY_TOKEN,
      summary: 'The servers granted to an agent',
      description: 'Needs the shelf scope, or a token whose prefixes reach the agent.',
      request: { params: AgentParams },
      responses: { 200: ok(AgentServersSchema, "The agent's servers, by name"), ...errors() },
    }),
    async (c) => {
      const { agent } = c.req.valid('param');
      const state = await shelfFor(c).read().catch(refusal);
      const byName = new Map<string, ShelfServer>(state.servers.map((s) => [s.name, s]));
      const servers = state.grants
        .filter((g) => g.agent === agent && byName.has(g.server))
        .sort((a, b) => a.server.localeCompare(b.server))
        .map((g) => {
          const s = byName.get(g.server)!;
          const verified = options.turnKey !== undefined && verifyShelfServer(options.turnKey, s) && verifyShelfGrant(options.turnKey, g, s.entry);
          return { name: s.name, entry: s.entry, grantedAt: g.grantedAt, verified };
        });
      return c.json({ agent, servers }, 200);
    },
  );
}
