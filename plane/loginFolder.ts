/**
 * The folder of login files on disk: one `<server>.login.json` and one `<server>.pending.json` per
 * server, 0600 in a 0700 folder, each written whole under a temporary name and renamed into place,
 * so a reader never sees half a file.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nameProblem } from '../config/names.js';
import { checkServer, parseEnvelope, TokenStoreError, type Envelope, type Kind } from './loginEnvelope.js';

const LOGIN_SUFFIX = '.login.json';
const PENDING_SUFFIX = '.pending.json';

/** The error code of a failed file system call, if any. */
export function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code;
}

/** The file's text; undefined when it does not exist. @throws TokenStoreError when it cannot be read. */
export async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw new TokenStoreError(`${file}: cannot read it (${errno(err) ?? (err as Error).message})`);
  }
}

/** The login files of one folder (`dir`, already resolved). */
export interface LoginFolder {
  readonly dir: string;
  /** The file of `server`'s login or pending login. */
  fileOf(server: string, kind: Kind): string;
  /** Creates the folder (0700) once; a failure is tried again on the next call. */
  ensureDir(): Promise<void>;
  /** The envelope of `server`'s file of `kind`, checked but not decrypted; undefined when there is none. */
  readEnvelope(server: string, kind: Kind): Promise<Envelope | undefined>;
  writeEnvelope(file: string, envelope: Envelope): Promise<void>;
  /** Deletes `file`; false when it did not exist. */
  removeFile(file: string): Promise<boolean>;
  /** Servers with a login or a pending login file. */
  servers(): Promise<string[]>;
}

/** The folder is created on first write, not here. */
export function createLoginFolder(dir: string): LoginFolder {
  let dirReady: Promise<void> | undefined;
  const fileOf = (server: string, kind: Kind) =>
    join(dir, `${server}${kind === 'login' ? LOGIN_SUFFIX : PENDING_SUFFIX}`);

  function ensureDir(): Promise<void> {
    dirReady ??= (async () => {
      try {
        await mkdir(dir, { recursive: true, mode: 0o700 });
        const s = await stat(dir);
        if ((s.mode & 0o077) !== 0) await chmod(dir, 0o700);
      } catch (err) {
        dirReady = undefined;
        throw new TokenStoreError(
          `${dir} (DMCP_OAUTH_DIR): cannot create it as a private folder (${errno(err) ?? (err as Error).message})`,
        );
      }
    })();
    return dirReady;
  }

  return {
    dir,
    fileOf,
    ensureDir,
    async readEnvelope(server, kind) {
      checkServer(server);
      const file = fileOf(server, kind);
      const text = await readIfExists(file);
      return text === undefined ? undefined : parseEnvelope(text, file, kind, server);
    },
    async writeEnvelope(file, envelope) {
      await ensureDir();
      const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
      try {
        await writeFile(tmp, `${JSON.stringify(envelope)}\n`, { mode: 0o600, flag: 'wx' });
        await rename(tmp, file);
      } catch (err) {
        await unlink(tmp).catch(() => undefined);
        throw new TokenStoreError(`${file}: cannot write it (${errno(err) ?? (err as Error).message})`);
      }
    },
    async removeFile(file) {
      try {
        await unlink(file);
        return true;
      } catch (err) {
        if (errno(err) === 'ENOENT') return false;
        throw new TokenStoreError(`${file}: cannot delete it (${errno(err) ?? (err as Error).message})`);
      }
    },
    async servers() {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (err) {
        if (errno(err) === 'ENOENT') return [];
        throw new TokenStoreError(`${dir} (DMCP_OAUTH_DIR): cannot list it (${errno(err) ?? (err as Error).message})`);
      }
      const found = names
        .map((n) =>
          n.endsWith(LOGIN_SUFFIX)
            ? n.slice(0, -LOGIN_SUFFIX.length)
            : n.endsWith(PENDING_SUFFIX)
              ? n.slice(0, -PENDING_SUFFIX.length)
              : undefined,
        )
        .filter((n): n is string => n !== undefined && nameProblem(n) === undefined);
      return [...new Set(found)].sort();
    },
  };
}
