import { ConfigError, type ServerEntry } from './types.js';
import { mcpEnvEntries } from '../settings/index.js';

/** Shape of an environment variable name (POSIX portable). */
export const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Names that look like credentials. A name is secret when it ends in one of these words (after a
 * `_`, or as the whole name), so `OPENAI_API_KEY`, `GITHUB_TOKEN`, `GITHUB_PAT`, `AWS_SECRET_ACCESS_KEY`,
 * `JWT_SIGNING_KEYS`, `NPM_AUTH`, `SENTRY_DSN` match while `NPM_TOKEN_FILE`, `KEYBOARD_LAYOUT` or
 * `DMCP_MAX_TOOL_RESULT_TOKENS` do not. URLs and connection strings of databases, brokers and
 * webhooks carry their credentials inside the value, so their usual names count too.
 */
const PROVIDER_KEY_RE = new RegExp(
  '(?:^|_)(?:' +
    [
      'API_?KEYS?',
      'KEYS?',
      'TOKEN',
      'SECRETS?',
      'PASSWORD',
      'PASSWD',
      'PASSPHRASE',
      'CREDENTIALS?',
      'PAT',
      'AUTH',
      'AUTHORIZATION',
      'AUTH_HEADER',
      'AUTHORIZATION_HEADER',
      'COOKIE',
      'DSN',
      'WEBHOOK',
      'WEBHOOK_UR[LI]',
      'CONNECTION_STRING',
      'CONN_?STR(?:ING)?',
      '(?:DATABASE|DB|POSTGRES(?:QL)?|PG|MYSQL|MARIADB|MONGO(?:DB)?|REDIS|AMQP|RABBITMQ|BROKER)_UR[LI]',
    ].join('|') +
    ')$|PASSWORD$',
);

/** Temporal and project credentials: never handed to a server, whatever DMCP_MCP_ENV says. */
const FIXED_SECRETS = new Set(['TEMPORAL_API_KEY', 'TEMPORAL_CODEC_AUTH']);
/**
 * The client key of an mTLS connection (its path or its PEM data). The other TLS variables (server
 * name, CA and certificate, host verification) are not credentials, and scrubbing values such as
 * `localhost` or `true` out of every result would garble them.
 */
const FIXED_SECRET_PREFIXES = ['TEMPORAL_TLS_CLIENT_KEY'];
/**
 * Every key, token or password of durable-mcp itself, wherever the word sits in the name: the
 * current and previous encryption keys (`DMCP_ENCRYPTION_KEYS_PREVIOUS`) and any added later.
 */
const PROJECT_SECRET_RE = /^DMCP_(?:[A-Z0-9]+_)*?(?:KEYS?|TOKEN|SECRETS?|PASSWORDS?|AUTH)(?:_|$)/;

/** Values shorter than this are not scrubbed: replacing "1" or "on" everywhere would garble text. */
const MIN_SCRUB_LENGTH = 4;

/** Why a variable name is secret, or undefined when it is not. Used in refusal messages. */
export type SecretKind = 'allow-listed' | 'provider-key' | 'credential';

/** Parses `DMCP_MCP_ENV` (comma- or whitespace-separated variable names); invalid names are dropped. */
export function allowedSecretNames(env: NodeJS.ProcessEnv): string[] {
  return [...new Set(mcpEnvEntries(env).filter((s) => ENV_NAME_RE.test(s)))];
}

/** Names in `DMCP_MCP_ENV` that are not valid variable names (reported as a warning by the loader). */
export function invalidAllowListNames(env: NodeJS.ProcessEnv): string[] {
  return mcpEnvEntries(env).filter((s) => !ENV_NAME_RE.test(s));
}

/** Classifies a variable name as secret, or returns undefined. */
export function secretKind(name: string, env: NodeJS.ProcessEnv): SecretKind | undefined {
  if (allowedSecretNames(env).includes(name)) return 'allow-listed';
  const upper = name.toUpperCase();
  if (
    FIXED_SECRETS.has(upper) ||
    FIXED_SECRET_PREFIXES.some((p) => upper.startsWith(p)) ||
    PROJECT_SECRET_RE.test(upper)
  ) {
    return 'credential';
  }
  if (PROVIDER_KEY_RE.test(upper)) return 'provider-key';
  return undefined;
}

/** True when `name` is a secret: listed in DMCP_MCP_ENV, a provider key, or a Temporal/project credential. */
export function isSecretName(name: string, env: NodeJS.ProcessEnv): boolean {
  return secretKind(name, env) !== undefined;
}

/** Human wording of why a name is secret, for messages. */
export function describeSecret(name: string, env: NodeJS.ProcessEnv): string {
  switch (secretKind(name, env)) {
    case 'allow-listed':
      return `"${name}" is listed in DMCP_MCP_ENV`;
    case 'credential':
      return `"${name}" is a Temporal or durable-mcp credential`;
    case 'provider-key':
      return `"${name}" looks like a credential (its name ends in KEY, TOKEN, SECRET, PASSWORD, CREDENTIALS, PAT, AUTH or DSN, or names a webhook, a connection string or a database URL)`;
    default:
      return `"${name}" is not secret`;
  }
}

/** The worker environment minus every secret variable: the base of every child process's environment. */
export function scrubbedEnvironment(workerEnv: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(workerEnv)) {
    if (value !== undefined && !isSecretName(name, workerEnv)) out[name] = value;
  }
  return out;
}

function workerValue(entry: ServerEntry, field: string, workerVar: string, workerEnv: NodeJS.ProcessEnv): string {
  // Re-checked here although validation already did: an entry built by hand must not bypass the list.
  if (!allowedSecretNames(workerEnv).includes(workerVar)) {
    throw new ConfigError(
      `server "${entry.name}": ${field}: worker variable "${workerVar}" is not listed in DMCP_MCP_ENV`,
      entry.source,
      undefined,
      field,
    );
  }
  const value = workerEnv[workerVar];
  if (value === undefined || value === '') {
    throw new ConfigError(
      `server "${entry.name}": ${field}: worker variable "${workerVar}" is not set on this worker`,
      entry.source,
      undefined,
      field,
    );
  }
  return value;
}

/**
 * The environment of a stdio server: the worker's minus secrets, plus `env`, plus
 * `envFrom` resolved from the worker. Throws ConfigError naming the variable (never its value) when an
 * `envFrom` variable is unset or not allow-listed.
 */
export function serverEnvironment(entry: ServerEntry, workerEnv: NodeJS.ProcessEnv): Record<string, string> {
  const out = scrubbedEnvironment(workerEnv);
  Object.assign(out, entry.env);
  for (const [serverVar, workerVar] of Object.entries(entry.envFrom)) {
    out[serverVar] = workerValue(entry, `envFrom.${serverVar}`, workerVar, workerEnv);
  }
  return out;
}

/**
 * The bearer token of an HTTP/SSE server, resolved on the worker at connect time, or undefined when the
 * entry has no `bearerTokenEnv`. Throws ConfigError when the variable is unset, not allow-listed, or
 * holds a line break (which would inject headers).
 */
export function bearerToken(entry: ServerEntry, workerEnv: NodeJS.ProcessEnv): string | undefined {
  if (entry.bearerTokenEnv === undefined) return undefined;
  const value = workerValue(entry, 'bearerTokenEnv', entry.bearerTokenEnv, workerEnv);
  if (/[\r\n\0]/.test(value)) {
    throw new ConfigError(
      `server "${entry.name}": bearerTokenEnv: worker variable "${entry.bearerTokenEnv}" contains a line break`,
      entry.source,
      undefined,
      'bearerTokenEnv',
    );
  }
  return value;
}

/** The headers to send to an HTTP/SSE server: `headers` plus `Authorization: Bearer` from `bearerTokenEnv`. */
export function requestHeaders(entry: ServerEntry, workerEnv: NodeJS.ProcessEnv): Record<string, string> {
  const token = bearerToken(entry, workerEnv);
  return token === undefined ? { ...entry.headers } : { ...entry.headers, Authorization: `Bearer ${token}` };
}

/**
 * Values that are words, not secrets, whatever their variable is called (`SKIP_AUTH=true`): scrubbing
 * them would garble every result that says "true".
 */
const PLAIN_WORDS = new Set([
  'true',
  'false',
  'yes',
  'no',
  'on',
  'off',
  'none',
  'null',
  'undefined',
  'enabled',
  'disabled',
]);

/**
 * Whether a name is secret by itself (`secretKind(name, {})`, a pure function of the name), by
 * name: every result's scrubbing reads the environment again (so a variable set since is seen), and
 * classifying every variable's name with the credential patterns each time showed in the worker's
 * CPU profile of a fast call.
 */
const secretByName = new Map<string, boolean>();

function secretByItself(name: string): boolean {
  let secret = secretByName.get(name);
  if (secret === undefined) secretByName.set(name, (secret = secretKind(name, {}) !== undefined));
  return secret;
}

/** Values of every secret variable set in `env` (length >= 4), longest first so overlaps scrub fully. */
export function secretValues(env: NodeJS.ProcessEnv): string[] {
  const values = new Set<string>();
  // Parsed once here, not once per variable: scrubbers check this list on every call.
  const allowed = new Set(allowedSecretNames(env));
  for (const name of Object.keys(env)) {
    // The name first: most variables are not secret, and each value read from process.env is a call into the runtime.
    if (!allowed.has(name) && !secretByItself(name)) continue;
    const value = env[name];
    if (value === undefined || value.length < MIN_SCRUB_LENGTH || PLAIN_WORDS.has(value.toLowerCase())) continue;
    values.add(value);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/**
 * Encoded forms are scrubbed only from this length on: a shorter run of base64 or hex characters
 * turns up by chance inside ordinary encoded data (an image), which scrubbing would break.
 */
const MIN_ENCODED_LENGTH = 8;

/**
 * The part of the base64 text of `bytes`, placed `offset` bytes into a longer buffer, that does not
 * depend on the bytes around it. The three offsets cover every position, so the secret is found in
 * `base64("user:" + secret)` (Basic auth, any user) and inside any larger encoded blob.
 */
function base64Core(bytes: Buffer, offset: number): string {
  const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
  // Character i holds bits [6i, 6i + 6); keep those lying wholly inside the secret's bits.
  return text.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
}

/**
 * The forms in which a secret value can reach a result without being itself: escaped inside JSON
 * text (once or twice), URL-encoded (upper- or lower-case hex, `+` for spaces), hex, base64 and
 * base64url at any alignment, and, for a multi-line value (a PEM key), each of its lines.
 */
export function encodedForms(value: string): string[] {
  const forms = new Set<string>();
  const json = JSON.stringify(value).slice(1, -1);
  forms.add(json);
  forms.add(JSON.stringify(json).slice(1, -1));
  // Encoders that keep JSON to ASCII (Python's default) write \uXXXX for everything else.
  forms.add(json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
  const uri = encodeURIComponent(value);
  for (const u of [uri, encodeURI(value)]) {
    forms.add(u);
    forms.add(u.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
    forms.add(u.replace(/%20/g, '+'));
  }
  const bytes = Buffer.from(value, 'utf8');
  const hex = bytes.toString('hex');
  forms.add(hex);
  forms.add(hex.toUpperCase());
  for (let offset = 0; offset < 3; offset++) {
    const core = base64Core(bytes, offset);
    forms.add(core);
    forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  if (/[\r\n]/.test(value)) {
    for (const line of value.split(/\r?\n|\r/)) forms.add(line.trim());
  }
  forms.delete(value);
  return [...forms].filter((f) => f.length >= MIN_ENCODED_LENGTH);
}

/** Replaces text with `[redacted]`; what every scrubber puts in place of a secret. */
export const REDACTED = '[redacted]';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A function that replaces each of `values` (of 4 or more characters) and each of their encoded
 * forms with `[redacted]`, in one pass. Building it costs the encodings of every value; build it
 * once per set of secrets and call it often.
 */
export function scrubberFor(values: Iterable<string>): (text: string) => string {
  const needles = new Set<string>();
  for (const value of values) {
    if (value.length < MIN_SCRUB_LENGTH) continue;
    needles.add(value);
    for (const form of encodedForms(value)) needles.add(form);
  }
  if (needles.size === 0) return (text) => text;
  // Longest first: where two forms start at the same place, the whole of the longer one goes.
  const pattern = new RegExp(
    [...needles]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join('|'),
    'g',
  );
  return (text) => text.replace(pattern, REDACTED);
}

/** One scrubber per environment object, rebuilt only when its secret values change. */
const scrubbers = new WeakMap<object, { key: string; scrub: (text: string) => string }>();

/**
 * While {@link scrubDeep} walks one value: the scrubber of each environment, read once for all its
 * strings (reading the secret values reads every variable) and never kept past the walk.
 */
let heldScrubbers: Map<object, (text: string) => string> | undefined;

/** The scrubber of `env`'s secret values (see {@link scrubberFor}), built once per environment. */
export function secretScrubber(env: NodeJS.ProcessEnv): (text: string) => string {
  const held = heldScrubbers?.get(env);
  if (held) return held;
  const values = secretValues(env);
  const key = values.join('\0');
  const cached = scrubbers.get(env);
  const scrub = cached?.key === key ? cached.scrub : scrubberFor(values);
  if (cached?.key !== key) scrubbers.set(env, { key, scrub });
  heldScrubbers?.set(env, scrub);
  return scrub;
}

/** Replaces every secret value of `env` found in `text`, in plain or encoded form, with `[redacted]`. */
export function scrubSecrets(text: string, env: NodeJS.ProcessEnv): string {
  return secretScrubber(env)(text);
}

/**
 * Scrubs every string inside `value`, object keys included, without a trip through JSON text (where a
 * secret holding `"` or `\` would be escaped out of sight, and one that looks like JSON syntax would
 * break the parse). What is unchanged keeps its identity, so a clean result is not copied. Errors
 * become plain objects with scrubbed `message` and `stack`; a cycle becomes `"[circular]"`; other
 * non-plain objects (dates, buffers) are kept as they are.
 */
export function scrubDeep<T>(value: T, scrub: (text: string) => string): T {
  if (heldScrubbers) return walk(value, scrub, new Set()) as T;
  heldScrubbers = new Map();
  try {
    return walk(value, scrub, new Set()) as T;
  } finally {
    heldScrubbers = undefined;
  }
}

function walk(value: unknown, scrub: (text: string) => string, ancestors: Set<object>): unknown {
  if (typeof value === 'string') return scrub(value);
  if (value === null || typeof value !== 'object') return value;
  if (ancestors.has(value)) return '[circular]';
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const clean = walk(item, scrub, ancestors);
        if (!out && clean !== item) out = value.slice(0, i);
        out?.push(clean);
      }
      return out ?? value;
    }
    const isError = value instanceof Error;
    const proto = Object.getPrototypeOf(value) as unknown;
    if (!isError && proto !== Object.prototype && proto !== null) return value;
    const entries: [string, unknown][] = [];
    let changed = isError;
    if (isError)
      entries.push(['name', value.name], ['message', scrub(value.message)], ['stack', scrub(value.stack ?? '')]);
    for (const key of Object.keys(value)) {
      const item = (value as Record<string, unknown>)[key];
      const cleanKey = scrub(key);
      const clean = walk(item, scrub, ancestors);
      if (cleanKey !== key || clean !== item) changed = true;
      entries.push([cleanKey, clean]);
    }
    if (!changed) return value;
    const out = (isError ? {} : Object.create(proto as object | null)) as Record<string, unknown>;
    // defineProperty, not assignment: a key named "__proto__" must stay data, not become the prototype.
    for (const [key, item] of entries)
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    return out;
  } finally {
    ancestors.delete(value);
  }
}
