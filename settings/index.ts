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
import { resolve } from 'node:path';
import { shapeLimitsFromEnv } from './shapeLimits.js';
import type { ShapeLimits } from '../shaping/index.js';
import { DataDirEntry } from '../contract/defaults.js';
import { envSchema, type EnvValues } from './envSchema.js';
import { configSettings } from './configSwitches.js';
import { SettingsError, type Env } from './valueParsers.js';
import type { S3StoreSettings, Settings } from './types.js';

export { SettingsError, clientMetadataUrlProblem, decodeKey32, parseDuration, parseFlag } from './valueParsers.js';
export type { Env } from './valueParsers.js';
export { configSettings, mcpEnvEntries, type ConfigSettings } from './configSwitches.js';
export type { LogLevel, S3StoreSettings, SdkLogLevel, Settings } from './types.js';

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
    sharedCalls: e.DMCP_SHARED_CALLS,
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
function s3StoreFrom(e: EnvValues): S3StoreSettings | undefined {
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

/** Where the payload store lives under the data dir. */
export function payloadDir(settings: Pick<Settings, 'dataDir'>): string {
  return resolve(settings.dataDir, DataDirEntry.payloads);
}
