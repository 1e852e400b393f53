/** Saving a transcript's images as files. */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sniffImageType } from '../shaping/images.js';
import type { Transcript } from './transcript.js';

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

/** What {@link saveImages} did: the files it wrote, and those it refused to overwrite. */
export interface SavedImages {
  /** Paths of the image files written. */
  written: string[];
  /** Paths that already existed (a file, a folder or a symlink): never overwritten, never followed. */
  skipped: string[];
}

/**
 * Writes every image block of every call to `dir` as `<callId>-<n>.<ext>`, the extension taken from
 * the bytes (not the declared type). A call ID with characters other than letters, digits, `.`, `_`
 * and `-` is cleaned and gets a short hash of the original, so `a/b` and `a_b` never share a file.
 * Files are created exclusively: an existing path, or a symlink planted there, is left alone.
 */
export async function saveImages(t: Transcript, dir: string): Promise<SavedImages> {
  await mkdir(dir, { recursive: true });
  const result: SavedImages = { written: [], skipped: [] };
  for (const call of t.calls) {
    const images = (call.outcome?.content ?? []).filter((b) => b.type === 'image');
    for (const [n, block] of images.entries()) {
      const bytes = Buffer.from(block.data ?? '', 'base64');
      const ext = EXTENSIONS[sniffImageType(bytes) ?? ''] ?? 'bin';
      const file = join(dir, `${fileStem(call.id)}-${n + 1}.${ext}`);
      try {
        // 'wx' is O_CREAT|O_EXCL: it fails on any existing path, a symlink included, so it never follows one.
        await writeFile(file, bytes, { flag: 'wx' });
        result.written.push(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        result.skipped.push(file);
      }
    }
  }
  return result;
}

function fileStem(callId: string): string {
  const clean = callId
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 100);
  if (clean === callId) return clean;
  return `${clean}-${createHash('sha256').update(callId).digest('hex').slice(0, 8)}`;
}
