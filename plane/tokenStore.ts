/**
 * Where OAuth logins of shelf servers live: one file per server in one folder (`DMCP_OAUTH_DIR`)
 * that every CLI and worker process of a deployment reads. Each file is AES-256-GCM encrypted with
 * the OAuth key (`DMCP_OAUTH_KEY`, else `<data dir>/oauth.key`), 0600 in a 0700 folder, written by
 * rename so a reader never sees half a file. Only the server name, the login ID and when a pending
 * login started are in clear text (bound to the ciphertext as associated data), so status can be
 * told without decrypting. Refreshes take a lock file per server, so a rotating refresh token is
 * spent by one process only; each lock carries a random nonce, so a process only ever removes the
 * lock it created or the stale lock it judged. The file format is in `loginEnvelope.ts`, the
 * folder in `loginFolder.ts`, the lock in `loginLock.ts`; this module is the store over them.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import { decodeKey32, type Settings } from '../settings/index.js';
import { checkServer, keyId, seal, TokenStoreError, unseal } from './loginEnvelope.js';
import { createLoginFolder, errno, readIfExists, type LoginFolder } from './loginFolder.js';
import { createLoginLocks } from './loginLock.js';
import { createPrivateFileOnce } from '../config/privateFile.js';
import type { MachineGrant } from '../contract/shelf.js';
import { DataDirEntry } from '../contract/index.js';

export { keyId, seal, TokenStoreError, unseal };

export interface TokenStoreOptions {
  /** The folder of login files (created 0700). */
  dir: string;
  /** The AES-256 key new files are written with. */
  key: Buffer;
  /** Older keys, still accepted for reading (rotation); {@link TokenStore.rekey} rewrites with `key`. */
  previousKeys?: Buffer[];
  /** A lock file not touched for this long is taken over (its holder died mid-refresh; a live holder touches it every third of this); default 30 s. */
  lockStaleMs?: number;
  /** How long {@link TokenStore.withLock} waits for another process's lock; default 20 s. */
  lockWaitMs?: number;
}

/** Tokens as the authorization server issued them, plus when they expire on our clock. */
export interface StoredTokens extends OAuthTokens {
  /** Epoch milliseconds the access token expires (from `expires_in`); absent: no expiry was given. */
  expiresAt?: number;
  /** Epoch milliseconds they were obtained. */
  obtainedAt: number;
}

/** One completed login of one shelf server. */
export interface LoginRecord {
  server: string;
  /** The MCP server address the login was made for; its tokens are sent nowhere else. */
  serverUrl: string;
  /** Random, not secret, stable across refreshes: a new login gets a new one (the pool restarts the server). */
  loginId: string;
  /** ISO time of the login. */
  createdAt: string;
  /** ISO time of the last refresh. */
  refreshedAt?: string;
  /** Where the authorization server is and what it offers (token, revocation endpoints). */
  discovery: OAuthDiscoveryState;
  /** The client registration (dynamic client registration), or the pre-registered client without its secret. */
  client: OAuthClientInformationMixed;
  /** A pre-registered client's secret is this variable's value where the tokens are requested (never stored). */
  clientSecretEnv?: string;
  /** The RFC 8707 resource indicator the tokens were requested for. */
  resource?: string;
  /** A machine login's tokens (`client_credentials`, `id_jag`), renewed by a new grant rather than a refresh token. */
  grant?: MachineGrant;
  tokens: StoredTokens;
  /** Set when the authorization server refused the refresh token (expired or revoked): no further refresh is tried. */
  dead?: { at: string; reason: string };
  /**
   * Scopes the server asked for in a 403 `insufficient_scope` to this login's token: the next login
   * asks for them besides those granted.
   */
  wantedScope?: string;
  /**
   * The authorization server the server's protected resource metadata names instead of this
   * login's (seen after a 401): the login's tokens are not sent or refreshed any more, and the next
   * login registers there.
   */
  movedTo?: string;
}

/** A login started by `mcp login` and not yet finished (the browser has not come back). */
export interface PendingLogin {
  server: string;
  serverUrl: string;
  /** ISO time it was started. */
  startedAt: string;
  /** The OAuth `state` the redirect must carry back. */
  state: string;
  /** The PKCE code verifier (secret). */
  codeVerifier: string;
  redirectUrl: string;
  authorizationUrl: string;
  discovery: OAuthDiscoveryState;
  client: OAuthClientInformationMixed;
  clientSecretEnv?: string;
  resource?: string;
}

export interface TokenStore {
  /** The folder of login files. */
  readonly dir: string;
  /** Not secret: whether a login exists and its ID (the pool restarts a server whose loginId changed). */
  loginId(server: string): Promise<string | undefined>;
  /** Pending login started at, if any (for the `in_progress` status). */
  pendingSince(server: string): Promise<Date | undefined>;
  /** What `mcp list` shows, read without the key: the login ID, whether the login is over (refused refresh), a pending login. */
  loginState(server: string): Promise<LoginState>;
  /** The login of `server`, decrypted; undefined when there is none. */
  read(server: string): Promise<LoginRecord | undefined>;
  /** Writes (replaces) the login of `record.server`, encrypted with the current key. */
  write(record: LoginRecord): Promise<void>;
  /** Deletes the login and any pending login of `server`; true when there was something. */
  remove(server: string): Promise<boolean>;
  readPending(server: string): Promise<PendingLogin | undefined>;
  writePending(pending: PendingLogin): Promise<void>;
  removePending(server: string): Promise<void>;
  /** Runs `fn` holding the server's lock, across processes sharing the folder (one refresh at a time). */
  withLock<T>(server: string, fn: () => Promise<T>): Promise<T>;
  /** Servers with a login or a pending login. */
  servers(): Promise<string[]>;
  /**
   * Rewrites every file with the current key (after a rotation); names the files it rewrote, and the
   * old key file when DMCP_OAUTH_KEY is set and that file still exists (it can be deleted now).
   */
  rekey(): Promise<{ rewritten: string[]; oldKeyFile?: string }>;
}

/** A server's login as far as it is told without decrypting. */
export interface LoginState {
  loginId?: string;
  /** When the authorization server refused the login's refresh token: it needs a new login. */
  expiredAt?: Date;
  pendingSince?: Date;
}

/** A new random login ID. */
export function newLoginId(): string {
  return randomBytes(9).toString('base64url');
}

/** A token store over a folder; the folder is created (0700) on first write. */
export function createTokenStore(options: TokenStoreOptions): TokenStore {
  const folder = createLoginFolder(resolve(options.dir));
  const { fileOf, readEnvelope, removeFile } = folder;
  const keys = [options.key, ...(options.previousKeys ?? [])];
  const locked = createLoginLocks({
    dir: folder.dir,
    ensureDir: folder.ensureDir,
    staleMs: options.lockStaleMs ?? 30_000,
    waitMs: options.lockWaitMs ?? 20_000,
  });

  const store: TokenStore = {
    dir: folder.dir,
    async loginId(server) {
      return (await readEnvelope(server, 'login'))?.loginId;
    },
    async pendingSince(server) {
      const at = (await readEnvelope(server, 'pending'))?.startedAt;
      return at === undefined ? undefined : new Date(at);
    },
    async loginState(server) {
      const [login, pending] = await Promise.all([readEnvelope(server, 'login'), readEnvelope(server, 'pending')]);
      return {
        ...(login?.loginId !== undefined ? { loginId: login.loginId } : {}),
        ...(login?.deadAt !== undefined ? { expiredAt: new Date(login.deadAt) } : {}),
        ...(pending?.startedAt !== undefined ? { pendingSince: new Date(pending.startedAt) } : {}),
      };
    },
    async read(server) {
      const e = await readEnvelope(server, 'login');
      if (!e) return undefined;
      const record = unseal(e, keys, fileOf(server, 'login')) as LoginRecord;
      return { ...record, server, loginId: e.loginId ?? record.loginId };
    },
    async write(record) {
      checkServer(record.server);
      const clear = { loginId: record.loginId, ...(record.dead ? { deadAt: record.dead.at } : {}) };
      await folder.writeEnvelope(
        fileOf(record.server, 'login'),
        seal('login', record.server, clear, record, options.key),
      );
    },
    async remove(server) {
      checkServer(server);
      const a = await removeFile(fileOf(server, 'login'));
      const b = await removeFile(fileOf(server, 'pending'));
      return a || b;
    },
    async readPending(server) {
      const e = await readEnvelope(server, 'pending');
      if (!e) return undefined;
      return { ...(unseal(e, keys, fileOf(server, 'pending')) as PendingLogin), server };
    },
    async writePending(pending) {
      checkServer(pending.server);
      await folder.writeEnvelope(
        fileOf(pending.server, 'pending'),
        seal('pending', pending.server, { startedAt: pending.startedAt }, pending, options.key),
      );
    },
    async removePending(server) {
      checkServer(server);
      await removeFile(fileOf(server, 'pending'));
    },
    withLock(server, fn) {
      // Checked before queueing: a bad name throws at once, not from the queue.
      checkServer(server);
      return locked(server, fn);
    },
    servers: () => folder.servers(),
    rekey: () => rewriteWithKey(store, folder, keyId(options.key)),
  };
  return store;
}

/** {@link TokenStore.rekey}: each file written with a key other than `current` is read and written again, under the server's lock. */
async function rewriteWithKey(
  store: TokenStore,
  folder: LoginFolder,
  current: string,
): Promise<{ rewritten: string[] }> {
  const rewritten: string[] = [];
  for (const server of await folder.servers()) {
    await store.withLock(server, async () => {
      const login = await folder.readEnvelope(server, 'login');
      if (login && login.keyId !== current) {
        const record = await store.read(server);
        if (record) await store.write(record);
        rewritten.push(folder.fileOf(server, 'login'));
      }
      const pending = await folder.readEnvelope(server, 'pending');
      if (pending && pending.keyId !== current) {
        const p = await store.readPending(server);
        if (p) await store.writePending(p);
        rewritten.push(folder.fileOf(server, 'pending'));
      }
    });
  }
  return { rewritten };
}

/** The file the OAuth key is kept in when DMCP_OAUTH_KEY is unset. */
export function oauthKeyFile(settings: Pick<Settings, 'dataDir'>): string {
  return join(settings.dataDir, DataDirEntry.oauthKey);
}

/**
 * Reads the key file, creating it (0600, 32 random bytes as base64) when it does not exist yet.
 * @throws TokenStoreError when it is readable by others or does not hold a key.
 */
async function keyFromFile(file: string, create: boolean): Promise<Buffer | undefined> {
  let text = await readIfExists(file);
  if (text === undefined) {
    if (!create) return undefined;
    // Written whole under a private name, then linked into place: a process that loses the race
    // never reads a half-written key, and every process ends up with the one that was linked first.
    try {
      await mkdir(resolve(file, '..'), { recursive: true });
      await createPrivateFileOnce(file, `${randomBytes(32).toString('base64')}\n`);
    } catch (err) {
      throw new TokenStoreError(`${file}: cannot create the OAuth key file (${errno(err) ?? (err as Error).message})`);
    }
    text = await readFile(file, 'utf8');
  }
  const mode = (await stat(file)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new TokenStoreError(
      `${file}: the OAuth key file is readable by other users (mode ${mode.toString(8)}); run chmod 600 on it`,
    );
  }
  try {
    return decodeKey32(text, file);
  } catch (err) {
    throw new TokenStoreError((err as Error).message);
  }
}

/**
 * The deployment's token store: `DMCP_OAUTH_DIR` with `DMCP_OAUTH_KEY` (else the key file
 * `<DMCP_DATA_DIR>/oauth.key`, created on first use) and `DMCP_OAUTH_KEYS_PREVIOUS` for reading.
 * When DMCP_OAUTH_KEY is set and the key file exists too, the file's key is accepted for reading,
 * so moving from the file to the variable needs no step of its own; `rekey` then names the file,
 * which can be deleted (a deleted file is no longer read).
 */
export async function tokenStoreFromSettings(settings: Pick<Settings, 'dataDir' | 'oauth'>): Promise<TokenStore> {
  const file = oauthKeyFile(settings);
  const previousKeys = settings.oauth.previousKeys.map((k, i) =>
    decodeKey32(k, `DMCP_OAUTH_KEYS_PREVIOUS (key #${i + 1})`),
  );
  let key: Buffer;
  let oldKeyFile: string | undefined;
  if (settings.oauth.key) {
    key = decodeKey32(settings.oauth.key, 'DMCP_OAUTH_KEY');
    const fromFile = await keyFromFile(file, false).catch(() => undefined);
    if (fromFile && !fromFile.equals(key)) {
      previousKeys.push(fromFile);
      oldKeyFile = file;
    }
  } else {
    key = (await keyFromFile(file, true)) as Buffer;
  }
  const store = createTokenStore({ dir: settings.oauth.dir, key, previousKeys });
  if (oldKeyFile === undefined) return store;
  const keyFile = oldKeyFile;
  return {
    ...store,
    async rekey() {
      const result = await store.rekey();
      // Still there after the rewrite (not deleted by hand meanwhile): then it is worth naming.
      return (await stat(keyFile).then(
        () => true,
        () => false,
      ))
        ? { ...result, oldKeyFile: keyFile }
        : result;
    },
  };
}
