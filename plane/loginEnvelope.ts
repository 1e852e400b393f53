/**
 * The format of one login file: a JSON envelope whose value is AES-256-GCM encrypted. The server
 * name, the login ID, when a pending login started and when a login was refused are in clear text
 * (so status is told without the key) and bound to the ciphertext as associated data, so none of
 * them can be changed without the file failing to decrypt.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { nameProblem } from '../config/names.js';

/** A token store that cannot do what was asked: names the file or setting and what to do. */
export class TokenStoreError extends Error {
  override name = 'TokenStoreError';
}

/** What a login file holds: a completed login or one still waiting for the browser. */
export type Kind = 'login' | 'pending';

/** A login file as it is on disk. */
export interface Envelope {
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

/** What an envelope keeps in clear text besides its kind and server. */
export type ClearFields = Pick<Envelope, 'loginId' | 'startedAt' | 'deadAt'>;

/** A key's ID: a hash prefix, never the key. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

/** @throws TokenStoreError when `server` cannot name a login file. */
export function checkServer(server: string): void {
  const problem = nameProblem(server);
  if (problem) throw new TokenStoreError(problem);
}

function aad(e: Pick<Envelope, 'v' | 'kind' | 'server' | 'loginId' | 'startedAt' | 'deadAt'>): Buffer {
  return Buffer.from(JSON.stringify([e.v, e.kind, e.server, e.loginId ?? null, e.startedAt ?? null, e.deadAt ?? null]));
}

/** Encrypts `value` into an envelope; pure apart from the random IV. */
export function seal(kind: Kind, server: string, clear: ClearFields, value: unknown, key: Buffer): Envelope {
  const head = { v: 1 as const, kind, server, ...clear };
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(head));
  const data = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return {
    ...head,
    keyId: keyId(key),
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  };
}

/** Decrypts an envelope with whichever of `keys` wrote it. @throws TokenStoreError naming `file`. */
export function unseal(envelope: Envelope, keys: Buffer[], file: string): unknown {
  const candidates = [
    ...keys.filter((k) => keyId(k) === envelope.keyId),
    ...keys.filter((k) => keyId(k) !== envelope.keyId),
  ];
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

/** The envelope in a file's text. @throws TokenStoreError naming `file` when it is not one of `kind` for `server`. */
export function parseEnvelope(text: string, file: string, kind: Kind, server: string): Envelope {
  let e: Partial<Envelope>;
  try {
    e = JSON.parse(text) as Partial<Envelope>;
  } catch (err) {
    throw new TokenStoreError(`${file}: not a durable-mcp login file (${(err as Error).message})`);
  }
  if (
    e?.v !== 1 ||
    e.kind !== kind ||
    typeof e.keyId !== 'string' ||
    typeof e.iv !== 'string' ||
    typeof e.tag !== 'string' ||
    typeof e.data !== 'string'
  ) {
    throw new TokenStoreError(
      `${file}: not a durable-mcp ${kind} file (fields v, kind, keyId, iv, tag, data expected)`,
    );
  }
  if (e.server !== server)
    throw new TokenStoreError(`${file}: holds server ${JSON.stringify(e.server)}, not ${JSON.stringify(server)}`);
  return e as Envelope;
}
