/**
 * Machine logins: a shelf server whose entry names a client with `grant: client_credentials` gets
 * its tokens from the workers themselves, by the OAuth client-credentials grant (the MCP
 * authorization extension for machine-to-machine clients), with no person and no `mcp login`.
 * The client authenticates with a secret (`client_secret_basic`, or `client_secret_post` where the
 * authorization server offers only that) or with a JWT signed with its private key
 * (`private_key_jwt`, RFC 7523); both are read from worker variables, never stored. Discovery,
 * client authentication and the JWT are the MCP SDK's; this file runs them and turns what comes
 * back into a login record (sealed in the token store like any other) or a problem that says
 * what to fix.
 */
import { createHash, createPrivateKey } from 'node:crypto';
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
import type { Logger } from 'pino';
import { requestJwtAuthorizationGrant } from '@modelcontextprotocol/client';
import type { LoginToken } from '../mcp/login.js';
import { mcpEnvEntries } from '../settings/index.js';
import { sameServerUrl } from '../text/sameUrl.js';
import { refreshDue, scopeUnion, shortReason, storedTokens } from './tokens.js';
import { checkMetadataIssuer, LoginError, probeUnauthorized, safeForTokens } from './oauth.js';
import type { ShelfOAuthClient } from '../contract/shelf.js';
import type { MachineClient } from './shelf.js';
import type { LoginRecord, StoredTokens, TokenStore } from './tokenStore.js';

export type { MachineClient };

/** What the client proves itself with: its secret, or its private key (PKCS#8 PEM) and the JWS algorithm. */
export type MachineCredential = { clientSecret: string; idToken?: string } | { privateKey: string; algorithm: string };

/** The flags that put a machine login on the shelf, for messages that say how to fix one. */
export function machineAddCommand(server: string, url: string, client: MachineClient): string {
  if (client.grant === 'id_jag') {
    return `durable-mcp mcp add ${server} ${url} --id-jag --client-id ${client.clientId} --client-secret-env ${client.clientSecretEnv ?? '<VAR>'} --idp-token-endpoint ${client.idpTokenEndpoint ?? '<URL>'} --idp-client-id ${client.idpClientId ?? '<ID>'} --id-token-env ${client.idTokenEnv ?? '<VAR>'}`;
  }
  const how =
    client.privateKeyEnv !== undefined
      ? `--private-key-env ${client.privateKeyEnv}${client.signingAlgorithm ? ` --signing-algorithm ${client.signingAlgorithm}` : ''}`
      : `--client-secret-env ${client.clientSecretEnv ?? '<VAR>'}`;
  return `durable-mcp mcp add ${server} ${url} --client-credentials --client-id ${client.clientId} ${how}`;
}

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

const CURVE_ALGORITHMS: Record<string, string> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };

/**
 * The private key as PKCS#8 PEM (what the SDK's signer imports), and the algorithm to sign with:
 * the one given, else the key's own (RS256 for RSA, PS256 for RSA-PSS, ES256/384/512 by curve).
 * A key kept in a one-line variable with `\n` escapes is read too.
 * @throws Error saying what is wrong with the key (never quoting it).
 */
export function privateKeyOf(text: string, algorithm: string | undefined): { privateKey: string; algorithm: string } {
  const pem = text.includes('\n') ? text : text.replace(/\\n/g, '\n');
  let key;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new Error('it does not hold a private key in PEM (-----BEGIN PRIVATE KEY----- ...)');
  }
  const type = key.asymmetricKeyType;
  const own =
    type === 'rsa'
      ? 'RS256'
      : type === 'rsa-pss'
        ? 'PS256'
        : type === 'ec'
          ? CURVE_ALGORITHMS[key.asymmetricKeyDetails?.namedCurve ?? '']
          : undefined;
  const chosen = algorithm ?? own;
  if (!chosen)
    throw new Error(
      `its ${type ?? 'unknown'} key has no signing algorithm here; use an RSA or EC (P-256, P-384, P-521) key`,
    );
  const family = chosen.startsWith('ES') ? 'ec' : 'rsa';
  if (family !== (type === 'ec' ? 'ec' : 'rsa')) throw new Error(`it holds a ${type} key, which cannot sign ${chosen}`);
  return { privateKey: key.export({ type: 'pkcs8', format: 'pem' }).toString(), algorithm: chosen };
}

/**
 * The client's secret or key from `env`. On a worker (`listed`) the variable must be one its
 * DMCP_MCP_ENV lists, like every secret a server gets from a worker.
 */
export function machineCredentialOf(
  client: MachineClient,
  env: NodeJS.ProcessEnv,
  listed: boolean,
): MachineCredential | { reason: string } {
  const variable = client.privateKeyEnv ?? client.clientSecretEnv;
  const what = client.privateKeyEnv !== undefined ? 'private key' : 'client secret';
  if (variable === undefined) return { reason: 'its machine login names neither a secret nor a private key' };
  const allowed = !listed || mcpEnvEntries(env).includes(variable);
  const value = allowed ? env[variable] : undefined;
  if (!value)
    return {
      reason: `its ${what} is read from ${variable}, which ${listed ? 'this worker' : 'this process'} ${allowed ? 'does not have: set it' : 'may not read: list it in DMCP_MCP_ENV'}`,
    };
  if (client.privateKeyEnv === undefined) {
    if (client.grant !== 'id_jag') return { clientSecret: value };
    const idVariable = client.idTokenEnv ?? '';
    const idAllowed = !listed || mcpEnvEntries(env).includes(idVariable);
    const idToken = idAllowed ? env[idVariable] : undefined;
    if (!idToken)
      return {
        reason: `its ID token is read from ${idVariable}, which ${listed ? 'this worker' : 'this process'} ${idAllowed ? "does not have: set it to the user's ID token from the identity provider" : 'may not read: list it in DMCP_MCP_ENV'}`,
      };
    return { clientSecret: value, idToken: idToken.trim() };
  }
  try {
    return privateKeyOf(value, client.signingAlgorithm);
  } catch (err) {
    return { reason: `${variable}: ${(err as Error).message}` };
  }
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
    const resource = found.resourceMetadata?.resource;
    if (
      resource !== undefined &&
      !(
        URL.canParse(resource) &&
        checkResourceAllowed({
          requestedResource: resourceUrlFromServerUrl(opts.serverUrl),
          configuredResource: resource,
        })
      )
    ) {
      throw new MachineGrantError(
        `its protected resource metadata names the resource ${resource.slice(0, 200)}, which is not ${opts.serverUrl}; nothing was sent`,
        false,
      );
    }
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
    if (err instanceof MachineGrantError) throw err;
    if (err instanceof LoginError) throw new MachineGrantError(err.message, false);
    const refusal = watch.last;
    if (refusal) {
      const refused =
        refusal.error !== undefined &&
        ['invalid_client', 'unauthorized_client', 'invalid_grant', 'invalid_scope', 'unsupported_grant_type'].includes(
          refusal.error,
        );
      throw new MachineGrantError(refusalText('the token endpoint', refusal), refused);
    }
    throw new MachineGrantError(bodyFreeReason(err, secrets), false);
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

/**
 * What the status says when a machine login's server names another authorization server than
 * the one it was pinned to, and how an operator who expected the move re-pins it.
 */
export function machineMovedMessage(server: string, moved: Pick<MachineMove, 'what' | 'from' | 'to'>): string {
  return (
    `its ${moved.what} moved from ${moved.from} to ${moved.to}, where its client credentials are not sent (only to where its first grant was made): ` +
    `if the move is expected, durable-mcp mcp logout ${server}; the next grant is then made at the new one and kept to it`
  );
}

/** What the status says when a machine login has no token to give, naming what to fix. */
export function machineProblemMessage(
  server: string,
  client: MachineClient,
  reason: string,
  refused: boolean,
  where = { variable: 'on the workers', url: '<url>' },
): string {
  const variable = client.privateKeyEnv ?? client.clientSecretEnv;
  if (client.grant === 'id_jag' && reason.startsWith('the identity provider refused'))
    return `${reason}; tried again next turn`;
  if (refused) {
    return `the authorization server refused its client credentials (${reason}): check ${variable} ${where.variable}, or put the server back with the right client: durable-mcp mcp forget ${server}, then ${machineAddCommand(server, where.url, client)}; tried again next turn`;
  }
  return `could not get a token by the ${client.grant === 'id_jag' ? 'cross-app access (ID-JAG)' : 'client-credentials'} grant (${reason}); tried again next turn`;
}

export interface MachineTokenDeps {
  store: TokenStore;
  logger: Logger;
  /** The worker's environment: the client's secret or key, from a variable DMCP_MCP_ENV lists. */
  env: NodeJS.ProcessEnv;
  fetch: FetchLike;
  now: () => number;
  /** Renew when the access token expires within this many milliseconds. */
  marginMs: number;
  /** Every token value seen, for scrubbing. */
  remember(server: string, tokens: StoredTokens): void;
}

/** Whether `record` holds tokens of this machine client for this address (and not some earlier login). */
function machineRecordFits(
  record: LoginRecord | undefined,
  server: string,
  serverUrl: string,
  client: MachineClient,
): record is LoginRecord {
  return (
    record !== undefined &&
    record.grant === client.grant &&
    record.loginId === machineLoginId(server, client) &&
    sameServerUrl(record.serverUrl, serverUrl) &&
    !record.dead
  );
}

/**
 * The pin of this machine client's login at this address: the authorization server its first
 * grant was made at, kept with every later grant's record. A login of another client or address
 * (an operator's new entry) pins afresh; `mcp logout` deletes the record, and with it the pin.
 */
export function machinePinOf(
  record: LoginRecord | undefined,
  server: string,
  serverUrl: string,
  client: MachineClient,
): AuthorizationServerPin | undefined {
  return machineRecordFits(record, server, serverUrl, client) ? authorizationServerPinOf(record.discovery) : undefined;
}

/**
 * A machine login's access token: the stored one while it is good, else a new grant. `stale` is a
 * token the server refused (a 401): it is not given again. The grant runs under the server's lock
 * and the record is read again inside it, so workers sharing the token folder make one grant, not
 * one each.
 */
export async function machineToken(
  deps: MachineTokenDeps,
  server: string,
  serverUrl: string,
  client: MachineClient,
  stale?: string,
): Promise<LoginToken> {
  const answer = (r: LoginRecord): LoginToken => ({ token: r.tokens.access_token, loginId: r.loginId });
  const problem = (reason: string, refused: boolean): LoginToken => ({
    problem: { kind: 'refresh_failed', message: machineProblemMessage(server, client, reason, refused) },
  });
  const usable = (r: LoginRecord, margin: number) =>
    r.tokens.access_token !== stale && !refreshDue(r.tokens, margin, deps.now());
  // Without the lock first: a good token needs none.
  const current = await deps.store.read(server);
  if (machineRecordFits(current, server, serverUrl, client) && usable(current, deps.marginMs)) {
    deps.remember(server, current.tokens);
    return answer(current);
  }
  return deps.store.withLock(server, async () => {
    const record = await deps.store.read(server);
    const fits = machineRecordFits(record, server, serverUrl, client);
    if (fits) {
      deps.remember(server, record.tokens);
      if (usable(record, deps.marginMs)) return answer(record);
    }
    // A token not yet expired still serves while a new one cannot be had.
    const fallback = fits && usable(record, 0) ? record : undefined;
    const credential = machineCredentialOf(client, deps.env, true);
    if ('reason' in credential) {
      deps.logger.warn({ server, grant: client.grant, reason: credential.reason }, 'cannot make the machine grant');
      return fallback ? answer(fallback) : problem(credential.reason, false);
    }
    let next: LoginRecord;
    const pinned = machinePinOf(record, server, serverUrl, client);
    try {
      next = await grantMachineTokens({
        server,
        serverUrl,
        client,
        credential,
        fetch: deps.fetch,
        now: deps.now(),
        ...(fits && record.wantedScope ? { wantedScope: record.wantedScope } : {}),
        ...(pinned ? { pinned } : {}),
      });
    } catch (err) {
      if (err instanceof MachineGrantError && err.moved && fits) {
        deps.logger.warn(
          { server, grant: client.grant, from: err.moved.from, to: err.moved.to },
          'the server names another authorization server than the machine login is pinned to: no grant made there',
        );
        if (record.movedTo !== err.moved.to) await deps.store.write({ ...record, movedTo: err.moved.to });
        return fallback
          ? answer(fallback)
          : { problem: { kind: 'moved', message: machineMovedMessage(server, err.moved) } };
      }
      const reason =
        err instanceof MachineGrantError
          ? err.reason
          : shortReason(
              err,
              'clientSecret' in credential
                ? [credential.clientSecret, ...(credential.idToken ? [credential.idToken] : [])]
                : [],
            );
      deps.logger.warn({ server, grant: client.grant, reason }, 'the machine grant failed');
      return fallback ? answer(fallback) : problem(reason, err instanceof MachineGrantError && err.refused);
    }
    deps.remember(server, next.tokens);
    await deps.store.write(next);
    deps.logger.info(
      { server, grant: client.grant, loginId: next.loginId, expiresAt: next.tokens.expiresAt },
      'obtained a token by the machine grant',
    );
    return answer(next);
  });
}
