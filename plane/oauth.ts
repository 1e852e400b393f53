/**
 * Logging in to a shelf server with OAuth, through the MCP SDK's client auth: discovery from the
 * server's 401 (protected resource metadata, then authorization server metadata), dynamic client
 * registration, PKCE S256 and the `resource` parameter are the SDK's `auth()`; this file keeps what
 * it produces in the token store. A login has two halves: {@link startLogin} (the address to open
 * in a browser, kept as a pending login) and {@link finishLogin} (the address the browser ends on,
 * from the loopback callback or pasted back by hand). What a login refuses is in `loginChecks.ts`,
 * the loopback callback in `loginCallback.ts`, logging out in `logout.ts`.
 */
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
import {
  checkMetadataIssuer,
  checkTransport,
  LoginError,
  parseRedirectAddress,
  withOfflineAccess,
} from './loginChecks.js';
import { sameServerUrl, scopeUnion, shortReason, storedTokens } from './tokens.js';
import { newLoginId, type LoginRecord, type PendingLogin, type TokenStore } from './tokenStore.js';

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

/** `deps.fetch` with the request timeout. */
export function fetchOf(deps: LoginDeps): FetchLike {
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

/** Options of {@link startLogin}. */
export interface StartLoginOptions {
  server: string;
  serverUrl: string;
  redirectUrl: string;
  /** A pre-registered client: no dynamic registration. */
  client?: PreregisteredClient;
  /** The client ID metadata document's address (https): the client ID where the authorization server accepts one. */
  clientMetadataUrl?: string;
}

/**
 * Starts a login of `server` at `serverUrl`: discovery, client registration and the authorization
 * address (PKCE S256, state, resource), kept as the server's pending login (replacing an older
 * pending one). The current login, if any, stays in use until the new one is finished.
 */
export async function startLogin(deps: LoginDeps, opts: StartLoginOptions): Promise<StartedLogin> {
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
    const { discovery, scope } = await discoverForLogin(opts, hint, previous, fetchFn);
    provider.saveDiscoveryState(discovery);
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
 * The authorization server of a new login, found from the server's 401 `hint`, and the scope to
 * ask for. Refuses a login the pre-registered client or a missing registration endpoint cannot make.
 */
async function discoverForLogin(
  opts: StartLoginOptions,
  hint: Awaited<ReturnType<typeof probeUnauthorized>>,
  previous: LoginRecord | undefined,
  fetchFn: FetchLike,
): Promise<{ discovery: OAuthDiscoveryState; scope: string | undefined }> {
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
  const scope = scopeUnion(hint?.scope, moved ? undefined : scopeUnion(previous?.tokens.scope, previous?.wantedScope));
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
  const discovery: OAuthDiscoveryState = {
    authorizationServerUrl: found.authorizationServerUrl,
    ...(hint?.resourceMetadataUrl ? { resourceMetadataUrl: hint.resourceMetadataUrl.href } : {}),
    ...(found.resourceMetadata ? { resourceMetadata: found.resourceMetadata } : {}),
    ...(found.authorizationServerMetadata ? { authorizationServerMetadata: found.authorizationServerMetadata } : {}),
  };
  return { discovery, scope };
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
