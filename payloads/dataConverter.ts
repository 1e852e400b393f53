import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants as zlib } from 'node:zlib';
import {
  ExternalStorage,
  StorageDriverClaim,
  type DataConverter,
  type Payload,
  type PayloadCodec,
  type StorageDriver,
} from '@temporalio/common';
import proto from '@temporalio/proto';
import type { S3StoreSettings, Settings } from '../settings/index.js';
import { S3StorageDriver } from './s3Storage.js';
import { encodedSizeAtMost, installStorageFastPath } from './storageFastPath.js';

export { encodedSizeAtMost };

const compress = promisify(brotliCompress);
const decompress = promisify(brotliDecompress);
// @temporalio/proto is CommonJS: its namespaces come through the default export under ESM.
const ProtoPayload = proto.temporal.api.common.v1.Payload;

const ENCODING_COMPRESSED = 'binary/dmcp-brotli';
const ENCODING_ENCRYPTED = 'binary/dmcp-aes256gcm';
const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();
const enc = (s: string) => textEncoder.encode(s);
const dec = (b: Uint8Array | null | undefined) => (b ? textDecoder.decode(b) : '');
const COMPRESSED = enc(ENCODING_COMPRESSED);
/** Whether `payload` is one this codec compressed: its encoding's bytes, compared without decoding them. */
const isCompressed = (payload: Payload) => {
  const e = payload.metadata?.encoding;
  return e?.byteLength === COMPRESSED.byteLength && e.every((b, i) => b === COMPRESSED[i]);
};

/**
 * Payloads smaller than this are left as they are. An interactive call's input and result are a
 * few hundred bytes, which brotli shrinks by a few dozen, for about 0.1 ms of CPU and a thread-pool
 * round trip each way, on every payload of every call (bench/results/codec.md, "Compressing small payloads").
 */
export const MIN_COMPRESS_BYTES = 1024;

/**
 * Largest payload a compressed payload may inflate to. Brotli packs 64 MiB of zeros into about a
 * hundred bytes, and the codec server and the worker decode what others wrote: without a cap a few
 * KB of request allocate gigabytes in the worker's process. The largest payload the project writes
 * is a workflow result or call outcome holding whole tool results (a 10 MiB image is 13.4 MiB of
 * base64; a batch result repeats every outcome), so 256 MiB leaves a wide margin.
 */
export const MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024;

/** A compressed payload inflated past the limit: a bomb or a corrupt payload, never decoded. */
export class PayloadTooLargeError extends Error {
  override name = 'PayloadTooLargeError';
}

/**
 * Compresses every payload worth compressing (brotli; kept only when it saves space), so history
 * holds less of each tool result. Payloads it did not compress pass through.
 */
export class CompressionCodec implements PayloadCodec {
  private readonly maxDecompressedBytes: number;
  private readonly minBytes: number;

  /** @param options.minBytes smallest payload compressed (default {@link MIN_COMPRESS_BYTES}). */
  constructor(options: { maxDecompressedBytes?: number; minBytes?: number } = {}) {
    this.maxDecompressedBytes = options.maxDecompressedBytes ?? MAX_DECOMPRESSED_BYTES;
    this.minBytes = options.minBytes ?? MIN_COMPRESS_BYTES;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    // Nearly every payload is below the bound: the same array back, not an async closure each and a Promise.all.
    if (payloads.every((p) => encodedSizeAtMost(p) < this.minBytes)) return payloads;
    return Promise.all(payloads.map((payload) => this.encodeOne(payload)));
  }

  private async encodeOne(payload: Payload): Promise<Payload> {
    if (encodedSizeAtMost(payload) < this.minBytes) return payload;
    const raw = ProtoPayload.encode(payload).finish();
    if (raw.byteLength < this.minBytes) return payload;
    // Quality 4: most of brotli's gain on JSON at a fraction of the CPU of the default (11).
    const packed = await compress(raw, {
      params: { [zlib.BROTLI_PARAM_QUALITY]: 4, [zlib.BROTLI_PARAM_SIZE_HINT]: raw.byteLength },
    });
    if (packed.byteLength >= raw.byteLength) return payload;
    return { metadata: { encoding: enc(ENCODING_COMPRESSED) }, data: packed };
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    // Nearly no payload was compressed: the same array back, without a closure and a promise each.
    if (!payloads.some(isCompressed)) return payloads;
    return Promise.all(payloads.map((payload) => (isCompressed(payload) ? this.decodeOne(payload) : payload)));
  }

  private async decodeOne(payload: Payload): Promise<Payload> {
    let raw: Buffer;
    try {
      // zlib stops inflating at the cap instead of allocating whatever the stream asks for.
      raw = await decompress(payload.data ?? new Uint8Array(), { maxOutputLength: this.maxDecompressedBytes });
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new PayloadTooLargeError(
          `compressed payload inflates to more than ${this.maxDecompressedBytes} bytes (larger than any payload this project writes): refused`,
        );
      }
      throw err;
    }
    return ProtoPayload.decode(raw);
  }
}

/** An AES-256 key and its ID (recorded with each payload, so keys can rotate). */
export interface EncryptionKey {
  /** A hash prefix of the key, recorded with each payload it encrypts; never the key itself. */
  id: string;
  /** The 32 key bytes. */
  key: Buffer;
}

/** Parses DMCP_ENCRYPTION_KEY: 32 bytes as base64 or 64 hex digits. The ID is a hash prefix, never the key. */
export function parseEncryptionKey(value: string): EncryptionKey {
  const trimmed = value.trim();
  // Exactly one spelling each: Node's base64 decoder skips unknown characters and stops at
  // padding, so without these patterns a mistyped or doubled key decodes to some other 32 bytes.
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) key = Buffer.from(trimmed, 'hex');
  else if (/^[A-Za-z0-9+/]{43}=?$/.test(trimmed)) key = Buffer.from(trimmed, 'base64');
  else if (/^[A-Za-z0-9_-]{43}$/.test(trimmed)) key = Buffer.from(trimmed, 'base64url');
  if (key?.length !== 32) {
    throw new Error(
      'DMCP_ENCRYPTION_KEY must be 32 bytes, written as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)',
    );
  }
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 12), key };
}

/** AES-256-GCM over the whole encoded payload; the key ID is in the metadata. */
export class EncryptionCodec implements PayloadCodec {
  private readonly keys: Map<string, Buffer>;

  /** `current` encrypts; `current` and `previous` decrypt (key rotation). */
  constructor(
    private readonly current: EncryptionKey,
    previous: EncryptionKey[] = [],
  ) {
    this.keys = new Map([current, ...previous].map((k) => [k.id, k.key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
      const body = Buffer.concat([cipher.update(ProtoPayload.encode(payload).finish()), cipher.final()]);
      return {
        metadata: { encoding: enc(ENCODING_ENCRYPTED), 'encryption-key-id': enc(this.current.id) },
        data: Buffer.concat([iv, body, cipher.getAuthTag()]),
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (dec(payload.metadata?.encoding) !== ENCODING_ENCRYPTED) return payload;
      const keyId = dec(payload.metadata?.['encryption-key-id']);
      const key = this.keys.get(keyId);
      if (!key) throw new Error(`payload was encrypted with key ${keyId}, which this process does not have`);
      const data = Buffer.from(payload.data ?? new Uint8Array());
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, 12));
      decipher.setAuthTag(data.subarray(data.length - 16));
      return ProtoPayload.decode(
        Buffer.concat([decipher.update(data.subarray(12, data.length - 16)), decipher.final()]),
      );
    });
  }
}

/**
 * Keeps large payloads in files under `<dir>`, content-addressed (so a retried store is a no-op),
 * and leaves a small reference in history. Runs after the codecs, so what lands on
 * disk is compressed, and encrypted when encryption is on.
 */
export class FilesystemStorageDriver implements StorageDriver {
  readonly name = 'dmcp-fs';
  readonly type = 'durable-mcp.fs';

  constructor(readonly dir: string) {}

  async store(_context: unknown, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    // Tool results may hold anything a server read: only the worker's user may list or read them.
    // mkdir's mode applies to the directories it creates (the data dir too, when it is new); a
    // store dir made earlier with the umask's mode is narrowed here.
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await chmod(this.dir, 0o700);
    return Promise.all(
      payloads.map(async (payload) => {
        const bytes = ProtoPayload.encode(payload).finish();
        const digest = createHash('sha256').update(bytes).digest('hex');
        const file = join(this.dir, `${digest}.bin`);
        const staging = `${file}.${randomBytes(4).toString('hex')}.tmp`;
        await writeFile(staging, bytes, { mode: 0o600 });
        await rename(staging, file);
        return new StorageDriverClaim({ sha256: digest });
      }),
    );
  }

  async retrieve(_context: unknown, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (claim) => {
        const digest = claim.claimData.sha256 ?? '';
        if (!/^[0-9a-f]{64}$/.test(digest))
          throw new Error(`bad external payload claim ${JSON.stringify(claim.claimData)}`);
        const bytes = await readFile(join(this.dir, `${digest}.bin`));
        if (createHash('sha256').update(bytes).digest('hex') !== digest)
          throw new Error(`external payload ${digest} is corrupt`);
        return ProtoPayload.decode(bytes);
      }),
    );
  }
}

/** Settings of the project's data converter. */
export interface DataConverterOptions {
  /** Where external payloads are kept (DMCP_DATA_DIR/payloads by default). */
  payloadDir: string;
  /** DMCP_ENCRYPTION_KEY; unset: compression only. */
  encryptionKey?: string;
  /** DMCP_ENCRYPTION_KEYS_PREVIOUS: earlier keys, decrypt only, so a key can rotate under running turns. */
  previousEncryptionKeys?: string[];
  /**
   * Payloads above this many bytes (after the codecs) go to external storage. Default 16 KiB: a
   * turn of hundreds of calls then stays far below Temporal's 10 MB history warning, while small
   * results stay readable in the UI without a fetch.
   */
  externalThresholdBytes?: number;
  /**
   * The S3-compatible store (settings, or a driver built elsewhere): new large payloads go there;
   * the filesystem store stays readable for payloads written before the switch.
   */
  s3?: S3StoreSettings | S3StorageDriver;
}

/** The payload codecs alone (what the codec server and the transcript decoder need). */
export function createPayloadCodecs(
  options: Pick<DataConverterOptions, 'encryptionKey' | 'previousEncryptionKeys'>,
): PayloadCodec[] {
  const codecs: PayloadCodec[] = [new CompressionCodec()];
  if (options.encryptionKey) {
    codecs.push(
      new EncryptionCodec(
        parseEncryptionKey(options.encryptionKey),
        (options.previousEncryptionKeys ?? []).map(parseEncryptionKey),
      ),
    );
  }
  return codecs;
}

/** One data converter for workers and clients, so both sides read what the other wrote. */
export function createDataConverter(options: DataConverterOptions): DataConverter {
  installStorageFastPath();
  const fs = new FilesystemStorageDriver(options.payloadDir);
  const s3 =
    options.s3 === undefined
      ? undefined
      : options.s3 instanceof S3StorageDriver
        ? options.s3
        : new S3StorageDriver(options.s3);
  return {
    payloadCodecs: createPayloadCodecs(options),
    externalStorage: new ExternalStorage({
      drivers: s3 ? [s3, fs] : [fs],
      ...(s3 ? { driverSelector: () => s3 } : {}),
      payloadSizeThreshold: options.externalThresholdBytes ?? 16 * 1024,
    }),
  };
}

/**
 * The data converter the settings ask for (payload store under the data dir, encryption key), the
 * one every worker and client of a deployment must share.
 */
export function dataConverterFor(settings: Pick<Settings, 'dataDir' | 'payloads'>): DataConverter {
  return createDataConverter({
    payloadDir: join(settings.dataDir, 'payloads'),
    encryptionKey: settings.payloads.encryptionKey,
    previousEncryptionKeys: settings.payloads.previousEncryptionKeys,
    externalThresholdBytes: settings.payloads.externalThresholdBytes,
    ...(settings.payloads.s3 ? { s3: settings.payloads.s3 } : {}),
  });
}
