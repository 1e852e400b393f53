/**
 * Logging out of a shelf server: its tokens revoked (RFC 7009) where the authorization server
 * offers revocation, then its login and any pending login deleted.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { safeForTokens } from './loginChecks.js';
import { fetchOf, type LoginDeps } from './oauth.js';
import { shortReason } from './tokens.js';
import type { LoginRecord } from './tokenStore.js';

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
