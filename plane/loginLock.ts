/**
 * One refresh at a time per server, across every process that shares the login folder: a lock file
 * per server, so a rotating refresh token is spent by one process only. Each lock carries a random
 * nonce, so a process only ever removes the lock it created or the stale lock it judged.
 */
import { createHash, randomBytes } from 'node:crypto';
import { link, open, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { TokenStoreError } from './loginEnvelope.js';
import { errno } from './loginFolder.js';

/** Where the locks are and how long they are waited for. */
export interface LoginLockOptions {
  dir: string;
  /** Creates `dir` before the first lock is taken. */
  ensureDir: () => Promise<void>;
  /** A lock file not touched for this long is taken over; a live holder touches it every third of this. */
  staleMs: number;
  /** How long a lock held by another process is waited for. */
  waitMs: number;
}

/**
 * Returns `withLock`, which runs `fn` holding the server's lock. Callers of this process wait in an
 * in-process queue per server instead of polling the lock file. `server` is not checked here.
 */
export function createLoginLocks(options: LoginLockOptions): <T>(server: string, fn: () => Promise<T>) => Promise<T> {
  const local = new Map<string, Promise<unknown>>();
  return function withLock<T>(server: string, fn: () => Promise<T>): Promise<T> {
    const previous = local.get(server) ?? Promise.resolve();
    const run = previous.then(async () => {
      await options.ensureDir();
      const release = await takeFileLock(join(options.dir, `${server}.lock`), options);
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
  };
}

/** Creates the lock `file`, waiting out (or taking over when stale) another holder's; returns its release. */
async function takeFileLock(
  file: string,
  times: Pick<LoginLockOptions, 'staleMs' | 'waitMs'>,
): Promise<() => Promise<void>> {
  const nonce = randomBytes(12).toString('hex');
  const deadline = Date.now() + times.waitMs;
  for (;;) {
    try {
      const handle = await open(file, 'wx', 0o600);
      try {
        await handle.writeFile(
          JSON.stringify({ pid: process.pid, host: hostname(), at: new Date().toISOString(), nonce }),
        );
      } finally {
        await handle.close();
      }
      return holdLock(file, nonce, times.staleMs);
    } catch (err) {
      if (errno(err) !== 'EEXIST')
        throw new TokenStoreError(`${file}: cannot take the login lock (${errno(err) ?? (err as Error).message})`);
    }
    const stale = await staleLock(file, times.staleMs);
    if (stale !== undefined && (await removeStaleLock(file, stale, times.staleMs))) continue;
    if (Date.now() > deadline) {
      const waited = times.waitMs >= 1000 ? `${Math.round(times.waitMs / 1000)} s` : `${times.waitMs} ms`;
      throw new TokenStoreError(
        `${file}: another process has held the login lock for more than ${waited}; if none is refreshing, delete the file`,
      );
    }
    await sleep(25 + Math.floor(Math.random() * 25));
  }
}

/** Keeps a taken lock fresh (so a holder that runs long is not judged stale); the returned release removes it only while it is still ours. */
function holdLock(file: string, nonce: string, staleMs: number): () => Promise<void> {
  const touch = setInterval(
    () => {
      void (async () => {
        if ((await lockNonce(file)) !== nonce) return;
        const now = new Date();
        await utimes(file, now, now);
      })().catch(() => undefined);
    },
    Math.max(1, Math.floor(staleMs / 3)),
  );
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
async function removeStaleLock(file: string, staleText: string, staleMs: number): Promise<boolean> {
  const claim = `${file}.${createHash('sha256').update(staleText).digest('hex').slice(0, 16)}.claim`;
  try {
    await (await open(claim, 'wx', 0o600)).close();
  } catch (err) {
    // A claim older than the stale limit was left by a process that died while taking over.
    if (
      errno(err) === 'EEXIST' &&
      (await stat(claim).then(
        (c) => Date.now() - c.mtimeMs > staleMs,
        () => false,
      ))
    )
      await unlink(claim).catch(() => undefined);
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
        if (
          errno(err) !== 'EEXIST' &&
          !(await stat(file).then(
            () => true,
            () => false,
          ))
        )
          await rename(aside, file).catch(() => undefined);
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

/** The lock's text when it is stale (not touched for `staleMs`, or its holder on this machine is gone); else undefined. */
async function staleLock(file: string, staleMs: number): Promise<string | undefined> {
  try {
    const [s, text] = await Promise.all([stat(file), readFile(file, 'utf8')]);
    if (Date.now() - s.mtimeMs > staleMs) return text;
    const holder = JSON.parse(text) as { pid?: number; host?: string };
    return holder.host === hostname() &&
      typeof holder.pid === 'number' &&
      holder.pid !== process.pid &&
      !isAlive(holder.pid)
      ? text
      : undefined;
  } catch {
    // Gone, or still being written by its new holder: not stale.
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === 'EPERM';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
