/**
 * Logging in to a shelf server with OAuth, through the MCP SDK's client auth: discovery from the
 * server's 401 (protected resource metadata, then authorization server metadata), dynamic client
 * registration, PKCE S256 and the `resource` parameter are the SDK's `auth()`; this file keeps what
 * it produces in the token store. A login has two halves: {@link startLogin} (the address to open
 * in a browser, kept as a pending login) and {@link finishLogin} (the address the browser ends on,
 * from the loopback callback or pasted back by hand). {@link logout} revokes (RFC 7009) and deletes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import {
  auth,
  discoverOAuthServerInfo,
  extractWWWAuthenticateParams,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { sameServerUrl, scopeUnion, shortReason, storedTokens } from './tokens.js';
import { newLoginId, type LoginRecord, type PendingLogin, type TokenStore } from './tokenStore.js';

/** A login that cannot go on: says what was wrong and what to do. */
export class LoginError extends Error {
  override name = 'LoginError';

  /** `state`: the address belongs to another (older) login, so the pending one may still finish. */
  constructor(
    message: string,
    readonly reason?: 'state',
  ) {
    super(message);
  }
}

/**
 * Whether codes and tokens may travel to `url`: https, or plain http to this machine only (a local
 * server or test). Anything else would carry them across the network readable.
 */
export function safeForTokens(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.protocol === 'https:') return true;
  if (u.protocol !== 'http:') return false;
  const h = u.hostname.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '[::1]' || /^127(\.\d{1,3}){3}$/.test(h);
}

/** Refuses a login whose code or tokens would go over plain http to another machine. */
function checkTransport(server: string, discovery: OAuthDiscoveryState | undefined, serverUrl?: string): void {
  if (serverUrl !== undefined && !safeForTokens(serverUrl)) {
    throw new LoginError(
      `${server}: ${serverUrl} is plain http to another machine: the login's code and tokens would cross the network readable; use an https:// address`,
    );
  }
  if (!discovery) return;
  // The SDK's own fallback when the metadata names no token endpoint.
  const tokenEndpoint =
    discovery.authorizationServerMetadata?.token_endpoint ?? new URL('/token', discovery.authorizationServerUrl).href;
  if (!safeForTokens(tokenEndpoint)) {
    throw new LoginError(
      `${server}: the token endpoint ${tokenEndpoint} is plain http to another machine: the code and tokens would cross the network readable; the authorization server must use https`,
    );
  }
}

/** The redirect address of logins on this machine: the loopback callback. */
export function callbackUrl(port: number): string {
  return `http://127.0.0.1:${port}/callback`;
}

export interface LoginDeps {
  store: TokenStore;
  /** For every request to the MCP and authorization servers; default the global fetch. */
  fetch?: typeof fetch;
  /** How long one request may take; default 15 s. */
  requestTimeoutMs?: number;
  now?: () => number;
}

function fetchOf(deps: LoginDeps): FetchLike {
  const base = deps.fetch ?? fetch;
  const ms = deps.requestTimeoutMs ?? 15_000;
  return (url, init) => base(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(ms) });
}

interface FlowState {
  redirectUrl: string;
  /** The client's metadata document address: its ID where the authorization server accepts one. */
  clientMetadataUrl?: string;
  state?: string;
  client?: OAuthClientInformationMixed;
  discovery?: OAuthDiscoveryState;
  codeVerifier?: string;
}

/**
 * What durable-mcp says of itself as an OAuth client: sent at dynamic registration, and, with
 * `client_id` set to its address, the client ID metadata document the operator hosts.
 */
export function clientMetadataFor(
  redirectUrl: string,
  clientId?: string,
): OAuthClientMetadata & { application_type: 'native'; client_id?: string } {
  return {
    ...(clientId !== undefined ? { client_id: clientId } : {}),
    client_name: 'durable-mcp',
    redirect_uris: [redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    // A command-line client keeps no secret worth the name: a public client with PKCE.
    token_endpoint_auth_method: 'none',
    // Its redirect is a loopback address: an authorization server that checks redirect URIs
    // against the application type would refuse it for a (default) web client.
    application_type: 'native',
  };
}

/**
 * The SDK's client provider for one login, in memory: what `auth()` registers, discovers and issues
 * is read back from it and written to the token store by the caller. It never hands out stored
 * tokens, so `auth()` always starts a new authorization (a login is asked for, not a refresh).
 */
export class LoginFlowProvider implements OAuthClientProvider {
  authorizationUrl?: URL;
  issued?: OAuthTokens;

  constructor(readonly flow: FlowState) {}

  get redirectUrl(): string {
    return this.flow.redirectUrl;
  }

  get clientMetadataUrl(): string | undefined {
    return this.flow.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return clientMetadataFor(this.flow.redirectUrl);
  }

  state(): string {
    if (!this.flow.state) throw new LoginError('internal: no OAuth state for this login');
    return this.flow.state;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.flow.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.flow.client = info;
  }

  tokens(): undefined {
    return undefined;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.issued = tokens;
  }

  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.flow.codeVerifier = verifier;
  }

  codeVerifier(): string {
    if (!this.flow.codeVerifier) throw new LoginError('internal: no PKCE code verifier for this login');
    return this.flow.codeVerifier;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.flow.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.flow.discovery;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'client') this.flow.client = undefined;
    if (scope === 'all' || scope === 'discovery') this.flow.discovery = undefined;
    if (scope === 'all' || scope === 'tokens') this.issued = undefined;
  }
}

/**
 * Asks the MCP server without a token, for the `WWW-Authenticate` of its 401 (where its protected
 * resource metadata is, which scope it wants). Undefined when it does not answer 401: `auth()` then
 * looks at the well-known addresses itself.
 */
export async function probeUnauthorized(
  serverUrl: string,
  fetchFn: FetchLike,
): Promise<{ resourceMetadataUrl?: URL; scope?: string } | undefined> {
  const ask = async (
    method: string,
    params: Record<string, unknown>,
    headers: Record<string, string> = {},
  ): Promise<Response> => {
    try {
      const res = await fetchFn(serverUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 0, method, params }),
      });
      await res.body?.cancel().catch(() => undefined);
      return res;
    } catch (err) {
      throw new LoginError(`cannot reach ${serverUrl}: ${shortReason(err, [])}`);
    }
  };
  let res = await ask('initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'durable-mcp', version: '0' },
  });
  // A 2026-07-28 server may refuse `initialize` as a bad request before asking for a token, or
  // let it through unauthenticated; its own first request, `server/discover`, gets the 401 whose
  // scope the login should ask for.
  if (res.status !== 401)
    res = await ask('server/discover', {}, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' });
  if (res.status !== 401) return undefined;
  const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(res);
  return { ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}), ...(scope ? { scope } : {}) };
}

/**
 * A client the operator registered with the authorization server beforehand: its ID, and its
 * secret as read from `clientSecretEnv` by the caller. Only the variable's name is stored.
 */
export interface PreregisteredClient {
  clientId: string;
  clientSecret?: string;
  clientSecretEnv?: string;
}

function clientOf(client: PreregisteredClient): OAuthClientInformationMixed {
  return {
    client_id: client.clientId,
    ...(client.clientSecret !== undefined ? { client_secret: client.clientSecret } : {}),
  };
}

/** Client information fit for the token folder: a pre-registered client's secret stays in its variable. */
function storableClient(
  client: OAuthClientInformationMixed,
  secretEnv: string | undefined,
): OAuthClientInformationMixed {
  if (secretEnv === undefined) return client;
  const { client_secret: _secret, ...rest } = client as OAuthClientInformationMixed & { client_secret?: string };
  return rest;
}

export interface StartedLogin {
  authorizationUrl: string;
  redirectUrl: string;
  startedAt: Date;
}

/**
 * Starts a login of `server` at `serverUrl`: discovery, client registration and the authorization
 * address (PKCE S256, state, resource), kept as the server's pending login (replacing an older
 * pending one). The current login, if any, stays in use until the new one is finished.
 */
export async function startLogin(
  deps: LoginDeps,
  opts: {
    server: string;
    serverUrl: string;
    redirectUrl: string;
    /** A pre-registered client: no dynamic registration. */
    client?: PreregisteredClient;
    /** The client ID metadata document's address (https): the client ID where the authorization server accepts one. */
    clientMetadataUrl?: string;
  },
): Promise<StartedLogin> {
  checkTransport(opts.server, undefined, opts.serverUrl);
  const fetchFn = fetchOf(deps);
  const now = deps.now ?? Date.now;
  const hint = await probeUnauthorized(opts.serverUrl, fetchFn);
  // After a 403 `insufficient_scope`, the new login asks for what the old one was granted and what
  // the server asked for since, besides what it asks of a request without a token.
  const current = await deps.store.read(opts.server).catch(() => undefined);
  const previous = current && sameServerUrl(current.serverUrl, opts.serverUrl) ? current : undefined;
  const provider = new LoginFlowProvider({
    redirectUrl: opts.redirectUrl,
    state: randomBytes(24).toString('base64url'),
    ...(opts.client
      ? { client: clientOf(opts.client) }
      : opts.clientMetadataUrl !== undefined
        ? { clientMetadataUrl: opts.clientMetadataUrl }
        : {}),
  });
  try {
    // Discovery first and apart, so metadata naming another issuer is refused before any of its
    // endpoints (registration included) is used; `auth()` then goes on from this discovery.
    const found = await discoverOAuthServerInfo(opts.serverUrl, {
      ...(hint?.resourceMetadataUrl ? { resourceMetadataUrl: hint.resourceMetadataUrl } : {}),
      fetchFn,
    });
    if (found.resourceMetadata)
      checkMetadataIssuer(opts.server, found.authorizationServerUrl, found.authorizationServerMetadata?.issuer);
    // A login made at another authorization server carries nothing over (SEP-2352): its client
    // was registered there, and what it was granted there means nothing here.
    const moved = previous !== undefined && previous.discovery.authorizationServerUrl !== found.authorizationServerUrl;
    if (moved && opts.client && previous.client.client_id === opts.client.clientId) {
      throw new LoginError(
        `${opts.server}: its authorization server moved from ${previous.discovery.authorizationServerUrl} to ${found.authorizationServerUrl}, and the client ${opts.client.clientId} ` +
          `was registered at the old one: register a client at the new one (redirect address ${opts.redirectUrl}), then put the server back with its ID: ` +
          `durable-mcp mcp forget ${opts.server} && durable-mcp mcp add ${opts.server} ${opts.serverUrl} --client-id <id> [--client-secret-env <VAR>]`,
      );
    }
    const scope = scopeUnion(
      hint?.scope,
      moved ? undefined : scopeUnion(previous?.tokens.scope, previous?.wantedScope),
    );
    const metadataDocument =
      opts.clientMetadataUrl !== undefined &&
      found.authorizationServerMetadata?.client_id_metadata_document_supported === true;
    if (
      !opts.client &&
      !metadataDocument &&
      found.authorizationServerMetadata &&
      !found.authorizationServerMetadata.registration_endpoint
    ) {
      throw new LoginError(
        `${opts.server}: the authorization server ${found.authorizationServerUrl} offers no dynamic client registration: register a client there ` +
          `(redirect address ${opts.redirectUrl}), then put the server back with its ID: durable-mcp mcp forget ${opts.server} && ` +
          `durable-mcp mcp add ${opts.server} ${opts.serverUrl} --client-id <id> [--client-secret-env <VAR>]`,
      );
    }
    provider.saveDiscoveryState({
      authorizationServerUrl: found.authorizationServerUrl,
      ...(hint?.resourceMetadataUrl ? { resourceMetadataUrl: hint.resourceMetadataUrl.href } : {}),
      ...(found.resourceMetadata ? { resourceMetadata: found.resourceMetadata } : {}),
      ...(found.authorizationServerMetadata ? { authorizationServerMetadata: found.authorizationServerMetadata } : {}),
    });
    const result = await auth(provider, {
      serverUrl: opts.serverUrl,
      ...(hint?.resourceMetadataUrl ? { resourceMetadataUrl: hint.resourceMetadataUrl } : {}),
      ...(scope ? { scope } : {}),
      fetchFn,
    });
    if (result !== 'REDIRECT' || !provider.authorizationUrl)
      throw new LoginError(
        'the authorization server issued tokens without asking the browser; this login flow needs an authorization code',
      );
  } catch (err) {
    if (err instanceof LoginError) throw err;
    throw new LoginError(
      `${opts.server}: could not start the login at ${opts.serverUrl}${hint ? '' : ' (it did not answer 401 to a request without a token)'}: ${shortReason(err, [])}`,
    );
  }
  const flow = provider.flow;
  const authorizationUrl = provider.authorizationUrl;
  if (!flow.client || !flow.discovery || !flow.codeVerifier || !flow.state)
    throw new LoginError(`${opts.server}: the SDK's authorization left no client, discovery or verifier`);
  const asked = withOfflineAccess(
    authorizationUrl.searchParams.get('scope') ?? undefined,
    flow.discovery.authorizationServerMetadata?.scopes_supported,
  );
  if (asked !== undefined) authorizationUrl.searchParams.set('scope', asked);
  checkTransport(opts.server, flow.discovery);
  const resource = authorizationUrl.searchParams.get('resource') ?? undefined;
  const startedAt = new Date(now());
  const pending: PendingLogin = {
    server: opts.server,
    serverUrl: opts.serverUrl,
    startedAt: startedAt.toISOString(),
    state: flow.state,
    codeVerifier: flow.codeVerifier,
    redirectUrl: opts.redirectUrl,
    authorizationUrl: authorizationUrl.href,
    discovery: flow.discovery,
    client: storableClient(flow.client, opts.client?.clientSecretEnv),
    ...(opts.client?.clientSecretEnv !== undefined ? { clientSecretEnv: opts.client.clientSecretEnv } : {}),
    ...(resource ? { resource } : {}),
  };
  await deps.store.writePending(pending);
  return { authorizationUrl: authorizationUrl.href, redirectUrl: opts.redirectUrl, startedAt };
}

/**
 * The authorization server metadata's `issuer` against the address it was looked up from (RFC 8414):
 * metadata naming another issuer was served for, or by, someone else, and its endpoints are not
 * to be trusted with this login. A trailing slash is the only difference allowed, since the
 * protected resource metadata spells the same address both ways. Checked where the protected
 * resource metadata named the authorization server; a server without that metadata (the
 * 2025-03-26 revision's fallback to the server's own origin) named no issuer to compare with.
 * @throws LoginError naming both.
 */
export function checkMetadataIssuer(server: string, builtFrom: string, issuer: string | undefined): void {
  if (issuer === undefined) return;
  const bare = (u: string) => (u.endsWith('/') ? u.slice(0, -1) : u);
  if (bare(issuer) !== bare(builtFrom)) {
    throw new LoginError(
      `${server}: the authorization server metadata found for ${builtFrom} names another issuer, ${JSON.stringify(issuer.slice(0, 200))}; refusing to log in through it`,
    );
  }
}

/**
 * The scope to ask for: `offline_access` added where the authorization server lists it, so the
 * login comes with a refresh token and outlives its first access token.
 */
export function withOfflineAccess(
  scope: string | undefined,
  scopesSupported: readonly string[] | undefined,
): string | undefined {
  if (!scopesSupported?.includes('offline_access')) return scope;
  const scopes = (scope ?? '').split(' ').filter((s) => s !== '');
  return scopes.includes('offline_access') ? scope : [...scopes, 'offline_access'].join(' ');
}

/**
 * What the address the browser ended on says: the authorization code, or why there is none.
 * @throws LoginError naming what is wrong with the address.
 */
export function parseRedirectAddress(
  address: string,
  pending: Pick<PendingLogin, 'server' | 'state' | 'startedAt'> & {
    discovery?: Pick<OAuthDiscoveryState, 'authorizationServerMetadata'>;
  },
): { code: string } {
  let url: URL;
  try {
    url = new URL(address.trim());
  } catch {
    throw new LoginError(
      `${pending.server}: ${JSON.stringify(address.length > 80 ? `${address.slice(0, 77)}...` : address)} is not an address; paste the whole address the browser ended on, in quotes`,
    );
  }
  const p = url.searchParams;
  if (p.get('state') !== pending.state) {
    throw new LoginError(
      `${pending.server}: the address does not belong to the login started ${pending.startedAt} (its state ${p.has('state') ? 'differs' : 'is missing'}); paste the address of the newest login, or start again`,
      'state',
    );
  }
  checkIssuerParameter(pending.server, p.get('iss'), pending.discovery?.authorizationServerMetadata);
  const error = p.get('error');
  if (error) {
    const description = p.get('error_description');
    throw new LoginError(
      `${pending.server}: the authorization server refused the login: ${error}${description ? ` (${description.slice(0, 200)})` : ''}`,
    );
  }
  const code = p.get('code');
  if (!code) throw new LoginError(`${pending.server}: the address carries no authorization code (no "code" parameter)`);
  return { code };
}

/**
 * The authorization response's `iss` (RFC 9207) against the issuer the login was started with: a
 * response from another authorization server (a mix-up) must not be redeemed at this one's token
 * endpoint. Compared exactly, without normalising. Absent is refused only where the metadata says
 * the server sends it.
 * @throws LoginError naming the issuer expected and the one the address carries.
 */
export function checkIssuerParameter(
  server: string,
  iss: string | null,
  metadata: { issuer?: string; authorization_response_iss_parameter_supported?: boolean } | undefined,
): void {
  const expected = metadata?.issuer;
  if (iss === null) {
    if (metadata?.authorization_response_iss_parameter_supported === true) {
      throw new LoginError(
        `${server}: the address carries no "iss" parameter, though the authorization server ${expected ?? '(no issuer)'} says it sends one; start the login again`,
      );
    }
    return;
  }
  if (expected === undefined)
    throw new LoginError(
      `${server}: the address names the issuer ${JSON.stringify(iss.slice(0, 200))}, but the login knows no issuer to compare it with; start the login again`,
    );
  if (iss !== expected)
    throw new LoginError(
      `${server}: the address comes from the issuer ${JSON.stringify(iss.slice(0, 200))}, not ${JSON.stringify(expected)} where the login started; start the login again`,
    );
}

export interface FinishedLogin {
  server: string;
  serverUrl: string;
  loginId: string;
  /** Epoch milliseconds; undefined when the server gave no expiry. */
  expiresAt?: number;
  hasRefreshToken: boolean;
  scope?: string;
}

/**
 * Finishes the pending login of `server` with the address the browser ended on: checks its state,
 * exchanges the code (PKCE verifier, resource) and stores the login under a new login ID.
 */
export async function finishLogin(
  deps: LoginDeps,
  opts: {
    server: string;
    redirectAddress: string;
    /** The address the shelf names now; a pending login for another one is refused. */
    serverUrl?: string;
    /** The pre-registered client's secret, read from the variable the pending login names. */
    clientSecret?: string;
  },
): Promise<FinishedLogin> {
  const fetchFn = fetchOf(deps);
  const now = deps.now ?? Date.now;
  const pending = await deps.store.readPending(opts.server);
  if (!pending)
    throw new LoginError(
      `${opts.server}: no login is waiting for an address; start one with: durable-mcp mcp login ${opts.server}`,
    );
  if (opts.serverUrl !== undefined && !sameServerUrl(opts.serverUrl, pending.serverUrl)) {
    throw new LoginError(
      `${opts.server}: the waiting login was started for ${pending.serverUrl}, but the server is now at ${opts.serverUrl}; start again: durable-mcp mcp login ${opts.server}`,
    );
  }
  const { code } = parseRedirectAddress(opts.redirectAddress, pending);
  checkTransport(opts.server, pending.discovery, pending.serverUrl);
  if (pending.clientSecretEnv !== undefined && opts.clientSecret === undefined) {
    throw new LoginError(
      `${opts.server}: the client's secret is read from ${pending.clientSecretEnv}, which is not set here: set it and paste the address again: durable-mcp mcp login ${opts.server} '<address>'`,
    );
  }
  const provider = new LoginFlowProvider({
    redirectUrl: pending.redirectUrl,
    state: pending.state,
    client:
      pending.clientSecretEnv !== undefined ? { ...pending.client, client_secret: opts.clientSecret! } : pending.client,
    discovery: pending.discovery,
    codeVerifier: pending.codeVerifier,
  });
  try {
    await auth(provider, { serverUrl: pending.serverUrl, authorizationCode: code, fetchFn });
  } catch (err) {
    throw new LoginError(
      `${opts.server}: the authorization server did not exchange the code: ${shortReason(err, [code, pending.codeVerifier, ...(opts.clientSecret ? [opts.clientSecret] : [])])}`,
    );
  }
  const issued = provider.issued;
  if (!issued) throw new LoginError(`${opts.server}: the authorization server answered without tokens`);
  const t = now();
  const record: LoginRecord = {
    server: opts.server,
    serverUrl: pending.serverUrl,
    loginId: newLoginId(),
    createdAt: new Date(t).toISOString(),
    discovery: provider.flow.discovery ?? pending.discovery,
    client: storableClient(provider.flow.client ?? pending.client, pending.clientSecretEnv),
    ...(pending.clientSecretEnv !== undefined ? { clientSecretEnv: pending.clientSecretEnv } : {}),
    ...(pending.resource ? { resource: pending.resource } : {}),
    tokens: storedTokens(issued, t),
  };
  await deps.store.withLock(opts.server, async () => {
    await deps.store.write(record);
    await deps.store.removePending(opts.server);
  });
  return {
    server: record.server,
    serverUrl: record.serverUrl,
    loginId: record.loginId,
    ...(record.tokens.expiresAt !== undefined ? { expiresAt: record.tokens.expiresAt } : {}),
    hasRefreshToken: Boolean(record.tokens.refresh_token),
    ...(record.tokens.scope ? { scope: record.tokens.scope } : {}),
  };
}

export interface CallbackListener {
  port: number;
  /** Resolves after the first callback request whose handling said `done` (the login finished or failed for good). */
  done: Promise<void>;
  close(): Promise<void>;
}

/** What the callback handler makes of one redirect: the page to show, and whether the login is over. */
export type CallbackOutcome = { done: boolean; ok: boolean; message: string };

/**
 * Listens on 127.0.0.1:`port` for the browser's redirect to `/callback` and hands each one's full
 * address to `handle`. One login at a time: a taken port is a {@link LoginError} saying so.
 */
export function listenForCallback(
  port: number,
  server: string,
  handle: (address: string) => Promise<CallbackOutcome>,
): Promise<CallbackListener> {
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let bound = port;
  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const address = `http://127.0.0.1:${bound}${req.url ?? '/'}`;
    if (req.method !== 'GET' || new URL(address).pathname !== '/callback') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    handle(address).then(
      (outcome) => {
        res
          .writeHead(outcome.ok ? 200 : 400, {
            'content-type': 'text/html; charset=utf-8',
            'cache-control': 'no-store',
          })
          .end(page(outcome));
        if (outcome.done) finish();
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${(err as Error).message}\n`);
      },
    );
  });
  return new Promise((resolve, reject) => {
    http.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') {
        reject(
          new LoginError(
            `port ${port} (DMCP_OAUTH_CALLBACK_PORT) on 127.0.0.1 is taken: another login may be running, or another program uses it. ` +
              `Set DMCP_OAUTH_CALLBACK_PORT to a free port, or start the login without waiting (durable-mcp mcp login ${server} --no-wait), ` +
              `open the address it prints, and paste the address the browser ends on: durable-mcp mcp login ${server} '<address>'`,
          ),
        );
      } else reject(new LoginError(`cannot listen on 127.0.0.1:${port} (DMCP_OAUTH_CALLBACK_PORT): ${err.message}`));
    });
    http.listen(port, '127.0.0.1', () => {
      const address = http.address();
      bound = typeof address === 'object' && address ? address.port : port;
      resolve({
        port: bound,
        done,
        close: () =>
          new Promise<void>((r) => {
            http.closeAllConnections();
            http.close(() => r());
          }),
      });
    });
  });
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}

function page(outcome: CallbackOutcome): string {
  const title = outcome.ok ? 'Logged in' : 'Login failed';
  return `<!doctype html><html><head><meta charset="utf-8"><title>durable-mcp: ${title}</title></head><body><h1>${title}</h1><p>${escapeHtml(outcome.message)}</p></body></html>\n`;
}

/** What logging out did. */
export interface LogoutResult {
  /** Whether a login or a pending login was there to delete. */
  deleted: boolean;
  /** The revocation endpoint, when the authorization server offers one. */
  revocationEndpoint?: string;
  /** Which tokens the endpoint accepted for revocation (`refresh_token`, `access_token`). */
  revoked: string[];
  /** Why a revocation failed (never holding a token). */
  failures: string[];
}

/** Where the authorization server revokes tokens (RFC 7009), from its metadata (OpenID metadata may name it too). */
export function revocationOf(record: Pick<LoginRecord, 'discovery'>): { endpoint?: string; methods?: string[] } {
  const m = record.discovery.authorizationServerMetadata as Record<string, unknown> | undefined;
  const endpoint = typeof m?.revocation_endpoint === 'string' ? m.revocation_endpoint : undefined;
  const methods = Array.isArray(m?.revocation_endpoint_auth_methods_supported)
    ? (m.revocation_endpoint_auth_methods_supported as string[])
    : undefined;
  return { ...(endpoint ? { endpoint } : {}), ...(methods ? { methods } : {}) };
}

/** RFC 7009 revocation of one token. @throws Error with a reason when the endpoint refuses. */
async function revokeOne(
  endpoint: string,
  record: LoginRecord,
  token: string,
  hint: 'refresh_token' | 'access_token',
  fetchFn: FetchLike,
): Promise<void> {
  const body = new URLSearchParams({ token, token_type_hint: hint });
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  const client = record.client;
  const { methods } = revocationOf(record);
  if (client.client_secret && methods?.includes('client_secret_basic') && !methods.includes('client_secret_post')) {
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`;
  } else {
    body.set('client_id', client.client_id);
    if (client.client_secret) body.set('client_secret', client.client_secret);
  }
  const res = await fetchFn(endpoint, { method: 'POST', headers, body: body.toString() });
  const text = await res.text().catch(() => '');
  if (!res.ok) throw new Error(`HTTP ${res.status}${text ? `: ${text.slice(0, 120)}` : ''}`);
}

/**
 * Logs `server` out for every process: revokes its refresh and access tokens where the
 * authorization server offers revocation at an address fit for tokens ({@link safeForTokens}), then deletes the login and any pending login (also when
 * revocation failed: the result says so). Holds the server's lock, so no refresh writes it back.
 */
export async function logout(deps: LoginDeps, server: string): Promise<LogoutResult> {
  const fetchFn = fetchOf(deps);
  return deps.store.withLock(server, async () => {
    const result: LogoutResult = { deleted: false, revoked: [], failures: [] };
    let record: LoginRecord | undefined;
    try {
      record = await deps.store.read(server);
    } catch (err) {
      result.failures.push(`the login file could not be read, so nothing was revoked: ${(err as Error).message}`);
    }
    const endpoint = record ? revocationOf(record).endpoint : undefined;
    if (record && endpoint && !record.dead && !safeForTokens(endpoint)) {
      // The same rule as every other request that carries a token; the login is deleted anyway,
      // since a bad endpoint must not keep anyone logged in.
      result.revocationEndpoint = endpoint;
      result.failures.push(
        `the tokens: the revocation endpoint ${endpoint} is plain http to another machine: the tokens would cross the network readable, so none was sent; they stay valid there until they expire`,
      );
    } else if (record && endpoint && !record.dead) {
      result.revocationEndpoint = endpoint;
      const secrets = [record.tokens.access_token, record.tokens.refresh_token ?? ''];
      const order: ['refresh_token' | 'access_token', string | undefined][] = [
        ['refresh_token', record.tokens.refresh_token],
        ['access_token', record.tokens.access_token],
      ];
      for (const [hint, token] of order) {
        if (!token) continue;
        try {
          await revokeOne(endpoint, record, token, hint, fetchFn);
          result.revoked.push(hint);
        } catch (err) {
          result.failures.push(`${hint}: ${shortReason(err, secrets)}`);
        }
      }
    } else if (endpoint) {
      result.revocationEndpoint = endpoint;
    }
    result.deleted = await deps.store.remove(server);
    return result;
  });
}
