/**
 * The operator's turn key, and the proof under it that a turn's references (config files, plugins,
 * inline specs, agent) were chosen by whoever can read the key, not by the agent.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DataDirEntry, refsProofText } from '../contract/index.js';
import { readOrCreatePrivateFile } from './privateFile.js';
import type { ConfigRefs } from './types.js';

/** The operator's turn key: proof that a turn's references were chosen by whoever can read this file. */
export const turnKeyFile = (dataDir: string): string => join(dataDir, DataDirEntry.turnKey);

/** Reads a turn key file; refuses one that other users could read or change. */
export async function readTurnKey(file: string): Promise<Buffer> {
  const info = await stat(file);
  if ((info.mode & 0o077) !== 0) {
    throw new Error(
      `${file} is open to other users (mode ${(info.mode & 0o777).toString(8)}); a turn key must be 0600: chmod 600 ${file}`,
    );
  }
  const text = (await readFile(file, 'utf8')).trim();
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`${file} does not hold a turn key (64 hex digits)`);
  return Buffer.from(text, 'hex');
}

/**
 * The operator's turn key under `dataDir`, created (0600, 32 random bytes) on first use. Workers
 * and clients may start at the same moment: the key is written to a private file and linked into
 * place, so every process reads the one key that won.
 */
export async function ensureTurnKey(dataDir: string): Promise<Buffer> {
  return readOrCreatePrivateFile(turnKeyFile(dataDir), readTurnKey, () => `${randomBytes(32).toString('hex')}\n`);
}

/** The hex HMAC-SHA256 proof of a turn's references under the operator's turn key. */
export function refsProof(key: Buffer, sessionId: string, refs: ConfigRefs): string {
  return createHmac('sha256', key).update(refsProofText(sessionId, refs)).digest('hex');
}

/** Whether `refs.proof` is the proof of `refs` for `sessionId` under `key`. */
export function proofHolds(key: Buffer, sessionId: string | undefined, refs: ConfigRefs): boolean {
  if (sessionId === undefined || typeof refs.proof !== 'string') return false;
  const want = Buffer.from(refsProof(key, sessionId, refs), 'hex');
  const got = Buffer.from(refs.proof, 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
}
