/**
 * Bearer tokens of the HTTP API. The configuration holds only SHA-256 hashes of tokens, each with
 * the session-ID prefixes it may reach; a presented token is hashed and compared in constant time.
 * Pure, except for hashing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { SettingsError } from '../settings/index.js';

/** One configured token: its hash and the session-ID prefixes it may reach (`''` reaches every session). */
export interface ApiToken {
  hash: Buffer;
  prefixes: string[];
  /** The `shelf` scope: the entry ends in the word `shelf`; reads and changes the shelf of servers and grants. */
  shelf: boolean;
  /** Where it was configured (variable or file and line), for messages; never the token. */
  source: string;
}

/** `sha256:<hex>` of a token, the form the configuration holds. */
export function hashToken(token: string): string {
  return `sha256:${createHash('sha256').update(token, 'utf8').digest('hex')}`;
}

const ENTRY_RE = /^sha256:([0-9a-f]{64})\s+(\S+)(?:\s+(\S+))?$/i;
/** The scopes an entry may end with. */
const SCOPES = ['shelf'];

/**
 * Parses token entries: `sha256:<64 hex> <prefix>[,<prefix>...] [shelf]`, `*` for every session. Entries are
 * separated by newlines or `;`; blank lines and `#` comments are skipped.
 * @param where the variable or file, named in errors with the entry's line.
 * @throws SettingsError naming the entry that cannot be used (never echoing a plaintext token).
 */
export function parseTokens(text: string, where: string): ApiToken[] {
  const tokens: ApiToken[] = [];
  const lines = text.split('\n');
  for (const [lineIndex, line] of lines.entries()) {
    const entries = line.replace(/#.*$/, '').split(';');
    for (const [entryIndex, raw] of entries.entries()) {
      const entry = raw.trim();
      if (!entry) continue;
      const at = lines.length > 1 ? `${where} line ${lineIndex + 1}` : `${where} entry ${entryIndex + 1}`;
      const match = ENTRY_RE.exec(entry);
      if (!match) {
        const hint = /^sha256:/i.test(entry)
          ? 'expected "sha256:<64 hex digits> <session-prefix>[,<prefix>...]"'
          : 'entries hold the SHA-256 of a token, not the token: "sha256:<64 hex digits> <session-prefix>[,...]" (printf %s "$TOKEN" | sha256sum)';
        throw new SettingsError(`${at}: ${hint}`);
      }
      const prefixes = match[2]!
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)
        .map((p) => (p === '*' ? '' : p));
      if (prefixes.length === 0) throw new SettingsError(`${at}: no session prefix given (use * for every session)`);
      const scope = match[3];
      if (scope !== undefined && !SCOPES.includes(scope))
        throw new SettingsError(
          `${at}: unknown scope ${JSON.stringify(scope)} after the prefixes (the one scope is "shelf")`,
        );
      tokens.push({
        hash: Buffer.from(match[1]!.toLowerCase(), 'hex'),
        prefixes,
        shelf: scope === 'shelf',
        source: at,
      });
    }
  }
  return tokens;
}

/** The configured token a presented one matches, if any. Every entry is compared, in constant time each. */
export function findToken(tokens: readonly ApiToken[], presented: string): ApiToken | undefined {
  const hash = createHash('sha256').update(presented, 'utf8').digest();
  let found: ApiToken | undefined;
  for (const t of tokens) if (timingSafeEqual(t.hash, hash) && !found) found = t;
  return found;
}

/** Whether a token may reach a session. */
export function tokenAllows(token: ApiToken, sessionId: string): boolean {
  return token.prefixes.some((p) => sessionId.startsWith(p));
}

/** Whether a token may run turns as an agent, or read its servers: the agent ID starts with one of its prefixes. */
export function tokenAllowsAgent(token: ApiToken, agent: string): boolean {
  return token.prefixes.some((p) => agent.startsWith(p));
}

/** The bearer token of an `Authorization` header, if it has the right form. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  return match?.[1];
}

/** Whether a peer address is this machine (IPv4, IPv6, and IPv4 mapped into IPv6). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.replace(/^::ffff:/i, '');
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}
