/**
 * Every `DMCP_*` and `TEMPORAL_*` variable the processes read, parsed once with its default and its
 * error. The CLI and the worker call `loadSettings(process.env)` at their edge and hand the parts
 * down; library code (client, shaping, pool) takes options and never reads `process.env`.
 *
 * Config layers (`config/`) still receive the environment itself, because `mcp.json` expands
 * variables from it; the switches they read are parsed with the same rules as here (`parseFlag`).
 * `dev/` finds the `temporal` binary from DMCP_TEMPORAL_CLI and PATH itself, because it also runs
 * at install time, before any setting matters.
 *
 * Each variable read here or by those exceptions is documented in `variables.ts` (a unit test holds
 * the two together); docs/configuration.md's table is rendered from it.
 */
import { delimiter, isAbsolute, join, resolve, sep } from 'node:path';
import { z } from 'zod';
import { shapeLimitsFromEnv } from './shapeLimits.js';
import type { ShapeLimits } from '../shaping/index.js';
import { CONFIG_DIR_NAME, DEFAULT_DATA_DIR, DEFAULT_TASK_QUEUE, DataDirEntry } from '../contract/defaults.js';
import { TURN_LIMIT_RANGES } from '../contract/bounds.js';

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

/** The config loader's switches and its trusted folder: parsed here, read by `config/` and `governance/`. */
export interface ConfigSettings {
  /** DMCP_MCP=false turns MCP off. */
  mcpOff: boolean;
  /** DMCP_NO_USER_CONFIG=1 skips the config-dir layer. */
  noUserConfig: boolean;
  /** DMCP_WORKSPACE_MCP=true reads `<workspace>/.agents/mcp.json`. */
  workspaceMcp: boolean;
  /** The trusted config dir: DMCP_CONFIG_DIR, else $XDG_CONFIG_HOME/durable-mcp, else ~/.config/durable-mcp. */
  configDir?: string;
}

/**
 * The config switches of `env`. Cheap, and called by the loader each turn with the environment it
 * was given (a worker's own, or one a test or `run`'s pre-check made), so they are never stale.
 * @throws SettingsError naming a switch whose value is not a flag.
 */
export function configSettings(env: Env): ConfigSettings {
  return {
    mcpOff: parseFlag(env.DMCP_MCP, 'DMCP_MCP') === false,
    noUserConfig: parseFlag(env.DMCP_NO_USER_CONFIG, 'DMCP_NO_USER_CONFIG') === true,
    workspaceMcp: parseFlag(env.DMCP_WORKSPACE_MCP, 'DMCP_WORKSPACE_MCP') === true,
    ...optional('configDir', configDirOf(env)),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function configDirOf(env: Env): string | undefined {
  if (env.DMCP_CONFIG_DIR) return env.DMCP_CONFIG_DIR;
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  if (env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)) return join(env.XDG_CONFIG_HOME, CONFIG_DIR_NAME);
  if (env.HOME) return join(env.HOME, '.config', CONFIG_DIR_NAME);
  return undefined;
}

/** The entries of DMCP_MCP_ENV (comma- or whitespace-separated), as written: the config room checks each is a variable name. */
export function mcpEnvEntries(env: Env): string[] {
  return (env.DMCP_MCP_ENV ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
export type SdkLogLevel = 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

/** Everything the processes of one deployment are told through their environment. */
export interface Settings {
  temporal: {
    /** TEMPORAL_ADDRESS; unset means the embedded dev server (or a running `durable-mcp dev`). */
    address?: string;
    /** TEMPORAL_NAMESPACE, default `default`. */
    namespace: string;
  };
  /** DMCP_TASK_QUEUE, default `durable-mcp`. */
  taskQueue: string;
  /** DMCP_DATA_DIR (absolute), default `./.data`: dev-server database, payload store, dev state. */
  dataDir: string;
  /** DMCP_START_TIMEOUT, default 10 s: per server, start + handshake + first listing. */
  startTimeoutMs: number;
  /** DMCP_SESSION_IDLE, default 10 min: an unused session's servers stop. */
  sessionIdleMs: number;
  /**
   * DMCP_WARM_SPARES, default 0 (off): started spare processes kept per trusted stdio entry (config
   * dir, explicit files, inline specs), so a new session's first turn takes a ready server.
   */
  warmSpares: number;
  /** DMCP_TURN_IDLE, default 30 min: an interactive turn with no call ends itself. */
  turnIdleMs: number;
  /** DMCP_INPUT_TIMEOUT, default 24 h: how long a call waits for a person's answers to its input requests. */
  inputTimeoutMs: number;
  /**
   * DMCP_LEGACY_INPUT_TIMEOUT, default 10 min (1 s to 6 h): how long one attempt of a call to a
   * 2025-era server waits in all for a person's answers; the call holds its connection meanwhile.
   */
  legacyInputTimeoutMs: number;
  /** DMCP_SHUTDOWN_GRACE, default 30 s: running calls may finish on worker shutdown. */
  shutdownGraceMs: number;
  /**
   * DMCP_STICKY_WAIT, default 500 ms (100 ms to 60 s): how long a turn's next workflow task waits for the
   * worker that holds the turn in its cache before another worker takes it and replays the turn.
   */
  stickyWaitMs: number;
  /**
   * DMCP_DEPLOYMENT_NAME and DMCP_BUILD_ID, both or neither: the Temporal worker deployment version
   * the worker runs as; unset, the worker is unversioned.
   */
  deployment?: { name: string; buildId: string };
  /**
   * DMCP_FAST_PATH, default true: a retry-safe call runs first as a local activity when the worker
   * running the turn holds the session's servers; false: every call is a regular activity.
   */
  fastPath: boolean;
  /**
   * DMCP_EAGER_CALLS, default true: a side-effecting call goes to the shared queue for eager
   * dispatch to the worker running the turn when that worker holds the session's servers (the
   * Temporal server needs `system.enableActivityEagerExecution`); false: to the holder's own queue.
   */
  eagerCalls: boolean;
  /** DMCP_TOOL_PREFIX: `mcp` (default, `mcp__server__tool`) or `none` (`server__tool`). */
  toolPrefix: 'mcp' | 'none';
  /** DMCP_LOG_LEVEL, default `info` (pino levels). */
  logLevel: LogLevel;
  /** DMCP_SDK_LOG_LEVEL, default `WARN`: the Temporal SDK runtime's own log level. */
  sdkLogLevel: SdkLogLevel;
  payloads: {
    /** DMCP_ENCRYPTION_KEY: 32 bytes (base64 or hex); unset means compression only. */
    encryptionKey?: string;
    /** DMCP_ENCRYPTION_KEYS_PREVIOUS: comma-separated older keys, still accepted for decoding. */
    previousEncryptionKeys: string[];
    /** DMCP_EXTERNAL_THRESHOLD_BYTES, default 16 KiB: larger payloads go to the payload store. */
    externalThresholdBytes: number;
    /**
     * The S3-compatible payload store every worker and client of a cluster reads; present only when
     * DMCP_PAYLOAD_STORE is `s3` (the default once DMCP_S3_BUCKET is set). Absent: files under the data dir.
     */
    s3?: S3StoreSettings;
  };
  dev: {
    /** DMCP_DEV_PORT, default 7233. */
    port: number;
    /** DMCP_DEV_UI_PORT, default 8233. */
    uiPort: number;
    /** DMCP_CODEC_PORT, default 8234. */
    codecPort: number;
    /**
     * DMCP_CODEC_TOKEN: when set, the codec server answers only requests with
     * `Authorization: Bearer <it>` (CLI and API clients; the dev server's UI cannot send one).
     */
    codecToken?: string;
  };
  /** What the model sees of a call: DMCP_MAX_TOOL_RESULT_TOKENS, DMCP_MAX_IMAGE_BYTES, ... */
  shape: ShapeLimits;
  /** Config-layer switches and the config dir ({@link configSettings}), and DMCP_MCP_ENV: worker variables servers may receive. */
  config: ConfigSettings & { mcpEnv: string[] };
  /**
   * What a worker honours of a turn's references. Unset values take the default of the command
   * that starts the worker (`run`/`dev` trust their own caller; `worker` joined to a cluster does not).
   */
  /** Allowed-tools rules of this worker (matchers on public tool names; checked by `governance/`). */
  governance: {
    /** DMCP_ALLOWED_TOOLS: only these tools may be listed and called; unset: no allow list. */
    allowedTools?: string[];
    /** DMCP_DISALLOWED_TOOLS: these tools never are; a deny always wins. */
    disallowedTools: string[];
  };
  boundary: {
    /** DMCP_ALLOW_INLINE: whether inline `--mcp` specs are honoured. */
    allowInline?: boolean;
    /** DMCP_ALLOWED_CONFIG_DIRS: the folders `--mcp-config` files and plugin folders must lie in (after symlinks). */
    allowedConfigDirs?: string[];
    /** DMCP_WORKSPACE_ROOTS: the folders a turn's workspace must lie in for the workspace layer to be read. */
    workspaceRoots?: string[];
  };
  /** The HTTP API (`durable-mcp api`). */
  api: {
    /** DMCP_API_HOST, default 127.0.0.1. */
    host: string;
    /** DMCP_API_PORT, default 8235. */
    port: number;
    /**
     * DMCP_API_TOKENS: bearer tokens, stored hashed: entries `sha256:<hex> <session-prefix>,...`
     * separated by `;` or newlines (parsed by the API, which names a bad entry). Unset, with no
     * DMCP_API_TOKENS_FILE: the API serves with the token in `<DMCP_DATA_DIR>/api.token`, created 0600.
     */
    tokens?: string;
    /** DMCP_API_TOKENS_FILE: a file of such entries, one a line (`#` starts a comment). */
    tokensFile?: string;
    /**
     * DMCP_API_ALLOWED_HOSTS: `Host` names (with or without a port) served besides loopback ones.
     * Unset: an API listening on loopback serves only loopback names (a DNS-rebound name is refused).
     */
    allowedHosts?: string[];
    /** DMCP_API_ALLOWED_ORIGINS: web origins (`https://app.example`) served besides loopback ones and the API's own. */
    allowedOrigins?: string[];
    /** DMCP_API_MAX_BODY, default 2 MiB: larger request bodies get 413. */
    maxBodyBytes: number;
    /** DMCP_API_CALL_WAIT, default 30 s: how long a call request waits for its outcome before answering 202. */
    callWaitMs: number;
  };
  /** DMCP_DEBUG: stack traces on CLI errors. */
  debug: boolean;
  /**
   * The DMCP_* variables the environment set (not empty): a command whose own default differs from
   * the documented one (a quieter log, no warm spares) applies it only when the operator set none.
   */
  given: ReadonlySet<string>;
  /** Stdio servers of untrusted layers (workspace, plugins). */
  untrustedStdio: {
    /**
     * DMCP_UNTRUSTED_STDIO, default `sandbox`: run them under bubblewrap (refused where it does not
     * work); `refuse`: never run them; `allow`: run them unsandboxed, like trusted servers.
     */
    mode: 'sandbox' | 'refuse' | 'allow';
    /** DMCP_BWRAP, default `bwrap` (looked up on PATH): the bubblewrap binary. */
    bwrap: string;
    /**
     * DMCP_SANDBOX_HIDE: `:`-separated absolute files and folders the sandbox hides besides those the
     * worker's own settings name and its home; empty by default.
     */
    hide: string[];
  };
  /** OAuth logins of shelf servers (`durable-mcp mcp login`): where the tokens live and their key. */
  oauth: {
    /** DMCP_OAUTH_DIR (absolute), default `<DMCP_DATA_DIR>/oauth`: one encrypted file per login, 0600 in a 0700 folder. */
    dir: string;
    /** DMCP_OAUTH_KEY: 32 bytes (64 hex digits or base64) encrypting the token files; unset: `<DMCP_DATA_DIR>/oauth.key`, created 0600. */
    key?: string;
    /** DMCP_OAUTH_KEYS_PREVIOUS: comma-separated older keys, still accepted for reading (key rotation). */
    previousKeys: string[];
    /** DMCP_OAUTH_CALLBACK_PORT, default 8788: the loopback port `mcp login` waits on for the browser's redirect. */
    callbackPort: number;
    /**
     * DMCP_OAUTH_CLIENT_METADATA_URL: an https address with a path where the operator hosts the
     * client's metadata document (`durable-mcp mcp client-metadata` prints it); used as the client
     * ID by authorization servers that accept metadata documents. Unset: dynamic registration.
     */
    clientMetadataUrl?: string;
  };
  /** Prometheus metrics of the worker (calls, servers, the Temporal SDK's own). */
  metrics: {
    /** DMCP_METRICS_PORT: where `/metrics` is served; unset: no metrics. 0 picks a free port. */
    port?: number;
    /** DMCP_METRICS_HOST, default `127.0.0.1`: the address the metrics port binds. */
    host: string;
  };
}

/** Where the S3 payload store is; credentials come from the AWS SDK's usual sources (AWS_ACCESS_KEY_ID, ...). */
export interface S3StoreSettings {
  /** DMCP_S3_BUCKET (required). */
  bucket: string;
  /** DMCP_S3_PREFIX, default `durable-mcp/payloads/`: keys are `<prefix><sha256>.bin`. */
  prefix: string;
  /** DMCP_S3_ENDPOINT: an S3-compatible server's URL; unset: AWS S3. */
  endpoint?: string;
  /** DMCP_S3_REGION, else AWS_REGION, else AWS_DEFAULT_REGION, else `us-east-1`. */
  region: string;
  /** DMCP_S3_FORCE_PATH_STYLE, default false: `<endpoint>/<bucket>/<key>` instead of `<bucket>.<endpoint>/<key>`. */
  forcePathStyle: boolean;
}

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
const envSchema = z.object({
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

/** The worker deployment version: DMCP_DEPLOYMENT_NAME and DMCP_BUILD_ID mean nothing one without the other. */
function deploymentFrom(e: { DMCP_DEPLOYMENT_NAME?: string; DMCP_BUILD_ID?: string }): Settings['deployment'] {
  const name = e.DMCP_DEPLOYMENT_NAME?.trim();
  const buildId = e.DMCP_BUILD_ID?.trim();
  if (name && buildId) return { name, buildId };
  if (!name && !buildId) return undefined;
  const [given, missing] = name ? ['DMCP_DEPLOYMENT_NAME', 'DMCP_BUILD_ID'] : ['DMCP_BUILD_ID', 'DMCP_DEPLOYMENT_NAME'];
  throw new SettingsError(
    `${given} is ${JSON.stringify(name || buildId)} but ${missing} is unset: set both (the worker deployment version) or neither`,
  );
}

/**
 * Reads every setting from `env`. Unset or empty variables take their defaults.
 * @throws SettingsError naming each variable whose value cannot be used.
 */
export function loadSettings(env: Env): Settings {
  const parsed = envSchema.safeParse(pick(env));
  let shape: ShapeLimits | undefined;
  const problems: string[] = [];
  if (!parsed.success) problems.push(...parsed.error.issues.map((i) => i.message));
  try {
    shape = shapeLimitsFromEnv(env);
  } catch (err) {
    problems.push((err as Error).message);
  }
  let s3: S3StoreSettings | undefined;
  if (parsed.success) {
    try {
      s3 = s3StoreFrom(parsed.data);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  let deployment: Settings['deployment'];
  if (parsed.success) {
    try {
      deployment = deploymentFrom(parsed.data);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (!parsed.success || !shape || problems.length > 0) throw new SettingsError(problems.join('; '));
  const e = parsed.data;
  return {
    temporal: { address: e.TEMPORAL_ADDRESS, namespace: e.TEMPORAL_NAMESPACE },
    taskQueue: e.DMCP_TASK_QUEUE,
    dataDir: resolve(e.DMCP_DATA_DIR),
    startTimeoutMs: e.DMCP_START_TIMEOUT,
    sessionIdleMs: e.DMCP_SESSION_IDLE,
    warmSpares: e.DMCP_WARM_SPARES,
    turnIdleMs: e.DMCP_TURN_IDLE,
    inputTimeoutMs: e.DMCP_INPUT_TIMEOUT,
    legacyInputTimeoutMs: e.DMCP_LEGACY_INPUT_TIMEOUT,
    shutdownGraceMs: e.DMCP_SHUTDOWN_GRACE,
    stickyWaitMs: e.DMCP_STICKY_WAIT,
    ...(deployment ? { deployment } : {}),
    fastPath: e.DMCP_FAST_PATH,
    eagerCalls: e.DMCP_EAGER_CALLS,
    toolPrefix: e.DMCP_TOOL_PREFIX,
    logLevel: e.DMCP_LOG_LEVEL,
    sdkLogLevel: e.DMCP_SDK_LOG_LEVEL,
    payloads: {
      encryptionKey: e.DMCP_ENCRYPTION_KEY,
      previousEncryptionKeys: e.DMCP_ENCRYPTION_KEYS_PREVIOUS,
      externalThresholdBytes: e.DMCP_EXTERNAL_THRESHOLD_BYTES,
      ...(s3 ? { s3 } : {}),
    },
    dev: {
      port: e.DMCP_DEV_PORT,
      uiPort: e.DMCP_DEV_UI_PORT,
      codecPort: e.DMCP_CODEC_PORT,
      ...(e.DMCP_CODEC_TOKEN ? { codecToken: e.DMCP_CODEC_TOKEN.trim() } : {}),
    },
    shape,
    config: { ...configSettings(env), mcpEnv: e.DMCP_MCP_ENV },
    governance: { allowedTools: e.DMCP_ALLOWED_TOOLS, disallowedTools: e.DMCP_DISALLOWED_TOOLS },
    boundary: {
      allowInline: e.DMCP_ALLOW_INLINE,
      allowedConfigDirs: e.DMCP_ALLOWED_CONFIG_DIRS,
      workspaceRoots: e.DMCP_WORKSPACE_ROOTS,
    },
    api: {
      host: e.DMCP_API_HOST,
      port: e.DMCP_API_PORT,
      ...(e.DMCP_API_TOKENS ? { tokens: e.DMCP_API_TOKENS } : {}),
      ...(e.DMCP_API_TOKENS_FILE ? { tokensFile: resolve(e.DMCP_API_TOKENS_FILE.trim()) } : {}),
      maxBodyBytes: e.DMCP_API_MAX_BODY,
      callWaitMs: e.DMCP_API_CALL_WAIT,
      ...(e.DMCP_API_ALLOWED_HOSTS.length ? { allowedHosts: e.DMCP_API_ALLOWED_HOSTS } : {}),
      ...(e.DMCP_API_ALLOWED_ORIGINS.length ? { allowedOrigins: e.DMCP_API_ALLOWED_ORIGINS } : {}),
    },
    debug: e.DMCP_DEBUG,
    given: new Set(Object.keys(env).filter((k) => k.startsWith('DMCP_') && (env[k] ?? '').trim() !== '')),
    untrustedStdio: { mode: e.DMCP_UNTRUSTED_STDIO, bwrap: e.DMCP_BWRAP, hide: e.DMCP_SANDBOX_HIDE },
    metrics: { ...(e.DMCP_METRICS_PORT !== undefined ? { port: e.DMCP_METRICS_PORT } : {}), host: e.DMCP_METRICS_HOST },
    oauth: {
      dir: e.DMCP_OAUTH_DIR ? resolve(e.DMCP_OAUTH_DIR.trim()) : resolve(e.DMCP_DATA_DIR, DataDirEntry.oauthDir),
      ...(e.DMCP_OAUTH_KEY ? { key: e.DMCP_OAUTH_KEY } : {}),
      previousKeys: e.DMCP_OAUTH_KEYS_PREVIOUS,
      callbackPort: e.DMCP_OAUTH_CALLBACK_PORT,
      ...(e.DMCP_OAUTH_CLIENT_METADATA_URL ? { clientMetadataUrl: e.DMCP_OAUTH_CLIENT_METADATA_URL } : {}),
    },
  };
}

/** The S3 store when DMCP_PAYLOAD_STORE asks for it (or DMCP_S3_BUCKET implies it); undefined for the filesystem store. */
function s3StoreFrom(e: z.infer<typeof envSchema>): S3StoreSettings | undefined {
  const store = e.DMCP_PAYLOAD_STORE ?? (e.DMCP_S3_BUCKET ? 's3' : 'fs');
  if (store === 'fs') return undefined;
  if (!e.DMCP_S3_BUCKET)
    throw new SettingsError('DMCP_PAYLOAD_STORE=s3 needs DMCP_S3_BUCKET (the bucket every worker and client shares)');
  const bucket = e.DMCP_S3_BUCKET.trim();
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    throw new SettingsError(
      `DMCP_S3_BUCKET must be an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens), got ${JSON.stringify(bucket)}`,
    );
  const prefix = e.DMCP_S3_PREFIX.replace(/^\/+/, '');
  return {
    bucket,
    prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`,
    ...(e.DMCP_S3_ENDPOINT ? { endpoint: e.DMCP_S3_ENDPOINT } : {}),
    region: (e.DMCP_S3_REGION ?? e.AWS_REGION ?? e.AWS_DEFAULT_REGION ?? 'us-east-1').trim(),
    forcePathStyle: e.DMCP_S3_FORCE_PATH_STYLE,
  };
}

/** Only the variables the schema knows, so the rest of the environment never enters parsing. */
function pick(env: Env): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const key of Object.keys(envSchema.shape)) out[key] = env[key];
  return out;
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

/** Where the payload store lives under the data dir. */
export function payloadDir(settings: Pick<Settings, 'dataDir'>): string {
  return resolve(settings.dataDir, DataDirEntry.payloads);
}
