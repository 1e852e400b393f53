/**
 * Pure helpers of OAuth tokens that every kind of login shares (a person's, a machine's, the
 * refresh of either): scopes, expiry, what is stored, and a failure's reason without secrets.
 */
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { StoredTokens } from './tokenStore.js';

// A login's tokens go only to the address it was made for.
export { sameServerUrl } from '../text/sameUrl.js';

/** The scopes of `lists` (space-separated), each once, in the order first seen. */
export function scopeUnion(...lists: (string | undefined)[]): string | undefined {
  const all = [...new Set(lists.flatMap((l) => (l ?? '').split(' ')).filter((s) => s !== ''))];
  return all.length > 0 ? all.join(' ') : undefined;
}

/** True when the access token has expired or expires within `marginMs` of `now`; tokens without an expiry never do. */
export function expiresWithin(tokens: Pick<StoredTokens, 'expiresAt'>, marginMs: number, now: number): boolean {
  return tokens.expiresAt !== undefined && tokens.expiresAt - now <= marginMs;
}

/**
 * True when the access token should be refreshed now: within `marginMs` of its expiry, but never
 * earlier than half its lifetime, so tokens that live shorter than the margin are not refreshed on
 * every request.
 */
export function refreshDue(
  tokens: Pick<StoredTokens, 'expiresAt' | 'obtainedAt'>,
  marginMs: number,
  now: number,
): boolean {
  if (tokens.expiresAt === undefined) return false;
  const lifetime = tokens.expiresAt - tokens.obtainedAt;
  return expiresWithin(tokens, lifetime > 0 ? Math.min(marginMs, lifetime / 2) : marginMs, now);
}

/** Tokens as stored: the issued ones plus when they expire on our clock. */
export function storedTokens(tokens: OAuthTokens, now: number): StoredTokens {
  const expiresIn =
    typeof tokens.expires_in === 'number' && Number.isFinite(tokens.expires_in) ? tokens.expires_in : undefined;
  return { ...tokens, obtainedAt: now, ...(expiresIn !== undefined ? { expiresAt: now + expiresIn * 1000 } : {}) };
}

/** A short reason for a failed refresh, with every known secret cut out; at most 160 characters. */
export function shortReason(err: unknown, secrets: string[]): string {
  let text: string;
  if (err instanceof OAuthError) text = `${err.errorCode}${err.message ? `: ${err.message}` : ''}`;
  else if (err instanceof Error && err.name === 'TimeoutError')
    text = 'the authorization server did not answer in time';
  else if (err instanceof Error) {
    const cause = (err as Error & { cause?: { code?: string } }).cause?.code;
    text = cause ? `${err.message} (${cause})` : err.message;
  } else text = String(err);
  for (const s of secrets) if (s.length >= 4) text = text.split(s).join('[redacted]');
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}
