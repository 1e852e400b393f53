/**
 * The environment schema: how each variable is read, with its default and the error that names it.
 * `loadSettings` parses the environment with it and shapes the result into `Settings`.
 */
import { delimiter, isAbsolute, resolve, sep } from 'node:path';
import { z } from 'zod';
import { DEFAULT_DATA_DIR, DEFAULT_TASK_QUEUE } from '../contract/defaults.js';
import { TURN_LIMIT_RANGES } from '../contract/bounds.js';
import { SettingsError, clientMetadataUrlProblem, decodeKey32, parseDuration, parseFlag } from './valueParsers.js';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
const SDK_LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;

const port = (variable: string, fallback: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return fallback;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 65535) {
        ctx.addIssue({
          code: 'custom',
          message: `${variable} must be a port number (0-65535), got ${JSON.stringify(v)}`,
        });
        return z.NEVER;
      }
      return n;
    });

const text = (fallback: string) =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? fallback : v.trim()));

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

function oneOf<const T extends readonly string[]>(
  variable: string,
  values: T,
  fallback: T[number],
  normalize: (v: string) => string,
) {
  return z
    .string()
    .optional()
    .transform((v, ctx): T[number] => {
      if (v === undefined || v.trim() === '') return fallback;
      const n = normalize(v.trim());
      if ((values as readonly string[]).includes(n)) return n as T[number];
      ctx.addIssue({
        code: 'custom',
        message: `${variable} must be one of ${values.join(', ')}, got ${JSON.stringify(v)}`,
      });
      return z.NEVER;
    });
}

function wrap<T>(variable: string, parse: (v: string | undefined) => T) {
  return z
    .string()
    .optional()
    .transform((v, ctx): T => {
      try {
        return parse(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : `${variable}: ${String(err)}` });
        return z.NEVER;
      }
    });
}

const duration = (variable: string, fallback: string) =>
  wrap(variable, (v) => parseDuration(v === undefined || v.trim() === '' ? fallback : v, variable));
const flag = (variable: string, fallback: boolean) => wrap(variable, (v) => parseFlag(v, variable) ?? fallback);
const list = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(/[\s,]+/)
      .map((s) => s.trim())
      .filter(Boolean),
  );

/** A `:`-separated list of absolute folders (like PATH); unset or empty is `undefined`. */
const pathList = (variable: string) =>
  wrap(variable, (v) => {
    if (v === undefined || v.trim() === '') return undefined;
    const dirs = v
      .split(delimiter)
      .map((d) => d.trim())
      .filter(Boolean);
    const relative = dirs.filter((d) => !isAbsolute(d));
    if (relative.length > 0)
      throw new SettingsError(
        `${variable} must list absolute folders separated by "${delimiter}", got ${relative.map((d) => JSON.stringify(d)).join(', ')}`,
      );
    return dirs.map((d) => resolve(d));
  });
/** A `:`-separated list of absolute files or folders; unset or empty is `[]`. */
function absolutePaths(v: string | undefined, variable: string): string[] {
  const paths = (v ?? '')
    .split(delimiter)
    .map((p) => p.trim())
    .filter(Boolean);
  const relative = paths.filter((p) => !isAbsolute(p));
  if (relative.length > 0)
    throw new SettingsError(
      `${variable} must list absolute paths separated by "${delimiter}", got ${relative.map((p) => JSON.stringify(p)).join(', ')}`,
    );
  return paths.map((p) => resolve(p));
}

const optionalFlag = (variable: string) => wrap(variable, (v) => parseFlag(v, variable));

/** The environment schema: one entry per variable, named as it is written. */
export const envSchema = z.object({
  TEMPORAL_ADDRESS: optionalText,
  TEMPORAL_NAMESPACE: text('default'),
  DMCP_TASK_QUEUE: text(DEFAULT_TASK_QUEUE),
  DMCP_DATA_DIR: text(DEFAULT_DATA_DIR),
  DMCP_START_TIMEOUT: duration('DMCP_START_TIMEOUT', '10s'),
  DMCP_SESSION_IDLE: duration('DMCP_SESSION_IDLE', '10m'),
  DMCP_WARM_SPARES: wrap('DMCP_WARM_SPARES', (v) => {
    if (v === undefined || v.trim() === '') return 0;
    const n = Number(v);
    // Each spare is a whole server process per entry: a typo must not start hundreds.
    if (!/^\s*\d+\s*$/.test(v) || n > 16)
      throw new SettingsError(
        `DMCP_WARM_SPARES must be a whole number from 0 to 16 (spares per server), got ${JSON.stringify(v)}`,
      );
    return n;
  }),
  DMCP_TURN_IDLE: duration('DMCP_TURN_IDLE', '30m'),
  DMCP_INPUT_TIMEOUT: wrap('DMCP_INPUT_TIMEOUT', (v) => {
    const ms = parseDuration(v === undefined || v.trim() === '' ? '24h' : v, 'DMCP_INPUT_TIMEOUT');
    // The turn refuses limits out of this range: say so here, once, instead of in every turn.
    const { min, max } = TURN_LIMIT_RANGES.inputTimeoutMs;
    if (ms < min || ms > max)
      throw new SettingsError(`DMCP_INPUT_TIMEOUT must be from 1s to 30 days, got ${JSON.stringify(v)}`);
    return ms;
  }),
  DMCP_LEGACY_INPUT_TIMEOUT: wrap('DMCP_LEGACY_INPUT_TIMEOUT', (v) => {
    const ms = parseDuration(v === undefined || v.trim() === '' ? '10m' : v, 'DMCP_LEGACY_INPUT_TIMEOUT');
    const { min, max } = TURN_LIMIT_RANGES.legacyInputTimeoutMs;
    if (ms < min || ms > max)
      throw new SettingsError(
        `DMCP_LEGACY_INPUT_TIMEOUT must be from 1s to 6h (a connection is held while it waits), got ${JSON.stringify(v)}`,
      );
    return ms;
  }),
  DMCP_SHUTDOWN_GRACE: duration('DMCP_SHUTDOWN_GRACE', '30s'),
  DMCP_STICKY_WAIT: wrap('DMCP_STICKY_WAIT', (v) => {
    const ms = parseDuration(v === undefined || v.trim() === '' ? '500ms' : v, 'DMCP_STICKY_WAIT');
    // Below 100 ms a live worker's GC pause hands its turns to another worker, which replays them.
    if (ms < 100 || ms > 60_000)
      throw new SettingsError(`DMCP_STICKY_WAIT must be from 100ms to 60s, got ${JSON.stringify(v)}`);
    return ms;
  }),
  DMCP_DEPLOYMENT_NAME: optionalText,
  DMCP_BUILD_ID: optionalText,
  DMCP_FAST_PATH: flag('DMCP_FAST_PATH', true),
  DMCP_EAGER_CALLS: flag('DMCP_EAGER_CALLS', true),
  DMCP_SHARED_CALLS: flag('DMCP_SHARED_CALLS', true),
  DMCP_TOOL_PREFIX: oneOf('DMCP_TOOL_PREFIX', ['mcp', 'none'] as const, 'mcp', (v) => v.toLowerCase()),
  DMCP_LOG_LEVEL: oneOf('DMCP_LOG_LEVEL', LOG_LEVELS, 'info', (v) => v.toLowerCase()),
  DMCP_SDK_LOG_LEVEL: oneOf('DMCP_SDK_LOG_LEVEL', SDK_LOG_LEVELS, 'WARN', (v) => v.toUpperCase()),
  DMCP_ENCRYPTION_KEY: optionalText,
  DMCP_ENCRYPTION_KEYS_PREVIOUS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? '')
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean),
    ),
  DMCP_EXTERNAL_THRESHOLD_BYTES: wrap('DMCP_EXTERNAL_THRESHOLD_BYTES', (v) => {
    if (v === undefined || v.trim() === '') return 16 * 1024;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < 0)
      throw new SettingsError(
        `DMCP_EXTERNAL_THRESHOLD_BYTES must be a whole number of bytes, got ${JSON.stringify(v)}`,
      );
    return n;
  }),
  DMCP_PAYLOAD_STORE: z
    .string()
    .optional()
    .transform((v, ctx): 'fs' | 's3' | undefined => {
      if (v === undefined || v.trim() === '') return undefined;
      const n = v.trim().toLowerCase();
      if (n === 'fs' || n === 's3') return n;
      ctx.addIssue({ code: 'custom', message: `DMCP_PAYLOAD_STORE must be fs or s3, got ${JSON.stringify(v)}` });
      return z.NEVER;
    }),
  DMCP_S3_BUCKET: optionalText,
  DMCP_S3_PREFIX: text('durable-mcp/payloads/'),
  DMCP_S3_ENDPOINT: wrap('DMCP_S3_ENDPOINT', (v) => {
    if (v === undefined || v.trim() === '') return undefined;
    let url: URL;
    try {
      url = new URL(v.trim());
    } catch {
      throw new SettingsError(`DMCP_S3_ENDPOINT must be a URL such as http://127.0.0.1:7070, got ${JSON.stringify(v)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new SettingsError(`DMCP_S3_ENDPOINT must be an http or https URL, got ${JSON.stringify(v)}`);
    // Credentials belong in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, never in a URL that is logged.
    if (url.username || url.password)
      throw new SettingsError(
        'DMCP_S3_ENDPOINT must not hold credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead',
      );
    return v.trim();
  }),
  DMCP_S3_REGION: optionalText,
  AWS_REGION: optionalText,
  AWS_DEFAULT_REGION: optionalText,
  DMCP_S3_FORCE_PATH_STYLE: flag('DMCP_S3_FORCE_PATH_STYLE', false),
  DMCP_DEV_PORT: port('DMCP_DEV_PORT', 7233),
  DMCP_DEV_UI_PORT: port('DMCP_DEV_UI_PORT', 8233),
  DMCP_CODEC_PORT: port('DMCP_CODEC_PORT', 8234),
  DMCP_CODEC_TOKEN: optionalText,
  DMCP_MCP: flag('DMCP_MCP', true),
  DMCP_NO_USER_CONFIG: flag('DMCP_NO_USER_CONFIG', false),
  DMCP_WORKSPACE_MCP: flag('DMCP_WORKSPACE_MCP', false),
  DMCP_MCP_ENV: list,
  DMCP_ALLOWED_TOOLS: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.split(/[\s,]+/).filter(Boolean))),
  DMCP_DISALLOWED_TOOLS: list,
  DMCP_ALLOW_INLINE: optionalFlag('DMCP_ALLOW_INLINE'),
  DMCP_ALLOWED_CONFIG_DIRS: pathList('DMCP_ALLOWED_CONFIG_DIRS'),
  DMCP_WORKSPACE_ROOTS: pathList('DMCP_WORKSPACE_ROOTS'),
  DMCP_API_HOST: text('127.0.0.1'),
  DMCP_API_PORT: port('DMCP_API_PORT', 8235),
  DMCP_API_TOKENS: optionalText,
  DMCP_API_TOKENS_FILE: optionalText,
  DMCP_API_MAX_BODY: wrap('DMCP_API_MAX_BODY', (v) => {
    if (v === undefined || v.trim() === '') return 2 * 1024 * 1024;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < 1024)
      throw new SettingsError(
        `DMCP_API_MAX_BODY must be a whole number of bytes, at least 1024, got ${JSON.stringify(v)}`,
      );
    return n;
  }),
  DMCP_API_CALL_WAIT: duration('DMCP_API_CALL_WAIT', '30s'),
  DMCP_API_ALLOWED_HOSTS: wrap('DMCP_API_ALLOWED_HOSTS', (v) => {
    const hosts = (v ?? '')
      .split(/[\s,]+/)
      .map((h) => h.trim())
      .filter(Boolean);
    const bad = hosts.filter((h) => !/^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/.test(h));
    if (bad.length > 0)
      throw new SettingsError(
        `DMCP_API_ALLOWED_HOSTS must list host names, each with or without a port (api.example.com, api.example.com:8235), got ${bad.map((h) => JSON.stringify(h)).join(', ')}`,
      );
    return hosts;
  }),
  DMCP_API_ALLOWED_ORIGINS: wrap('DMCP_API_ALLOWED_ORIGINS', (v) => {
    const origins = (v ?? '')
      .split(/[\s,]+/)
      .map((o) => o.trim())
      .filter(Boolean);
    // An origin is what a browser sends: scheme, host and port, nothing after.
    const bad = origins.filter((o) => !/^https?:\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/.test(o));
    if (bad.length > 0)
      throw new SettingsError(
        `DMCP_API_ALLOWED_ORIGINS must list web origins (https://app.example.com, no path), got ${bad.map((o) => JSON.stringify(o)).join(', ')}`,
      );
    return origins;
  }),
  DMCP_DEBUG: flag('DMCP_DEBUG', false),
  DMCP_UNTRUSTED_STDIO: oneOf('DMCP_UNTRUSTED_STDIO', ['sandbox', 'refuse', 'allow'] as const, 'sandbox', (v) =>
    v.toLowerCase(),
  ),
  DMCP_BWRAP: text('bwrap'),
  DMCP_SANDBOX_HIDE: wrap('DMCP_SANDBOX_HIDE', (v) => {
    const paths = absolutePaths(v, 'DMCP_SANDBOX_HIDE');
    if (paths.includes(sep))
      throw new SettingsError(
        `DMCP_SANDBOX_HIDE cannot hide / (a sandbox needs the root to run anything), got ${JSON.stringify(v)}`,
      );
    return paths;
  }),
  DMCP_METRICS_PORT: wrap('DMCP_METRICS_PORT', (v) => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = Number(v);
    if (!/^\s*\d+\s*$/.test(v) || n > 65535)
      throw new SettingsError(`DMCP_METRICS_PORT must be a port number (0-65535), got ${JSON.stringify(v)}`);
    return n;
  }),
  DMCP_METRICS_HOST: text('127.0.0.1'),
  DMCP_OAUTH_DIR: optionalText,
  DMCP_OAUTH_KEY: wrap('DMCP_OAUTH_KEY', (v) => {
    if (v === undefined || v.trim() === '') return undefined;
    decodeKey32(v, 'DMCP_OAUTH_KEY');
    return v.trim();
  }),
  DMCP_OAUTH_KEYS_PREVIOUS: wrap('DMCP_OAUTH_KEYS_PREVIOUS', (v) => {
    const keys = (v ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean);
    keys.forEach((k, i) => decodeKey32(k, `DMCP_OAUTH_KEYS_PREVIOUS (key #${i + 1})`));
    return keys;
  }),
  DMCP_OAUTH_CALLBACK_PORT: port('DMCP_OAUTH_CALLBACK_PORT', 8788),
  DMCP_OAUTH_CLIENT_METADATA_URL: wrap('DMCP_OAUTH_CLIENT_METADATA_URL', (v) => {
    if (v === undefined || v.trim() === '') return undefined;
    const problem = clientMetadataUrlProblem(v.trim());
    if (problem)
      throw new SettingsError(`DMCP_OAUTH_CLIENT_METADATA_URL ${problem}, got ${JSON.stringify(v.slice(0, 200))}`);
    return v.trim();
  }),
});

/** The parsed variables, before `loadSettings` groups them. */
export type EnvValues = z.infer<typeof envSchema>;
