/**
 * Where OAuth logins of shelf servers live: one file per server in one folder (`DMCP_OAUTH_DIR`)
 * that every CLI and worker process of a deployment reads. Each file is AES-256-GCM encrypted with
 * the OAuth key (`DMCP_OAUTH_KEY`, else `<data dir>/oauth.key`), 0600 in a 0700 folder, written by
 * rename so a reader never sees half a file. Only the server name, the login ID and when a pending
 * login started are in clear text (bound to the ciphertext as associated data), so status can be
 * told without decrypting. Refreshes take a lock file per server, so a rotating refresh token is
 * spent by one process only; each lock carries a random nonce, so a process only ever removes the
 * lock it created or the stale lock it judged.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, readdir, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import { nameProblem } from '../config/names.js';
import { decodeKey32, type Settings } from '../settings/index.js';

/** A token store that cannot do what was asked: names the file or setting and what to do. */
export class TokenStoreError extends Error {
  override name = 'TokenStoreError';
}

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
  /** The client registration (dynamic client registration). */
  client: OAuthClientInformationMixed;
  /** The RFC 8707 resource indicator the tokens were requested for. */
  resource?: string;
  tokens: StoredTokens;
  /** Set when the authorization server refused the refresh token (expired or revoked): no further refresh is tried. */
  dead?: { at: string; reason: string };
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

type Kind = 'login' | 'pending';

interface Envelope {
  v: 1;
  kind: Kind;
  server: string;
  /** Login files: the login ID. */
  loginId?: string;
  /** Pending files: when it started. */
  startedAt?: string;
  /** Login files: when the authorization server refused its refresh token (the login is over). */
  deadAt?: string;
  keyId: string;
  iv: string;
  tag: string;
  data: string;
}

const LOGIN_SUFFIX = '.login.json';
const PENDING_SUFFIX = '.pending.json';

/** A key's ID: a hash prefix, never the key. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

/** A new random login ID. */
export function newLoginId(): string {
  return randomBytes(9).toString('base64url');
}

function checkServer(server: string): void {
  const problem = nameProblem(server);
  if (problem) throw new TokenStoreError(problem);
}

function aad(e: Pick<Envelope, 'v' | 'kind' | 'server' | 'loginId' | 'startedAt' | 'deadAt'>): Buffer {
  return Buffer.from(JSON.stringify([e.v, e.kind, e.server, e.loginId ?? null, e.startedAt ?? null, e.deadAt ?? null]));
}

/** Encrypts `value` into an envelope; pure apart from the random IV. */
export function seal(kind: Kind, server: string, clear: { loginId?: string; startedAt?: string; deadAt?: string }, value: unknown, key: Buffer): Envelope {
  const head = { v: 1 as const, kind, server, ...clear };
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(head));
  const data = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return { ...head, keyId: keyId(key), iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
}

/** Decrypts an envelope with whichever of `keys` wrote it. @throws TokenStoreError naming `file`. */
export function unseal(envelope: Envelope, keys: Buffer[], file: string): unknown {
  const candidates = [...keys.filter((k) => keyId(k) === envelope.keyId), ...keys.filter((k) => keyId(k) !== envelope.keyId)];
  for (const key of candidates) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(envelope.iv, 'base64'));
      decipher.setAAD(aad(envelope));
      decipher.setAuthTag(Buffer.from(envelope.tag, 'base64'));
      const clear = Buffer.concat([decipher.update(Buffer.from(envelope.data, 'base64')), decipher.final()]);
      return JSON.parse(clear.toString('utf8'));
    } catch {
      // The next key, if any: a wrong key and a tampered file fail the same way.
    }
  }
  throw new TokenStoreError(
    `${file}: cannot be decrypted with DMCP_OAUTH_KEY (or the key file) or DMCP_OAUTH_KEYS_PREVIOUS: it was written with another key (key ID ${envelope.keyId}) or it was changed; log in again, or add the old key to DMCP_OAUTH_KEYS_PREVIOUS`,
  );
}

function parseEnvelope(text: string, file: string, kind: Kind, server: string): Envelope {
  let e: Partial<Envelope>;
  try {
    e = JSON.parse(text) as Partial<Envelope>;
  } catch (err) {
    throw new TokenStoreError(`${file}: not a durable-mcp login file (${(err as Error).message})`);
  }
  if (e?.v !== 1 || e.kind !== kind || typeof e.keyId !== 'string' || typeof e.iv !== 'string' || typeof e.tag !== 'string' || typeof e.data !== 'string') {
    throw new TokenStoreError(`${file}: not a durable-mcp ${kind} file (fields v, kind, keyId, iv, tag, data expected)`);
  }
  if (e.server !== server) throw new TokenStoreError(`${file}: holds server ${JSON.stringify(e.server)}, not ${JSON.stringify(server)}`);
  return e as Envelope;
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code;
}

async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw new TokenStoreError(`${file}: cannot read it (${errno(err) ?? (err as Error).message})`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === 'EPERM';
  }
}

/** A token store over a folder; the folder is created (0700) on first write. */
export function createTokenStore(options: TokenStoreOptions): TokenStore {
  const dir = resolve(options.dir);
  const keys = [options.key, ...(options.previousKeys ?? [])];
  const lockStaleMs = options.lockStaleMs ?? 30_000;
  const lockWaitMs = options.lockWaitMs ?? 20_000;
  /** In-process queue per server, so one process's callers wait here instead of polling the lock file. */
  const local = new Map<string, Promise<unknown>>();
  let dirReady: Promise<void> | undefined;

  const fileOf = (server: string, kind: Kind) => join(dir, `${server}${kind === 'login' ? LOGIN_SUFFIX : PENDING_SUFFIX}`);

  function ensureDir(): Promise<void> {
    dirReady ??= (async () => {
      try {
        await mkdir(dir, { recursive: true, mode: 0o700 });
        const s = await stat(dir);
        if ((s.mode & 0o077) !== 0) await chmod(dir, 0o700);
      } catch (err) {
        dirReady = undefined;
        throw new TokenStoreError(`${dir} (DMCP_OAUTH_DIR): cannot create it as a private folder (${errno(err) ?? (err as Error).message})`);
      }
    })();
    return dirReady;
  }

  async function writeEnvelope(file: string, envelope: Envelope): Promise<void> {
    await ensureDir();
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await writeFile(tmp, `${JSON.stringify(envelope)}\n`, { mode: 0o600, flag: 'wx' });
      await rename(tmp, file);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw new TokenStoreError(`${file}: cannot write it (${errno(err) ?? (err as Error).message})`);
    }
  }

  async function readEnvelope(server: string, kind: Kind): Promise<Envelope | undefined> {
    checkServer(server);
    const file = fileOf(server, kind);
    const text = await readIfExists(file);
    return text === undefined ? undefined : parseEnvelope(text, file, kind, server);
  }

  async function read(server: string): Promise<LoginRecord | undefined> {
    const e = await readEnvelope(server, 'login');
    if (!e) return undefined;
    const record = unseal(e, keys, fileOf(server, 'login')) as LoginRecord;
    return { ...record, server, loginId: e.loginId ?? record.loginId };
  }

  async function readPending(server: string): Promise<PendingLogin | undefined> {
    const e = await readEnvelope(server, 'pending');
    if (!e) return undefined;
    return { ...(unseal(e, keys, fileOf(server, 'pending')) as PendingLogin), server };
  }

  async function write(record: LoginRecord): Promise<void> {
    checkServer(record.server);
    await writeEnvelope(fileOf(record.server, 'login'), seal('login', record.server, { loginId: record.loginId, ...(record.dead ? { deadAt: record.dead.at } : {}) }, record, options.key));
  }

  async function writePending(pending: PendingLogin): Promise<void> {
    checkServer(pending.server);
    await writeEnvelope(fileOf(pending.server, 'pending'), seal('pending', pending.server, { startedAt: pending.startedAt }, pending, options.key));
  }

  async function removeFile(file: string): Promise<boolean> {
    try {
      await unlink(file);
      return true;
    } catch (err) {
      if (errno(err) === 'ENOENT') return false;
      throw new TokenStoreError(`${file}: cannot delete it (${errno(err) ?? (err as Error).message})`);
    }
  }

  async function takeFileLock(server: string): Promise<() => Promise<void>> {
    await ensureDir();
    const file = join(dir, `${server}.lock`);
    const nonce = randomBytes(12).toString('hex');
    const deadline = Date.now() + lockWaitMs;
    for (;;) {
      try {
        const handle = await open(file, 'wx', 0o600);
        try {
          await handle.writeFile(JSON.stringify({ pid: process.pid, host: hostname(), at: new Date().toISOString(), nonce }));
        } finally {
          await handle.close();
        }
        return holdLock(file, nonce);
      } catch (err) {
        if (errno(err) !== 'EEXIST') throw new TokenStoreError(`${file}: cannot take the login lock (${errno(err) ?? (err as Error).message})`);
      }
      const stale = await staleLock(file);
      if (stale !== undefined && (await removeStaleLock(file, stale))) continue;
      if (Date.now() > deadline) {
        throw new TokenStoreError(`${file}: another process has held the login lock for more than ${lockWaitMs >= 1000 ? `${Math.round(lockWaitMs / 1000)} s` : `${lockWaitMs} ms`}; if none is refreshing, delete the file`);
      }
      await sleep(25 + Math.floor(Math.random() * 25));
    }
  }

  /** Keeps a taken lock fresh (so a holder that runs long is not judged stale); the returned release removes it only while it is still ours. */
  function holdLock(file: string, nonce: string): () => Promise<void> {
    const touch = setInterval(() => {
      void (async () => {
        if ((await lockNonce(file)) !== nonce) return;
        const now = new Date();
        await utimes(file, now, now);
      })().catch(() => undefined);
    }, Math.max(1, Math.floor(lockStaleMs / 3)));
    touch.unref();
    return async () => {
      clearInterval(touch);
      if ((await lockNonce(file)) === nonce) await unlink(file).catch(() => undefined);
    };
  }

  /**
   * Removes the stale lock whose text was `staleText`; false when another process is removing it.
   * Of the processes that judged it stale, only the one that creates its claim file goes on, and only
   * while the lock still holds that text, so none removes a lock taken after it. The lock is renamed
   * aside and read back before it is deleted: when it is not the stale one after all (its holder
   * released it and another process took it), it is put back without clobbering anything.
   */
  async function removeStaleLock(file: string, staleText: string): Promise<boolean> {
    const claim = `${file}.${createHash('sha256').update(staleText).digest('hex').slice(0, 16)}.claim`;
    try {
      await (await open(claim, 'wx', 0o600)).close();
    } catch (err) {
      // A claim older than the stale limit was left by a process that died while taking over.
      if (errno(err) === 'EEXIST' && (await stat(claim).then((c) => Date.now() - c.mtimeMs > lockStaleMs, () => false))) await unlink(claim).catch(() => undefined);
      return false;
    }
    try {
      if ((await readFile(file, 'utf8').catch(() => undefined)) !== staleText) return true;
      const aside = `${file}.${randomBytes(6).toString('hex')}.stale`;
      try {
        await rename(file, aside);
      } catch {
        return true;
      }
      const moved = await readFile(aside, 'utf8').catch(() => undefined);
      if (moved !== staleText) {
        try {
          // link fails with EEXIST rather than replace a lock created meanwhile.
          await link(aside, file);
        } catch (err) {
          // A file system without hard links: rename back, unless a lock was created meanwhile.
          if (errno(err) !== 'EEXIST' && !(await stat(file).then(() => true, () => false))) await rename(aside, file).catch(() => undefined);
        }
      }
      await unlink(aside).catch(() => undefined);
      return true;
    } finally {
      await unlink(claim).catch(() => undefined);
    }
  }

  /** The nonce in a lock file; undefined when it is gone or has none. */
  async function lockNonce(file: string): Promise<string | undefined> {
    try {
      const nonce = (JSON.parse(await readFile(file, 'utf8')) as { nonce?: unknown }).nonce;
      return typeof nonce === 'string' ? nonce : undefined;
    } catch {
      return undefined;
    }
  }

  /** The lock's text when it is stale (not touched for lockStaleMs, or its holder on this machine is gone); else undefined. */
  async function staleLock(file: string): Promise<string | undefined> {
    try {
      const [s, text] = await Promise.all([stat(file), readFile(file, 'utf8')]);
      if (Date.now() - s.mtimeMs > lockStaleMs) return text;
      const holder = JSON.parse(text) as { pid?: number; host?: string };
      return holder.host === hostname() && typeof holder.pid === 'number' && holder.pid !== process.pid && !isAlive(holder.pid) ? text : undefined;
    } catch {
      // Gone, or still being written by its new holder: not stale.
      return undefined;
    }
  }

  function withLock<T>(server: string, fn: () => Promise<T>): Promise<T> {
    checkServer(server);
    const previous = local.get(server) ?? Promise.resolve();
    const run = previous.then(async () => {
      const release = await takeFileLock(server);
      try {
        return await fn();
      } finally {
        await release();
      }
    });
    const settled = run.catch(() => undefined);
    local.set(server, settled);
    void settled.then(() => {
      if (local.get(server) === settled) local.delete(server);
    });
    return run;
  }

  async function servers(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if (errno(err) === 'ENOENT') return [];
      throw new TokenStoreError(`${dir} (DMCP_OAUTH_DIR): cannot list it (${errno(err) ?? (err as Error).message})`);
    }
    const found = names
      .map((n) => (n.endsWith(LOGIN_SUFFIX) ? n.slice(0, -LOGIN_SUFFIX.length) : n.endsWith(PENDING_SUFFIX) ? n.slice(0, -PENDING_SUFFIX.length) : undefined))
      .filter((n): n is string => n !== undefined && nameProblem(n) === undefined);
    return [...new Set(found)].sort();
  }

  return {
    dir,
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
    read,
    write,
    async remove(server) {
      checkServer(server);
      const a = await removeFile(fileOf(server, 'login'));
      const b = await removeFile(fileOf(server, 'pending'));
      return a || b;
    },
    readPending,
    writePending,
    async removePending(server) {
      checkServer(server);
      await removeFile(fileOf(server, 'pending'));
    },
    withLock,
    servers,
    async rekey() {
      const rewritten: string[] = [];
      const current = keyId(options.key);
      for (const server of await servers()) {
        await withLock(server, async () => {
          const login = await readEnvelope(server, 'login');
          if (login && login.keyId !== current) {
            const record = await read(server);
            if (record) await write(record);
            rewritten.push(fileOf(server, 'login'));
          }
          const pending = await readEnvelope(server, 'pending');
          if (pending && pending.keyId !== current) {
            const p = await readPending(server);
            if (p) await writePending(p);
            rewritten.push(fileOf(server, 'pending'));
          }
        });
      }
      return { rewritten };
    },
  };
}

/** The file the OAuth key is kept in when DMCP_OAUTH_KEY is unset. */
export function oauthKeyFile(settings: Pick<Settings, 'dataDir'>): string {
  return join(settings.dataDir, 'oauth.key');
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
    const temp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
    try {
      await mkdir(resolve(file, '..'), { recursive: true });
      await writeFile(temp, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      await link(temp, file);
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw new TokenStoreError(`${file}: cannot create the OAuth key file (${errno(err) ?? (err as Error).message})`);
    } finally {
      await unlink(temp).catch(() => undefined);
    }
    text = await readFile(file, 'utf8');
  }
  const mode = (await stat(file)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new TokenStoreError(`${file}: the OAuth key file is readable by other users (mode ${mode.toString(8)}); run chmod 600 on it`);
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
  const previousKeys = settings.oauth.previousKeys.map((k, i) => decodeKey32(k, `DMCP_OAUTH_KEYS_PREVIOUS (key #${i + 1})`));
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
      return (await stat(keyFile).then(() => true, () => false)) ? { ...result, oldKeyFile: keyFile } : result;
    },
  };
}
