/**
 * The worker's side of OAuth logins: a valid access token for a shelf server, refreshed before it
 * expires and once after a 401, one refresh at a time across every process sharing the token
 * folder (so a rotating refresh token is never spent twice), and the login problem in the words
 * the status and the servers paragraph show when there is no token to give.
 */
import { discoverOAuthProtectedResourceMetadata, refreshAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from 'pino';
import type { LoginProblemKind } from '../contract/history.js';
import type { LoginRecord, StoredTokens, TokenStore } from './tokenStore.js';
import { expiresWithin, refreshDue, scopeUnion, shortReason, storedTokens } from './tokens.js';
import { sameServerUrl } from '../text/sameUrl.js';
import { mcpEnvEntries } from '../settings/index.js';
import { machineMovedMessage, machineToken, type MachineClient, type MachineTokenDeps } from './machineLogin.js';

// The pool's side of a login (mcp/login.ts) is what these credentials give it.
import type { LoginCredentials as Credentials, LoginProblem, LoginToken as TokenAnswer } from '../mcp/login.js';

export type { Credentials, LoginProblem, TokenAnswer };

export interface CredentialsDeps {
  store: TokenStore;
  logger: Logger;
  /** Refresh when the access token expires within this many milliseconds; default 60 000. */
  refreshMarginMs?: number;
  /** For the token endpoint; default the global fetch. */
  fetch?: typeof fetch;
  /** How long one refresh request may take; default 15 s. */
  refreshTimeoutMs?: number;
  /** The clock (tests). */
  now?: () => number;
  /**
   * The worker's environment: a pre-registered client's secret is read from the variable its login
   * names, and only when DMCP_MCP_ENV lists it. Default: none (such a login cannot be refreshed).
   */
  env?: NodeJS.ProcessEnv;
  /**
   * The machine client of a shelf server whose workers log in by themselves (the client-credentials
   * grant), if it is one; such a server's tokens come from {@link machineToken}, not a login.
   */
  machineClient?: (server: string) => MachineClient | undefined;
}

/** What a login problem says, exactly as the status and the servers paragraph show it. */
export function loginProblemMessage(
  kind: LoginProblemKind,
  name: string,
  detail: { startedAt?: Date; reason?: string; scope?: string; to?: string } = {},
): string {
  switch (kind) {
    case 'wanted':
      return `wants an account first: durable-mcp mcp login ${name}`;
    case 'expired':
      return `its login expired or was revoked: durable-mcp mcp login ${name}`;
    case 'refresh_failed':
      return `could not refresh its login (${detail.reason ?? 'no reason given'}); tried again next turn, or durable-mcp mcp login ${name}`;
    case 'in_progress':
      return `a login was started ${(detail.startedAt ?? new Date(0)).toISOString()} and not finished: finish it in the browser, or paste the address it ends on: durable-mcp mcp login ${name} '<address>'`;
    case 'insufficient_scope':
      return `wants more access (${detail.scope ? `scope ${detail.scope}` : 'the server named no scope'}): durable-mcp mcp login ${name}`;
    case 'moved':
      return `its authorization server moved to ${detail.to ?? '(not named)'}: durable-mcp mcp login ${name}`;
  }
}

export function loginProblem(
  kind: LoginProblemKind,
  name: string,
  detail: { startedAt?: Date; reason?: string; scope?: string; to?: string } = {},
): LoginProblem {
  return { kind, message: loginProblemMessage(kind, name, detail) };
}

/**
 * The authorization server a login's server moved to, from its protected resource metadata's
 * `authorization_servers` (as fetched now) against the one the login was made at: undefined while
 * the metadata still names that one (compared exactly, as the login stored what the metadata
 * said), and whenever the metadata is missing, failed, or names nothing usable, so that a server
 * whose metadata cannot be read is never said to have moved.
 */
export function authorizationServerMove(recorded: string, authorizationServers: unknown): string | undefined {
  if (!Array.isArray(authorizationServers) || authorizationServers.length === 0) return undefined;
  if (authorizationServers.includes(recorded)) return undefined;
  const next: unknown = authorizationServers[0];
  if (typeof next !== 'string' || next.length > 2000) return undefined;
  try {
    const u = new URL(next);
    // It is shown in the status: an address carrying credentials is not taken for a server.
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.username === '' && u.password === ''
      ? next
      : undefined;
  } catch {
    return undefined;
  }
}

/** OAuth error codes after which the refresh token will never work again: the login is over. */
const DEAD_CODES = new Set(['invalid_grant', 'invalid_client', 'unauthorized_client', 'unauthorized']);

/**
 * The client a refresh presents: a pre-registered client's secret is read from the worker variable
 * its login names, and only when the operator lists that variable in DMCP_MCP_ENV.
 */
function refreshClient(
  record: LoginRecord,
  env: NodeJS.ProcessEnv,
): { information: LoginRecord['client'] } | { reason: string } {
  const secretEnv = record.clientSecretEnv;
  if (secretEnv === undefined) return { information: record.client };
  const listed = mcpEnvEntries(env).includes(secretEnv);
  const secret = listed ? env[secretEnv] : undefined;
  if (!secret)
    return {
      reason: `its client secret is read from ${secretEnv}, which this worker ${listed ? 'does not have' : 'may not read: list it in DMCP_MCP_ENV'}`,
    };
  return { information: { ...record.client, client_secret: secret } };
}

/**
 * The `authorization_servers` the server's protected resource metadata names now; undefined when
 * it cannot be read. A `resource_metadata` address from a 401 is followed only on the server's own
 * origin: the worker fetches nothing else a server names.
 */
async function currentAuthorizationServers(
  fetchFn: FetchLike,
  serverUrl: string,
  resourceMetadataUrl: string | undefined,
): Promise<unknown> {
  const own =
    resourceMetadataUrl !== undefined &&
    URL.canParse(resourceMetadataUrl) &&
    new URL(resourceMetadataUrl).origin === new URL(serverUrl).origin;
  try {
    const metadata = await discoverOAuthProtectedResourceMetadata(
      serverUrl,
      own ? { resourceMetadataUrl } : {},
      fetchFn,
    );
    return metadata.authorization_servers;
  } catch {
    return undefined;
  }
}

/** What the login-record updates outside the token path share. */
interface RecordNotes {
  store: TokenStore;
  logger: Logger;
  fetchFn: FetchLike;
  secrets: (server: string) => string[];
  movedProblem: (server: string, from: string, to: string) => Promise<LoginProblem>;
}

/**
 * Notes the scope a 403 wanted on the login, so `mcp list` shows it and the next `mcp login` asks
 * for it too; a login made since (another token) is not marked for what its predecessor lacked.
 */
function recordWantedScope(
  notes: RecordNotes,
  server: string,
  serverUrl: string,
  deniedToken: string,
  scope: string | undefined,
): Promise<LoginProblem> {
  const { store, logger } = notes;
  const problem = loginProblem('insufficient_scope', server, { ...(scope ? { scope } : {}) });
  return store
    .withLock(server, async () => {
      const record = await store.read(server);
      if (!record || record.tokens.access_token !== deniedToken || !sameServerUrl(record.serverUrl, serverUrl))
        return problem;
      const wanted = scopeUnion(record.wantedScope, scope);
      if (wanted !== undefined && wanted !== record.wantedScope) await store.write({ ...record, wantedScope: wanted });
      return problem;
    })
    .catch((err: unknown) => {
      logger.warn(
        { server, reason: shortReason(err, notes.secrets(server)) },
        'could not note the scope the server wants',
      );
      return problem;
    });
}

/** Whether the server now names another authorization server than its login's, noted on the login (or cleared when it names the login's again). */
async function recordAuthorizationServerMove(
  notes: RecordNotes,
  server: string,
  serverUrl: string,
  resourceMetadataUrl: string | undefined,
): Promise<LoginProblem | undefined> {
  const { store, logger } = notes;
  try {
    const first = await store.read(server);
    if (!first || !sameServerUrl(first.serverUrl, serverUrl)) return undefined;
    // Fetched outside the lock, which refreshes in other processes wait for.
    const servers = await currentAuthorizationServers(
      notes.fetchFn,
      serverUrl,
      resourceMetadataUrl ?? first.discovery.resourceMetadataUrl,
    );
    if (servers === undefined) return undefined;
    return await store.withLock(server, async () => {
      // Compared with the login as it is now: one made since at the new server has not moved.
      const record = await store.read(server);
      if (!record || !sameServerUrl(record.serverUrl, serverUrl)) return undefined;
      const to = authorizationServerMove(record.discovery.authorizationServerUrl, servers);
      if (to === undefined) {
        // The metadata names the login's server again: its tokens are worth sending again.
        if (record.movedTo !== undefined) {
          const { movedTo: _gone, ...rest } = record;
          await store.write(rest);
        }
        return undefined;
      }
      if (record.movedTo !== to) {
        logger.warn(
          { server, from: record.discovery.authorizationServerUrl, to },
          'the server names another authorization server: its login must be made again there',
        );
        await store.write({ ...record, movedTo: to });
      }
      return notes.movedProblem(server, record.discovery.authorizationServerUrl, to);
    });
  } catch (err) {
    logger.warn(
      { server, reason: shortReason(err, notes.secrets(server)) },
      'could not check whether the server moved to another authorization server',
    );
    return undefined;
  }
}

/**
 * What stands in for a login that cannot give a token: a person's login in progress wins over the
 * reason (none yet, over, or made at an authorization server that moved).
 */
function missingLogins(store: CredentialsDeps['store'], machineClient: CredentialsDeps['machineClient']) {
  const pendingOr = async (server: string, otherwise: () => LoginProblem): Promise<LoginProblem> => {
    const since = await store.pendingSince(server);
    return since ? loginProblem('in_progress', server, { startedAt: since }) : otherwise();
  };
  return {
    noLogin: async (server: string): Promise<TokenAnswer> => ({
      problem: await pendingOr(server, () => loginProblem('wanted', server)),
    }),
    deadLogin: async (server: string): Promise<TokenAnswer> => ({
      problem: await pendingOr(server, () => loginProblem('expired', server)),
    }),
    movedProblem: async (server: string, from: string, to: string): Promise<LoginProblem> => {
      // A machine login is made again by no person's login: its pin is let go of instead.
      if (machineClient?.(server))
        return { kind: 'moved', message: machineMovedMessage(server, { what: 'authorization server', from, to }) };
      return pendingOr(server, () => loginProblem('moved', server, { to }));
    },
  };
}

/** What refreshing a person's login needs of the credentials it belongs to. */
interface RefreshContext {
  store: TokenStore;
  logger: Logger;
  fetchFn: FetchLike;
  env: NodeJS.ProcessEnv;
  /** Refresh when the access token expires within this many milliseconds. */
  margin: number;
  now: () => number;
  /** Every token value seen of `server`, for scrubbing. */
  secrets: (server: string) => string[];
  remember: (server: string, tokens: StoredTokens) => void;
  /** The record, or the problem that stands in for it. */
  load: (server: string, serverUrl: string) => Promise<LoginRecord | TokenAnswer>;
  deadLogin: (server: string) => Promise<TokenAnswer>;
}

const answerOf = (record: LoginRecord): TokenAnswer => ({ token: record.tokens.access_token, loginId: record.loginId });

/**
 * Refreshes under the lock. `stale` is the access token this process found wanting; after taking
 * the lock the record is read again, and if another process replaced that token already, its new
 * token is the answer and the refresh token is not spent again.
 */
function refreshLogin(
  ctx: RefreshContext,
  server: string,
  serverUrl: string,
  stale: string | undefined,
  why: 'expiring' | 'unauthorized',
): Promise<TokenAnswer> {
  const { logger } = ctx;
  return ctx.store.withLock(server, async () => {
    const loaded = await ctx.load(server, serverUrl);
    if (!('tokens' in loaded)) return loaded;
    const record = loaded;
    const t = ctx.now();
    if (record.tokens.access_token !== stale && !refreshDue(record.tokens, ctx.margin, t)) return answerOf(record);
    const stillValid = why === 'expiring' && !expiresWithin(record.tokens, 0, t);
    const refreshToken = record.tokens.refresh_token;
    if (!refreshToken) {
      if (stillValid) return answerOf(record);
      await markDead(ctx, record, 'no refresh token');
      return ctx.deadLogin(server);
    }
    const metadata = record.discovery.authorizationServerMetadata;
    const client = refreshClient(record, ctx.env);
    if ('reason' in client) {
      logger.warn({ server, reason: client.reason }, 'could not refresh the OAuth login');
      if (stillValid) return answerOf(record);
      return { problem: loginProblem('refresh_failed', server, { reason: client.reason }) };
    }
    const clientInformation = client.information;
    let issued;
    try {
      issued = await refreshAuthorization(record.discovery.authorizationServerUrl, {
        ...(metadata ? { metadata } : {}),
        clientInformation,
        refreshToken,
        ...(record.resource ? { resource: record.resource } : {}),
        fetchFn: ctx.fetchFn,
      });
    } catch (err) {
      const reason = shortReason(err, [
        ...ctx.secrets(server),
        ...(clientInformation.client_secret ? [clientInformation.client_secret] : []),
      ]);
      if (err instanceof OAuthError && DEAD_CODES.has(err.errorCode)) {
        logger.warn({ server, reason }, 'the authorization server refused the refresh token: the login is over');
        await markDead(ctx, record, reason);
        return ctx.deadLogin(server);
      }
      logger.warn({ server, reason }, 'could not refresh the OAuth login');
      if (stillValid) return answerOf(record);
      return { problem: loginProblem('refresh_failed', server, { reason }) };
    }
    const next: LoginRecord = {
      ...record,
      refreshedAt: new Date(t).toISOString(),
      // The SDK keeps the old refresh token when none is returned; a rotated one replaces it.
      tokens: storedTokens({ ...issued, refresh_token: issued.refresh_token ?? refreshToken }, t),
    };
    ctx.remember(server, next.tokens);
    await ctx.store.write(next);
    logger.info({ server, loginId: next.loginId, why }, 'refreshed the OAuth login');
    return answerOf(next);
  });
}

async function markDead(
  ctx: Pick<RefreshContext, 'store' | 'now'>,
  record: LoginRecord,
  reason: string,
): Promise<void> {
  await ctx.store.write({ ...record, dead: { at: new Date(ctx.now()).toISOString(), reason } });
}

/** What reading a login needs: the store, and the problems that stand in for a missing one. */
type LoadContext = Pick<RefreshContext, 'store' | 'logger' | 'remember'> & ReturnType<typeof missingLogins>;

/** The login record of `server` for `serverUrl`, or the problem that stands in for it. */
async function loadLogin(ctx: LoadContext, server: string, serverUrl: string): Promise<LoginRecord | TokenAnswer> {
  let record: LoginRecord | undefined;
  try {
    record = await ctx.store.read(server);
  } catch (err) {
    ctx.logger.warn({ server, err: (err as Error).message }, 'cannot read the OAuth login');
    return { problem: loginProblem('refresh_failed', server, { reason: shortReason(err, []) }) };
  }
  if (!record) return ctx.noLogin(server);
  ctx.remember(server, record.tokens);
  if (!sameServerUrl(record.serverUrl, serverUrl)) {
    ctx.logger.warn(
      { server, loginUrl: record.serverUrl, serverUrl },
      'the OAuth login was made for another address; its token is not sent',
    );
    return ctx.noLogin(server);
  }
  if (record.movedTo !== undefined)
    return { problem: await ctx.movedProblem(server, record.discovery.authorizationServerUrl, record.movedTo) };
  if (record.dead) return ctx.deadLogin(server);
  return record;
}

/** Credentials over a token store. */
export function createCredentials(deps: CredentialsDeps): Credentials {
  const { store, logger } = deps;
  const margin = deps.refreshMarginMs ?? 60_000;
  const timeoutMs = deps.refreshTimeoutMs ?? 15_000;
  const now = deps.now ?? Date.now;
  const baseFetch = deps.fetch ?? fetch;
  const fetchFn: FetchLike = (url, init) =>
    baseFetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(timeoutMs) });
  const known = new Map<string, string[]>();

  function remember(server: string, tokens: StoredTokens): void {
    const list = known.get(server) ?? [];
    for (const value of [tokens.access_token, tokens.refresh_token, tokens.id_token]) {
      if (value && !list.includes(value)) list.push(value);
    }
    // Rotated-out tokens may still appear in a late result; keep the last few.
    known.set(server, list.slice(-32));
  }

  const missing = missingLogins(store, deps.machineClient);
  const { deadLogin, movedProblem } = missing;
  const load = (server: string, serverUrl: string) =>
    loadLogin({ store, logger, remember, ...missing }, server, serverUrl);

  async function guarded(server: string, run: () => Promise<TokenAnswer>): Promise<TokenAnswer> {
    try {
      return await run();
    } catch (err) {
      // Lock or file trouble: named, never thrown into the pool.
      const reason = shortReason(err, known.get(server) ?? []);
      logger.warn({ server, reason }, 'OAuth credentials failed');
      return { problem: loginProblem('refresh_failed', server, { reason }) };
    }
  }

  const refreshing: RefreshContext = {
    store,
    logger,
    fetchFn,
    env: deps.env ?? {},
    margin,
    now,
    secrets: (server) => known.get(server) ?? [],
    remember,
    load,
    deadLogin,
  };
  const notes: RecordNotes = { store, logger, fetchFn, secrets: (server) => known.get(server) ?? [], movedProblem };
  const machine: MachineTokenDeps = {
    store,
    logger,
    env: deps.env ?? {},
    fetch: fetchFn,
    now,
    marginMs: margin,
    remember,
  };

  return {
    accessToken(server, serverUrl) {
      const client = deps.machineClient?.(server);
      if (client) return guarded(server, () => machineToken(machine, server, serverUrl, client));
      return guarded(server, async () => {
        const loaded = await load(server, serverUrl);
        if (!('tokens' in loaded)) return loaded;
        if (!refreshDue(loaded.tokens, margin, now())) return answerOf(loaded);
        return refreshLogin(refreshing, server, serverUrl, loaded.tokens.access_token, 'expiring');
      });
    },
    afterUnauthorized(server, serverUrl, failedToken) {
      const client = deps.machineClient?.(server);
      if (client) return guarded(server, () => machineToken(machine, server, serverUrl, client, failedToken));
      return guarded(server, () => refreshLogin(refreshing, server, serverUrl, failedToken, 'unauthorized'));
    },
    insufficientScope(server, serverUrl, deniedToken, scope) {
      return recordWantedScope(notes, server, serverUrl, deniedToken, scope);
    },
    authorizationServerMoved(server, serverUrl, resourceMetadataUrl) {
      return recordAuthorizationServerMove(notes, server, serverUrl, resourceMetadataUrl);
    },
    secretsOf(server) {
      return [...(known.get(server) ?? [])];
    },
  };
}
