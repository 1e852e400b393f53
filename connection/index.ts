/**
 * Where a worker, client or CLI command connects, read the way every Temporal tool reads it
 * (`@temporalio/envconfig`): a TOML profile (TEMPORAL_CONFIG_FILE, else
 * `$XDG_CONFIG_HOME/temporalio/temporal.toml`; TEMPORAL_PROFILE, else `default`), overridden by
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH
 * (or _DATA), TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA), TEMPORAL_TLS_SERVER_CA_CERT_PATH (or _DATA),
 * TEMPORAL_TLS_SERVER_NAME and TEMPORAL_GRPC_META_*. The same command then reaches the dev server,
 * an mTLS cluster and Temporal Cloud.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import {
  loadClientConfig,
  loadClientConfigProfile,
  type ClientConfigProfile,
  type ConfigDataSource,
} from '@temporalio/envconfig';
import type { Env } from '../settings/index.js';

/** A connection setting that cannot be used: names the variable or the file and field. */
export class ConnectionConfigError extends Error {
  override name = 'ConnectionConfigError';
}

/** TLS as both `Connection.connect` and `NativeConnection.connect` take it. */
export interface ConnectionTls {
  /** TEMPORAL_TLS_SERVER_NAME: the name the server's certificate must carry, when it is not the address's host. */
  serverNameOverride?: string;
  /** TEMPORAL_TLS_SERVER_CA_CERT_PATH (or _DATA): the CA that signed the server's certificate (default: the system's roots). */
  serverRootCACertificate?: Buffer;
  /** TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA): the client's certificate and key, for mTLS. */
  clientCertPair?: { crt: Buffer; key: Buffer };
}

/** What `Connection.connect` / `NativeConnection.connect` need besides the address. */
export interface ConnectionOptions {
  /** `true`: TLS with the system's roots (what an API key implies); an object: mTLS or a private CA. */
  tls?: ConnectionTls | boolean;
  /** TEMPORAL_API_KEY: sent as `Authorization: Bearer`, never logged. */
  apiKey?: string;
  /** TEMPORAL_GRPC_META_* and the profile's `grpc_meta`. */
  metadata?: Record<string, string>;
}

/** A resolved connection target. */
export interface TemporalTarget {
  /** Undefined when neither TEMPORAL_ADDRESS nor the profile names a server (the embedded default then applies). */
  address?: string;
  /** TEMPORAL_NAMESPACE, else the profile's, else `default`. */
  namespace: string;
  /** Whether TEMPORAL_NAMESPACE or the profile chose the namespace (a running `dev`'s otherwise applies). */
  namespaceExplicit: boolean;
  /** TLS, API key and gRPC metadata to connect with (empty: plaintext). */
  options: ConnectionOptions;
  /** Where the settings came from and what kind of security they use; never a secret. */
  summary: string;
}

/** The config file envconfig reads for `env` (whether or not it exists). */
export function configFilePath(env: Env): string | undefined {
  if (env.TEMPORAL_CONFIG_FILE) return env.TEMPORAL_CONFIG_FILE;
  const base =
    env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)
      ? env.XDG_CONFIG_HOME
      : env.HOME
        ? join(env.HOME, '.config')
        : undefined;
  return base ? join(base, 'temporalio', 'temporal.toml') : undefined;
}

/**
 * The files the connection settings of `env` name (absolute): the TOML config file, the TLS files of
 * the TEMPORAL_TLS_*_PATH variables, and those of every profile in the file (not only the one in
 * use: each is a credential of this host). A file that cannot be parsed names no more paths;
 * {@link resolveTemporalTarget} is what reports it.
 */
export function connectionFilePaths(env: Env): string[] {
  const paths = [
    configFilePath(env),
    env.TEMPORAL_TLS_CLIENT_CERT_PATH,
    env.TEMPORAL_TLS_CLIENT_KEY_PATH,
    env.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
  ];
  try {
    const { profiles } = loadClientConfig({ overrideEnvVars: stringsOnly(env) });
    for (const { tls } of Object.values(profiles)) {
      for (const source of [tls?.clientCert, tls?.clientKey, tls?.serverCACert])
        if (source && 'path' in source) paths.push(source.path);
    }
  } catch {
    // No file, or one resolveTemporalTarget refuses: the paths above are all it names.
  }
  return [...new Set(paths.filter((p): p is string => Boolean(p?.trim())).map((p) => resolve(p.trim())))];
}

/** Only string values: envconfig walks the whole map (TEMPORAL_GRPC_META_*). */
function stringsOnly(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === 'string') out[k] = v;
  return out;
}

/** The variable that set a TLS field, or where in the file it came from. */
function origin(env: Env, variables: string[], field: string, where: string): string {
  const v = variables.find((name) => env[name] !== undefined);
  return v ? v : `tls.${field} of ${where}`;
}

function readSource(source: ConfigDataSource | undefined, what: string, from: string): Buffer | undefined {
  if (!source) return undefined;
  if ('data' in source) return Buffer.from(source.data);
  try {
    return readFileSync(source.path);
  } catch (err) {
    throw new ConnectionConfigError(
      `${what} ${source.path} (from ${from}) cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/**
 * Reads the connection settings from `env` (and the TOML file it points at).
 * @throws ConnectionConfigError naming the variable, or the file and field, that cannot be used.
 */
export function resolveTemporalTarget(env: Env): TemporalTarget {
  const file = configFilePath(env);
  if (env.TEMPORAL_CONFIG_FILE !== undefined) {
    try {
      readFileSync(env.TEMPORAL_CONFIG_FILE);
    } catch (err) {
      throw new ConnectionConfigError(
        `TEMPORAL_CONFIG_FILE=${env.TEMPORAL_CONFIG_FILE} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }
  const profileName = env.TEMPORAL_PROFILE?.trim() || 'default';
  const where = `profile "${profileName}" in ${file ?? 'the Temporal config file'}`;
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: stringsOnly(env), configFileStrict: true });
  } catch (err) {
    const message = (err as Error).message;
    if (/Profile '.*' not found/.test(message)) {
      const present = file !== undefined && existsSync(file);
      throw new ConnectionConfigError(
        present
          ? `TEMPORAL_PROFILE=${profileName}: no such profile in ${file}`
          : `TEMPORAL_PROFILE=${profileName}: there is no Temporal config file${file ? ` (looked for ${file})` : ''}; set TEMPORAL_CONFIG_FILE`,
      );
    }
    // A file without any [profile.<name>] table makes envconfig index into nothing.
    if (err instanceof TypeError)
      throw new ConnectionConfigError(`${file ?? 'Temporal config file'}: expected [profile.${profileName}] tables`);
    throw new ConnectionConfigError(`${file ?? 'Temporal config file'}: ${message.replace(/^Validation error: /, '')}`);
  }

  let tls: ConnectionTls | boolean | undefined;
  const t = profile.tls;
  if (t) {
    const certFrom = origin(
      env,
      ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_CERT_DATA'],
      'client_cert_path',
      where,
    );
    const keyFrom = origin(
      env,
      ['TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_CLIENT_KEY_DATA'],
      'client_key_path',
      where,
    );
    const caFrom = origin(
      env,
      ['TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_DATA'],
      'server_ca_cert_path',
      where,
    );
    if (Boolean(t.clientCert) !== Boolean(t.clientKey)) {
      throw new ConnectionConfigError(
        t.clientCert
          ? `a TLS client certificate is set (${certFrom}) without its key: set TEMPORAL_TLS_CLIENT_KEY_PATH`
          : `a TLS client key is set (${keyFrom}) without its certificate: set TEMPORAL_TLS_CLIENT_CERT_PATH`,
      );
    }
    if (t.disabled === true) {
      tls = false;
    } else {
      const crt = readSource(t.clientCert, 'TLS client certificate', certFrom);
      const key = readSource(t.clientKey, 'TLS client key', keyFrom);
      const ca = readSource(t.serverCACert, 'TLS server CA certificate', caFrom);
      tls = {
        ...(t.serverName ? { serverNameOverride: t.serverName } : {}),
        ...(ca ? { serverRootCACertificate: ca } : {}),
        ...(crt && key ? { clientCertPair: { crt, key } } : {}),
      };
    }
  }
  // An API key alone means TLS with the system's roots, as envconfig and Temporal Cloud expect.
  if (tls === undefined && profile.apiKey !== undefined) tls = true;
  const options: ConnectionOptions = {
    ...(tls !== undefined ? { tls } : {}),
    ...(profile.apiKey ? { apiKey: profile.apiKey } : {}),
    ...(profile.grpcMeta && Object.keys(profile.grpcMeta).length > 0 ? { metadata: { ...profile.grpcMeta } } : {}),
  };
  const address = profile.address?.trim() || undefined;
  if (address && !/^[^\s/]+:\d+$/.test(address)) {
    throw new ConnectionConfigError(
      `${env.TEMPORAL_ADDRESS !== undefined ? 'TEMPORAL_ADDRESS' : `address of ${where}`} must be host:port, got ${JSON.stringify(address)}`,
    );
  }
  return {
    address,
    namespace: profile.namespace?.trim() || 'default',
    namespaceExplicit: Boolean(profile.namespace?.trim()),
    options,
    summary: describeTarget(
      address,
      options,
      env.TEMPORAL_ADDRESS === undefined && address !== undefined ? where : undefined,
    ),
  };
}

/** One line for logs and errors: address, kind of security, source. No key, certificate or header value. */
export function describeTarget(address: string | undefined, options: ConnectionOptions, profile?: string): string {
  const security =
    options.tls === undefined || options.tls === false
      ? 'plaintext'
      : options.tls === true
        ? 'TLS'
        : options.tls.clientCertPair
          ? 'mTLS'
          : 'TLS';
  const parts = [address ?? '(no address)', security];
  if (options.apiKey) parts.push('API key');
  if (profile) parts.push(`from ${profile}`);
  return parts.join(', ');
}

/** Whether a server refused a call for lack of rights (or of credentials). */
export function permissionDenied(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  // gRPC PERMISSION_DENIED (7) and UNAUTHENTICATED (16).
  return (
    code === 7 ||
    code === 16 ||
    /PERMISSION_DENIED|UNAUTHENTICATED|Request unauthorized/i.test((err as Error)?.message ?? '')
  );
}
