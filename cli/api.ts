/** The HTTP API for orchestrators, over the same TurnClient as the CLI: what `api` and `dev` serve, and its tokens. */
import { readFile } from 'node:fs/promises';
import type { TurnClient } from '../client/turnClient.js';
import type { Logger } from 'pino';
import { SettingsError, type Settings } from '../settings/index.js';
import { parseTokens, type ApiToken } from '../api/auth.js';
import { apiTokenFile, dataDirToken, ensureApiToken } from '../api/tokenFile.js';
import { secretsOf } from './embedded.js';
import { readTurnKey, turnKeyFile } from '../config/load.js';

/** The configured tokens (hashes), from DMCP_API_TOKENS and DMCP_API_TOKENS_FILE. */
export async function apiTokens(settings: Settings): Promise<ApiToken[]> {
  const tokens = settings.api.tokens ? parseTokens(settings.api.tokens, 'DMCP_API_TOKENS') : [];
  if (settings.api.tokensFile) {
    let text: string;
    try {
      text = await readFile(settings.api.tokensFile, 'utf8');
    } catch (err) {
      throw new SettingsError(
        `DMCP_API_TOKENS_FILE: cannot read ${settings.api.tokensFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    tokens.push(...parseTokens(text, settings.api.tokensFile));
  }
  return tokens;
}

/** The tokens the API serves with, and where they come from. */
export interface ApiAuth {
  tokens: ApiToken[];
  source: 'configured' | 'dataDir';
  /** The data dir's token file, when the API serves with it. */
  tokenFile?: string;
}

/**
 * The configured tokens; none configured: the data dir's own token, created on first use. The API
 * is never open: a program of another user on this machine, or a web page that rebinds a name to
 * 127.0.0.1, reaches its port but cannot read the file.
 */
export async function resolveApiAuth(settings: Settings): Promise<ApiAuth> {
  const configured = await apiTokens(settings);
  if (configured.length > 0 || settings.api.tokens !== undefined || settings.api.tokensFile !== undefined) {
    if (configured.length === 0)
      throw new SettingsError(
        'DMCP_API_TOKENS / DMCP_API_TOKENS_FILE hold no token entry; leave both unset for the token in the data dir (api.token)',
      );
    return { tokens: configured, source: 'configured' };
  }
  const tokenFile = apiTokenFile(settings.dataDir);
  const token = await ensureApiToken(settings.dataDir).catch((err: Error) => {
    throw new SettingsError(`the API's token: ${err.message}`);
  });
  return { tokens: [dataDirToken(token)], source: 'dataDir', tokenFile };
}

/** How to reach the API, in the words `dev` and `api` print. */
export function apiAuthLines(auth: ApiAuth, url: string): string[] {
  if (auth.source === 'configured') return [`${auth.tokens.length} token(s) from DMCP_API_TOKENS`];
  return [
    `${auth.tokenFile} (0600; send it: curl -H "Authorization: Bearer $(cat ${auth.tokenFile})" ${url}/api/v1/shelf)`,
  ];
}

/** Where the API's TurnClient connects, and how. */
export interface ApiTarget {
  address: string;
  namespace: string;
  taskQueue: string;
  /** TLS / API key options of a cluster connection. */
  connection?: Parameters<typeof TurnClient.connect>[0]['connection'];
  /** The tuned dev server's Update limit, when the API talks to the embedded dev server. */
  maxCallsInFlight?: number;
}

/** Connects a TurnClient and serves the API on `host:port`; `close` stops both. */
export async function serveApi(
  settings: Settings,
  logger: Logger,
  target: ApiTarget,
  listen: { host: string; port: number },
): Promise<{ url: string; auth: ApiAuth; close(): Promise<void> }> {
  // Loaded on use: every other command of the CLI would otherwise pay for the HTTP framework.
  const [{ TurnClient }, { dataConverterFor }, { startApiServer }, { apiBoundary }, { stepTextStoreFor }] =
    await Promise.all([
      import('../client/turnClient.js'),
      import('../payloads/dataConverter.js'),
      import('../api/server.js'),
      import('../api/boundary.js'),
      import('../payloads/streamLog.js'),
    ]);
  const auth = await resolveApiAuth(settings);
  const turns = await TurnClient.connect({
    address: target.address,
    ...(target.connection ? { connection: target.connection } : {}),
    namespace: target.namespace,
    taskQueue: target.taskQueue,
    dataConverter: dataConverterFor(settings),
    stepText: stepTextStoreFor(settings),
    dataDir: settings.dataDir,
    turnIdleMs: settings.turnIdleMs,
    inputTimeoutMs: settings.inputTimeoutMs,
    legacyInputTimeoutMs: settings.legacyInputTimeoutMs,
    shapeLimits: settings.shape,
    secrets: secretsOf(process.env),
    ...(target.maxCallsInFlight ? { maxCallsInFlight: target.maxCallsInFlight } : {}),
  });
  try {
    const api = await startApiServer({
      host: listen.host,
      port: listen.port,
      logger,
      turns,
      tokens: auth.tokens,
      tokenSource: auth.source,
      requestOrigins: {
        ...(settings.api.allowedHosts ? { allowedHosts: settings.api.allowedHosts } : {}),
        ...(settings.api.allowedOrigins ? { allowedOrigins: settings.api.allowedOrigins } : {}),
      },
      boundary: apiBoundary(settings.boundary),
      maxBodyBytes: settings.api.maxBodyBytes,
      callWaitMs: settings.api.callWaitMs,
      shapeLimits: settings.shape,
      closeGraceMs: settings.shutdownGraceMs,
      // Shelf changes are signed with the workers' key; without the file they are refused, not signed with another.
      shelf: { turnKey: await readTurnKey(turnKeyFile(settings.dataDir)).catch(() => undefined), env: process.env },
    });
    return { url: api.url, auth, close: () => api.close().finally(() => turns.close()) };
  } catch (err) {
    await turns.close();
    throw err;
  }
}
