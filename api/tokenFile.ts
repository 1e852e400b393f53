/**
 * The API's own token, in the data dir: what `dev` (and `api` without configured tokens) serves
 * with, so the API is never open to whoever can reach its port. Whoever can read the file is the
 * operator (the same folder holds the turn key), so the token reaches every session and the shelf.
 * It is written as the turn key is: to a private file, then linked into place, so two processes
 * starting at once read the one token that won, and it is never readable by others, not even briefly.
 */
import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { readOrCreatePrivateFile } from '../config/privateFile.js';
import { join } from 'node:path';
import { hashToken, parseTokens, type ApiToken } from './auth.js';

/** The file under the data dir. */
export const apiTokenFile = (dataDir: string): string => join(dataDir, 'api.token');

/** How the token's entry is named in messages and in the shelf's log (never the token). */
export const API_TOKEN_SOURCE = 'api.token';

const TOKEN_RE = /^[A-Za-z0-9_-]{32,256}$/;

/** Reads the token file; refuses one that other users could read or change, or one that holds no token. */
export async function readApiToken(file: string): Promise<string> {
  const info = await stat(file);
  if ((info.mode & 0o077) !== 0) {
    throw new Error(
      `${file} is open to other users (mode ${(info.mode & 0o777).toString(8)}); the API's token must be 0600: chmod 600 ${file}`,
    );
  }
  const text = (await readFile(file, 'utf8')).trim();
  if (!TOKEN_RE.test(text))
    throw new Error(
      `${file} does not hold a token (32 to 256 letters, digits, "-" or "_"); delete it and start the API again for a new one`,
    );
  return text;
}

/** The token under `dataDir`, created (0600, 32 random bytes, base64url) on first use. */
export async function ensureApiToken(dataDir: string): Promise<string> {
  return readOrCreatePrivateFile(
    apiTokenFile(dataDir),
    readApiToken,
    () => `${randomBytes(32).toString('base64url')}\n`,
    0o700,
  );
}

/** The data-dir token as the API's one configured token: every session, every agent, the shelf. */
export function dataDirToken(token: string): ApiToken {
  const [entry] = parseTokens(`${hashToken(token)} * shelf`, API_TOKEN_SOURCE);
  return { ...entry!, source: API_TOKEN_SOURCE };
}
