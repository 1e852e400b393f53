import { randomBytes } from 'node:crypto';
import { link, mkdir, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Creates `file` (mode 0600) holding `contents`, unless it exists. Written whole under a private
 * name, then linked into place: a process that loses a race never reads a half-written file, nor one
 * that others could read for a moment, and every process ends up with the one linked first. Keys and
 * tokens of the data dir are created this way; the caller reads the file afterwards, with its checks.
 * Its folder must exist.
 */
export async function createPrivateFileOnce(file: string, contents: string): Promise<void> {
  const temp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, contents, { mode: 0o600, flag: 'wx' });
    await link(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/**
 * What `read` makes of `file`, creating the file first (its folder too, with `folderMode` when
 * given) with `contents()` if it does not exist yet. Any other error of `read` is thrown as it is.
 */
export async function readOrCreatePrivateFile<T>(
  file: string,
  read: (file: string) => Promise<T>,
  contents: () => string,
  folderMode?: number,
): Promise<T> {
  try {
    return await read(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dirname(file), { recursive: true, ...(folderMode !== undefined ? { mode: folderMode } : {}) });
  await createPrivateFileOnce(file, contents());
  return read(file);
}
