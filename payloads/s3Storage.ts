import { createHash } from 'node:crypto';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import {
  StorageDriverClaim,
  type Payload,
  type StorageDriver,
  type StorageDriverRetrieveContext,
  type StorageDriverStoreContext,
} from '@temporalio/common';
import proto from '@temporalio/proto';
import type { S3StoreSettings } from '../settings/index.js';

// @temporalio/proto is CommonJS: its namespaces come through the default export under ESM.
const ProtoPayload = proto.temporal.api.common.v1.Payload;

const DIGEST_RE = /^[0-9a-f]{64}$/;

/** Options of {@link S3StorageDriver}: the store's settings, or a client built elsewhere (tests, custom credentials). */
export interface S3StorageDriverOptions extends S3StoreSettings {
  /** A ready client; default: one built from the settings and the AWS SDK's default credential chain. */
  client?: S3Client;
}

/** The AWS SDK, loaded on first use: a command that never touches the S3 store does not pay for it. */
const sdk = () => import('@aws-sdk/client-s3');

/** The S3 client for a store's settings. Credentials: the SDK's default chain (AWS_ACCESS_KEY_ID, profiles, instance roles). */
export async function s3ClientFor(settings: S3StoreSettings): Promise<S3Client> {
  // The SDK warns on every Node 20 process that later SDK releases need Node 22; the lockfile pins
  // this release, and the warning would otherwise end up in every command's output.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { S3Client } = await sdk();
  const config: S3ClientConfig = {
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    // Every object is verified against its SHA-256 on read, so the SDK's own optional checksums add
    // nothing, and several S3-compatible servers reject them.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
  };
  return new S3Client(config);
}

/**
 * Keeps large payloads in an S3-compatible bucket, so every worker and client of a cluster reads
 * what any of them wrote. Like the filesystem driver: content-addressed (`<prefix><sha256>.bin`, so a
 * retried store rewrites the same object), verified against its digest on read, and run after the
 * codecs, so what is uploaded is compressed, and encrypted when DMCP_ENCRYPTION_KEY is set.
 * The claim holds only the digest: a reference in history cannot point the worker at another key.
 */
export class S3StorageDriver implements StorageDriver {
  readonly name = 'dmcp-s3';
  readonly type = 'durable-mcp.s3';
  readonly bucket: string;
  readonly prefix: string;
  private readonly options: S3StorageDriverOptions;
  private client?: Promise<S3Client>;

  constructor(options: S3StorageDriverOptions) {
    this.bucket = options.bucket;
    this.prefix = options.prefix;
    this.options = options;
  }

  private s3(): Promise<S3Client> {
    this.client ??= this.options.client ? Promise.resolve(this.options.client) : s3ClientFor(this.options);
    return this.client;
  }

  /** The object key of a digest. */
  keyOf(digest: string): string {
    return `${this.prefix}${digest}.bin`;
  }

  async store(context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const bytes = ProtoPayload.encode(payload).finish();
        const digest = createHash('sha256').update(bytes).digest('hex');
        try {
          const { PutObjectCommand } = await sdk();
          await (
            await this.s3()
          ).send(
            new PutObjectCommand({
              Bucket: this.bucket,
              Key: this.keyOf(digest),
              Body: bytes,
              ContentType: 'application/octet-stream',
            }),
            { abortSignal: context.abortSignal },
          );
        } catch (err) {
          throw new Error(
            `storing payload ${digest} in s3://${this.bucket}/${this.keyOf(digest)} failed: ${describeS3Error(err)}`,
          );
        }
        return new StorageDriverClaim({ sha256: digest });
      }),
    );
  }

  async retrieve(context: StorageDriverRetrieveContext, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (claim) => {
        const digest = claim.claimData.sha256 ?? '';
        if (!DIGEST_RE.test(digest)) throw new Error(`bad external payload claim ${JSON.stringify(claim.claimData)}`);
        const where = `s3://${this.bucket}/${this.keyOf(digest)}`;
        let bytes: Uint8Array;
        const { GetObjectCommand, NoSuchKey } = await sdk();
        try {
          const out = await (
            await this.s3()
          ).send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(digest) }), {
            abortSignal: context.abortSignal,
          });
          if (!out.Body) throw new Error('empty response');
          bytes = await out.Body.transformToByteArray();
        } catch (err) {
          if (err instanceof NoSuchKey)
            throw new Error(
              `external payload ${digest} is not in ${where} (deleted by a lifecycle rule, or another bucket/prefix?)`,
            );
          throw new Error(`reading external payload ${where} failed: ${describeS3Error(err)}`);
        }
        if (createHash('sha256').update(bytes).digest('hex') !== digest)
          throw new Error(`external payload ${digest} in ${where} is corrupt`);
        return ProtoPayload.decode(bytes);
      }),
    );
  }
  /** Writes one object under the store's prefix (`key` is relative to it). */
  async putObject(key: string, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
    const { PutObjectCommand } = await sdk();
    try {
      await (
        await this.s3()
      ).send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: `${this.prefix}${key}`,
          Body: bytes,
          ContentType: 'application/octet-stream',
        }),
        { abortSignal: signal },
      );
    } catch (err) {
      throw new Error(`writing s3://${this.bucket}/${this.prefix}${key} failed: ${describeS3Error(err)}`);
    }
  }

  /** One object under the store's prefix; undefined when there is none. */
  async getObject(key: string, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    const { GetObjectCommand, NoSuchKey } = await sdk();
    try {
      const out = await (
        await this.s3()
      ).send(new GetObjectCommand({ Bucket: this.bucket, Key: `${this.prefix}${key}` }), { abortSignal: signal });
      return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
    } catch (err) {
      if (err instanceof NoSuchKey) return undefined;
      throw new Error(`reading s3://${this.bucket}/${this.prefix}${key} failed: ${describeS3Error(err)}`);
    }
  }
}

/** An S3 error in one line: the service's code and message, never request headers or credentials. */
export function describeS3Error(err: unknown): string {
  const e = err as { name?: string; Code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  const code = e.Code ?? e.name ?? 'Error';
  return `${code}${status ? ` (HTTP ${status})` : ''}: ${e.message ?? String(err)}`;
}
