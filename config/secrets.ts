import { ConfigError, type ServerEntry } from './types.js';

/** Shape of an environment variable name (POSIX portable). */
export const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Names that look like credentials. A name is secret when its last `_`-separated part (or the whole
 * name) is one of these words, so `OPENAI_API_KEY`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`,
 * `PGPASSWORD` match while `NPM_TOKEN_FILE` or `DMCP_MAX_TOOL_RESULT_TOKENS` do not.
 */
const PROVIDER_KEY_RE = /(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$|PASSWORD$/;

/** Temporal and project credentials: never handed to a server, whatever DMCP_MCP_ENV says. */
const FIXED_SECRETS = new Set(['TEMPORAL_API_KEY', 'TEMPORAL_CODEC_AUTH', 'DMCP_ENCRYPTION_KEY']);
const FIXED_SECRET_PREFIXES = ['TEMPORAL_TLS_'];

/** Values shorter than this are not scrubbed: replacing "1" or "on" everywhere would garble text. */
const MIN_SCRUB_LENGTH = 4;

/** Why a variable name is secret, or undefined when it is not. Used in refusal messages. */
export type SecretKind = 'allow-listed' | 'provider-key' | 'credential';

/** Parses `DMCP_MCP_ENV` (comma- or whitespace-separated variable names); invalid names are dropped. */
export function allowedSecretNames(env: NodeJS.ProcessEnv): string[] {
  const raw = env.DMCP_MCP_ENV ?? '';
  const names = raw.split(/[\s,]+/).map((s) => s.trim()).filter((s) => ENV_NAME_RE.test(s));
  return [...new Set(names)];
}

/** Names in `DMCP_MCP_ENV` that are not valid variable names (reported as a warning by the loader). */
export function invalidAllowListNames(env: NodeJS.ProcessEnv): string[] {
  return (env.DMCP_MCP_ENV ?? '').split(/[\s,]+/).filter((s) => s !== '' && !ENV_NAME_RE.test(s));
}

/** Classifies a variable name as secret, or returns undefined. */
export function secretKind(name: string, env: NodeJS.ProcessEnv): SecretKind | undefined {
  if (allowedSecretNames(env).includes(name)) return 'allow-listed';
  const upper = name.toUpperCase();
  if (FIXED_SECRETS.has(upper) || FIXED_SECRET_PREFIXES.some((p) => upper.startsWith(p))) return 'credential';
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
      return `"${name}" looks like a credential (its name ends in KEY, TOKEN, SECRET, PASSWORD or CREDENTIALS)`;
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
      entry.source, undefined, field,
    );
  }
  const value = workerEnv[workerVar];
  if (value === undefined || value === '') {
    throw new ConfigError(
      `server "${entry.name}": ${field}: worker variable "${workerVar}" is not set on this worker`,
      entry.source, undefined, field,
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
      entry.source, undefined, 'bearerTokenEnv',
    );
  }
  return value;
}

/** The headers to send to an HTTP/SSE server: `headers` plus `Authorization: Bearer` from `bearerTokenEnv`. */
export function requestHeaders(entry: ServerEntry, workerEnv: NodeJS.ProcessEnv): Record<string, string> {
  const token = bearerToken(entry, workerEnv);
  return token === undefined ? { ...entry.headers } : { ...entry.headers, Authorization: `Bearer ${token}` };
}

/** Values of every secret variable set in `env` (length >= 4), longest first so overlaps scrub fully. */
export function secretValues(env: NodeJS.ProcessEnv): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && value.length >= MIN_SCRUB_LENGTH && isSecretName(name, env)) values.add(value);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/** Replaces every secret value of `env` found in `text` with `[redacted]`. */
export function scrubSecrets(text: string, env: NodeJS.ProcessEnv): string {
  let out = text;
  for (const value of secretValues(env)) out = out.split(value).join('[redacted]');
  return out;
}
