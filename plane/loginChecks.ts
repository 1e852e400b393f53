/**
 * What a login refuses, and the {@link LoginError} it refuses with: tokens bound for plain http to
 * another machine, authorization server metadata naming another issuer, and a redirect address
 * that does not belong to the pending login or comes from another issuer.
 */
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { PendingLogin } from './tokenStore.js';

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
export function checkTransport(server: string, discovery: OAuthDiscoveryState | undefined, serverUrl?: string): void {
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
