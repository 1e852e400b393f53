/**
 * How one variable's text becomes a value, with the error that names the variable: the rules every
 * setting shares, and the checks of a key and a URL that other modules run on values from elsewhere.
 */
export type Env = Record<string, string | undefined>;

/** A variable with a value that cannot be used: names the variable and what it expects. */
export class SettingsError extends Error {
  override name = 'SettingsError';
}

/** Parses `10s`, `500ms`, `10m`, `1h` or a plain number of milliseconds. */
export function parseDuration(value: string, variable: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value);
  if (!match) throw new SettingsError(`${variable}: expected a duration such as 10s, 500ms or 10m, got "${value}"`);
  const n = Number(match[1]);
  const unit = match[2] ?? 'ms';
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h']);
}

/** `1/true/yes/on` and `0/false/no/off` (any case); unset or empty is `undefined`. */
export function parseFlag(value: string | undefined, variable: string): boolean | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new SettingsError(`${variable} must be true or false (or 1/0, yes/no, on/off), got ${JSON.stringify(value)}`);
}

/**
 * Why `value` cannot be a client ID metadata document's address: it must be https, with a path
 * other than `/` (the document's address is the client's ID), and no fragment or credentials.
 */
export function clientMetadataUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an https:// address';
  }
  if (url.protocol !== 'https:') return 'must be an https:// address (authorization servers fetch it)';
  if (url.pathname === '/' || url.pathname === '')
    return 'must have a path (https://host/client-metadata.json), not the bare host';
  if (url.hash !== '' || value.includes('#')) return 'must have no #fragment';
  if (url.username !== '' || url.password !== '') return 'must carry no user name or password';
  return undefined;
}

/**
 * A 32-byte key written as 64 hex digits or base64 (one spelling each: Node's base64 decoder skips
 * unknown characters, so a mistyped key would otherwise decode to some other 32 bytes).
 * @throws SettingsError naming `variable`, never echoing the value.
 */
export function decodeKey32(value: string, variable: string): Buffer {
  const trimmed = value.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) key = Buffer.from(trimmed, 'hex');
  else if (/^[A-Za-z0-9+/]{43}=?$/.test(trimmed)) key = Buffer.from(trimmed, 'base64');
  else if (/^[A-Za-z0-9_-]{43}$/.test(trimmed)) key = Buffer.from(trimmed, 'base64url');
  if (key?.length !== 32)
    throw new SettingsError(
      `${variable} must be 32 bytes, written as 64 hex digits or base64 (e.g. \`openssl rand -base64 32\`)`,
    );
  return key;
}
