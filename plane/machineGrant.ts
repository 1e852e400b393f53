/**
 * One machine grant: the OAuth client-credentials grant (or, for cross-app access, the JWT-bearer
 * grant with an ID-JAG from the identity provider) made by the worker itself. Discovery, client
 * authentication and the JWT are the MCP SDK's; this file runs them, keeps the client's
 * credentials to the authorization server the login was pinned to, and turns what comes back into
 * a login record or a {@link MachineGrantError} whose reason holds no secret and no text of an answer.
 */
import { createHash } from 'node:crypto';
import {
  auth,
  discoverOAuthServerInfo,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { checkResourceAllowed, resourceUrlFromServerUrl } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import { createPrivateKeyJwtAuth } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { requestJwtAuthorizationGrant } from '@modelcontextprotocol/client';
import type { ShelfOAuthClient } from '../contract/shelf.js';
import { checkMetadataIssuer, LoginError, safeForTokens } from './loginChecks.js';
import { probeUnauthorized } from './oauth.js';
import type { MachineClient } from './shelfMachineClient.js';
import { scopeUnion, shortReason, storedTokens } from './tokens.js';
import type { LoginRecord } from './tokenStore.js';

/** What the client proves itself with: its secret, or its private key (PKCS#8 PEM) and the JWS algorithm. */
export type MachineCredential = { clientSecret: string; idToken?: string } | { privateKey: string; algorithm: string };
/**
 * The ID of a machine login: derived from the server and its client, so it stays the same across
 * the new tokens each expiry brings (the pool restarts a server whose login ID changes) and is
 * known before the first token is. Not secret.
 */
export function machineLoginId(
  server: string,
  client: Pick<
    ShelfOAuthClient,
    'clientId' | 'privateKeyEnv' | 'clientSecretEnv' | 'grant' | 'idpTokenEndpoint' | 'idpClientId' | 'idTokenEnv'
  >,
): string {
  const how =
    client.privateKeyEnv !== undefined ? `key:${client.privateKeyEnv}` : `secret:${client.clientSecretEnv ?? ''}`;
  const parts: unknown[] = [server, client.clientId, how];
  if (client.grant === 'id_jag') parts.push(['id_jag', client.idpTokenEndpoint, client.idpClientId, client.idTokenEnv]);
  return `m-${createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 16)}`;
}

/** The SDK's client provider for one client-credentials grant, in memory. */
class MachineGrantProvider implements OAuthClientProvider {
  issued?: OAuthTokens;
  discovery?: OAuthDiscoveryState;
  private info: OAuthClientInformationMixed;
  readonly addClientAuthentication?: OAuthClientProvider['addClientAuthentication'];

  /** The ID-JAG of a cross-app access grant: the token request is a JWT-bearer grant with it. */
  assertion?: string;

  constructor(
    client: MachineClient,
    credential: MachineCredential,
    private readonly scope: string | undefined,
  ) {
    this.info = {
      client_id: client.clientId,
      ...('clientSecret' in credential ? { client_secret: credential.clientSecret } : {}),
    };
    if ('privateKey' in credential) {
      // The assertion's audience is the authorization server's issuer (the SDK's choice, RFC 7523).
      this.addClientAuthentication = createPrivateKeyJwtAuth({
        issuer: client.clientId,
        subject: client.clientId,
        privateKey: credential.privateKey,
        alg: credential.algorithm,
      });
    }
  }

  get redirectUrl(): undefined {
    return undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'durable-mcp',
      redirect_uris: [],
      grant_types: [
        this.assertion !== undefined ? 'urn:ietf:params:oauth:grant-type:jwt-bearer' : 'client_credentials',
      ],
      token_endpoint_auth_method: this.addClientAuthentication ? 'private_key_jwt' : 'client_secret_basic',
      ...(this.scope ? { scope: this.scope } : {}),
    };
  }

  clientInformation(): OAuthClientInformationMixed {
    return this.info;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.info = info;
  }

  tokens(): undefined {
    return undefined;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.issued = tokens;
  }

  redirectToAuthorization(): void {
    throw new LoginError('internal: a client-credentials grant has no browser step');
  }

  saveCodeVerifier(): void {}

  codeVerifier(): string {
    throw new LoginError('internal: a client-credentials grant has no code verifier');
  }

  prepareTokenRequest(scope?: string): URLSearchParams {
    const params =
      this.assertion !== undefined
        ? new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: this.assertion })
        : new URLSearchParams({ grant_type: 'client_credentials' });
    if (scope) params.set('scope', scope);
    return params;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }
}

/**
 * The authorization server a machine login was first granted by: its credentials (the client
 * secret, a signed assertion, an ID-JAG) go to this issuer's token endpoint and nowhere else.
 */
export interface AuthorizationServerPin {
  issuer: string;
  tokenEndpoint: string;
}

/** Where a login's credentials went: the issuer (its metadata's, else the address it was found at) and its token endpoint. */
export function authorizationServerPinOf(
  discovery: Pick<OAuthDiscoveryState, 'authorizationServerUrl' | 'authorizationServerMetadata'>,
): AuthorizationServerPin {
  const metadata = discovery.authorizationServerMetadata;
  // The SDK's own fallback when the metadata names no token endpoint.
  return {
    issuer: metadata?.issuer ?? discovery.authorizationServerUrl,
    tokenEndpoint: metadata?.token_endpoint ?? new URL('/token', discovery.authorizationServerUrl).href,
  };
}

/** Where a pinned login's server now sends it instead: undefined while it is the pinned issuer and token endpoint. */
export function authorizationServerMoveFrom(
  pinned: AuthorizationServerPin,
  found: AuthorizationServerPin,
): MachineMove | undefined {
  // The protected resource metadata spells the same issuer with and without a trailing slash.
  const bare = (u: string) => (u.endsWith('/') ? u.slice(0, -1) : u);
  // The new one comes from metadata anyone may write, and is shown in the status: cut short.
  if (bare(pinned.issuer) !== bare(found.issuer))
    return { what: 'authorization server', from: pinned.issuer, to: found.issuer.slice(0, 200) };
  if (pinned.tokenEndpoint !== found.tokenEndpoint)
    return { what: 'token endpoint', from: pinned.tokenEndpoint, to: found.tokenEndpoint.slice(0, 200) };
  return undefined;
}

/** A pinned machine login's server names another authorization server (or its issuer another token endpoint). */
export interface MachineMove {
  what: 'authorization server' | 'token endpoint';
  from: string;
  to: string;
}

/** A grant the authorization server refused, or one that could not be made: `reason` holds no secret. */
export class MachineGrantError extends Error {
  override name = 'MachineGrantError';
  /** `moved`: the grant was not made, since the server names another authorization server than the pinned one. */
  constructor(
    readonly reason: string,
    readonly refused: boolean,
    readonly moved?: MachineMove,
  ) {
    super(reason);
  }
}

/** RFC 6749's error codes and their extensions are short tokens; anything else in a body is free text. */
const OAUTH_ERROR_CODE = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * What an endpoint's refusal may say in a status: its HTTP status and, where the body is a
 * well-formed OAuth error, its `error` code. Never its description or any other text of the body,
 * which the endpoint's owner writes.
 */
export function refusalOf(status: number, body: string): { status: number; error?: string } {
  let error: unknown;
  try {
    error = (JSON.parse(body) as { error?: unknown } | null)?.error;
  } catch {
    error = undefined;
  }
  return { status, ...(typeof error === 'string' && OAUTH_ERROR_CODE.test(error) ? { error } : {}) };
}

/**
 * `fetchFn` noting the last refusal (an answer that is not 2xx) to a POST: the token requests
 * of a grant, as opposed to the discovery GETs, whose 404s are expected.
 */
function watchingRefusals(fetchFn: FetchLike): { fetch: FetchLike; last?: { status: number; error?: string } } {
  const watch: { fetch: FetchLike; last?: { status: number; error?: string } } = {
    fetch: async (url, init) => {
      const res = await fetchFn(url, init);
      if (!res.ok && (init?.method ?? 'GET').toUpperCase() === 'POST')
        watch.last = refusalOf(
          res.status,
          await res
            .clone()
            .text()
            .catch(() => ''),
        );
      return res;
    },
  };
  return watch;
}

/** A refusal in words fit for the status: `what` answered HTTP <status> [with <code>]. */
function refusalText(what: string, refusal: { status: number; error?: string }): string {
  return `${what} answered HTTP ${refusal.status}${refusal.error ? ` ${refusal.error}` : ''}`;
}

/**
 * Why a grant failed, without any text of an answer's body: a JSON or schema error quotes the
 * body it choked on, so it is named, not quoted.
 */
function bodyFreeReason(err: unknown, secrets: string[]): string {
  const name = (err as { name?: unknown } | null)?.name;
  if (name === 'SyntaxError') return 'an answer was not valid JSON';
  if (name === 'ZodError') return 'an answer was not what the OAuth specifications say it should be';
  return shortReason(err, secrets);
}

/**
 * Refuses a grant for a server whose protected resource metadata names another resource: the
 * token would be for, and usable at, that one.
 * @throws MachineGrantError naming the resource.
 */
function checkResource(resource: string | undefined, serverUrl: string): void {
  if (
    resource !== undefined &&
    !(
      URL.canParse(resource) &&
      checkResourceAllowed({
        requestedResource: resourceUrlFromServerUrl(serverUrl),
        configuredResource: resource,
      })
    )
  ) {
    throw new MachineGrantError(
      `its protected resource metadata names the resource ${resource.slice(0, 200)}, which is not ${serverUrl}; nothing was sent`,
      false,
    );
  }
}

/** The error a failed grant ends with: the token endpoint's refusal where there was one. */
function grantFailure(
  err: unknown,
  refusal: { status: number; error?: string } | undefined,
  secrets: string[],
): MachineGrantError {
  if (err instanceof MachineGrantError) return err;
  if (err instanceof LoginError) return new MachineGrantError(err.message, false);
  if (refusal) {
    const refused =
      refusal.error !== undefined &&
      ['invalid_client', 'unauthorized_client', 'invalid_grant', 'invalid_scope', 'unsupported_grant_type'].includes(
        refusal.error,
      );
    return new MachineGrantError(refusalText('the token endpoint', refusal), refused);
  }
  return new MachineGrantError(bodyFreeReason(err, secrets), false);
}

/**
 * Obtains tokens for `server` by the client-credentials grant: the server's 401 and protected
 * resource metadata say where its authorization server is and which scope it wants (with
 * `wantedScope`, what a 403 asked for since); the token request carries the resource indicator.
 * Before any credential is sent: the metadata must name this server as its resource, and, where
 * the login is `pinned`, the authorization server must be the pinned one.
 * @returns the login record to store (its tokens have no refresh token: the next ones come by a new grant).
 * @throws MachineGrantError with a reason fit for the status (with `moved` where the authorization server is not the pinned one).
 */
export async function grantMachineTokens(opts: {
  server: string;
  serverUrl: string;
  client: MachineClient;
  credential: MachineCredential;
  fetch: FetchLike;
  now: number;
  wantedScope?: string;
  /** The authorization server of the login's first grant: a grant anywhere else is refused. */
  pinned?: AuthorizationServerPin;
}): Promise<LoginRecord> {
  const secrets =
    'clientSecret' in opts.credential
      ? [opts.credential.clientSecret, ...(opts.credential.idToken ? [opts.credential.idToken] : [])]
      : [];
  if (!safeForTokens(opts.serverUrl))
    throw new MachineGrantError(
      `${opts.serverUrl} is plain http to another machine: its tokens would cross the network readable; use an https:// address`,
      false,
    );
  let provider: MachineGrantProvider;
  const watch = watchingRefusals(opts.fetch);
  let tokenEndpoint: string | undefined;
  try {
    const hint = await probeUnauthorized(opts.serverUrl, opts.fetch);
    // Metadata elsewhere than on the server's own origin is not fetched: the worker would send
    // requests wherever a server's 401 points. The well-known address on its origin serves instead.
    const resourceMetadataUrl =
      hint?.resourceMetadataUrl?.origin === new URL(opts.serverUrl).origin ? hint.resourceMetadataUrl : undefined;
    const found = await discoverOAuthServerInfo(opts.serverUrl, {
      ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}),
      fetchFn: opts.fetch,
    });
    if (found.resourceMetadata)
      checkMetadataIssuer(opts.server, found.authorizationServerUrl, found.authorizationServerMetadata?.issuer);
    checkResource(found.resourceMetadata?.resource, opts.serverUrl);
    const at = authorizationServerPinOf(found);
    tokenEndpoint = at.tokenEndpoint;
    const moved = opts.pinned && authorizationServerMoveFrom(opts.pinned, at);
    if (moved) throw new MachineGrantError(`its ${moved.what} moved from ${moved.from} to ${moved.to}`, false, moved);
    if (!safeForTokens(tokenEndpoint))
      throw new MachineGrantError(
        `the token endpoint ${tokenEndpoint} is plain http to another machine: the client's credentials would cross the network readable`,
        false,
      );
    const scope = scopeUnion(hint?.scope ?? found.resourceMetadata?.scopes_supported?.join(' '), opts.wantedScope);
    provider = new MachineGrantProvider(opts.client, opts.credential, scope);
    // The ID-JAG is for the issuer just checked and the server's own address, never for what the metadata says of itself.
    if (opts.client.grant === 'id_jag') provider.assertion = await idJagOf(opts, at.issuer, opts.serverUrl, scope);
    provider.saveDiscoveryState({
      authorizationServerUrl: found.authorizationServerUrl,
      ...(resourceMetadataUrl ? { resourceMetadataUrl: resourceMetadataUrl.href } : {}),
      ...(found.resourceMetadata ? { resourceMetadata: found.resourceMetadata } : {}),
      ...(found.authorizationServerMetadata ? { authorizationServerMetadata: found.authorizationServerMetadata } : {}),
    });
    await auth(provider, {
      serverUrl: opts.serverUrl,
      ...(resourceMetadataUrl ? { resourceMetadataUrl } : {}),
      ...(scope ? { scope } : {}),
      fetchFn: watch.fetch,
    });
  } catch (err) {
    throw grantFailure(err, watch.last, secrets);
  }
  if (!provider.issued || !provider.discovery)
    throw new MachineGrantError('the authorization server answered without tokens', false);
  const { issuer: _issuer, ...tokens } = provider.issued as OAuthTokens & { issuer?: string };
  return {
    server: opts.server,
    serverUrl: opts.serverUrl,
    loginId: machineLoginId(opts.server, opts.client),
    createdAt: new Date(opts.now).toISOString(),
    discovery: provider.discovery,
    client: { client_id: opts.client.clientId },
    ...(opts.client.clientSecretEnv !== undefined ? { clientSecretEnv: opts.client.clientSecretEnv } : {}),
    grant: opts.client.grant,
    tokens: storedTokens(tokens, opts.now),
    ...(opts.wantedScope ? { wantedScope: opts.wantedScope } : {}),
  };
}

/**
 * The ID-JAG for one grant: the user's ID token exchanged at the identity provider (RFC 8693), for
 * the server's authorization server (`audience`, its issuer) and the server itself (`resource`).
 * @throws MachineGrantError saying the identity provider refused the ID token (`refused`).
 */
async function idJagOf(
  opts: { client: MachineClient; credential: MachineCredential; fetch: FetchLike },
  audience: string,
  resource: string,
  scope: string | undefined,
): Promise<string> {
  const endpoint = opts.client.idpTokenEndpoint ?? '';
  if (!safeForTokens(endpoint))
    throw new MachineGrantError(
      `the identity provider's token endpoint ${endpoint} is plain http to another machine: the ID token would cross the network readable`,
      false,
    );
  const idToken = 'idToken' in opts.credential ? (opts.credential.idToken ?? '') : '';
  const watch = watchingRefusals(opts.fetch);
  try {
    const result = await requestJwtAuthorizationGrant({
      tokenEndpoint: endpoint,
      audience,
      resource,
      idToken,
      clientId: opts.client.idpClientId ?? '',
      ...(scope ? { scope } : {}),
      fetchFn: watch.fetch,
    });
    return result.jwtAuthGrant;
  } catch (err) {
    // fetch throws a TypeError when the identity provider cannot be reached: that is no refusal.
    if (err instanceof TypeError)
      throw new MachineGrantError(
        `the identity provider at ${endpoint} did not answer (${shortReason(err, [idToken])})`,
        false,
      );
    const why = watch.last ? refusalText('it', watch.last) : bodyFreeReason(err, [idToken]);
    throw new MachineGrantError(
      `the identity provider refused the ID token in ${opts.client.idTokenEnv} (${why}): it may have expired; set ${opts.client.idTokenEnv} to a fresh one on the workers`,
      true,
    );
  }
}
