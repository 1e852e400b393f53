/**
 * A model step's text as it is produced, kept beside the payload store (the data dir, or the S3
 * store) so any API process can stream it while the step runs: one append-only log per attempt of
 * a step, each record passed through the payload codecs (compressed, and encrypted when encryption
 * is on). History keeps the step's whole text once it ends; these logs only add the pieces before.
 */
import { createHash } from 'node:crypto';
import { watch } from 'node:fs';
import { appendFile, mkdir, open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { Settings } from '../settings/index.js';
import { createPayloadCodecs } from './dataConverter.js';
import { S3StorageDriver } from './s3Storage.js';

// @temporalio/proto is CommonJS: its namespaces come through the default export under ESM.
const ProtoPayload = proto.temporal.api.common.v1.Payload;
const JSON_ENCODING = new TextEncoder().encode('json/plain');

/** One attempt of one model step of a turn. */
export interface StepTextKey {
  turnId: string;
  step: number;
  attempt: number;
}

/** A record of an attempt's log: the first says the attempt began; each other holds text, in order. */
export type StepTextRecord = { begin: true; at: number } | { text: string; at: number };

/** What a read returned: the records after the cursor, and the cursor to read on from. */
export interface StepTextRead {
  records: StepTextRecord[];
  cursor: number;
}

/** Where the logs are kept. A cursor is opaque to callers: 0 reads from the start. */
export interface StepTextStore {
  /** How often a reader looks for more of a running step's log when it cannot watch it. */
  readonly pollMs: number;
  append(key: StepTextKey, record: StepTextRecord): Promise<void>;
  /** Records after `cursor`; undefined when the attempt has no log (it never began). */
  read(key: StepTextKey, cursor: number): Promise<StepTextRead | undefined>;
  /**
   * Calls `onChange` whenever the attempt's log grows, where the store can tell (a file on a local
   * disk); undefined where it cannot (the reader polls). Only for a log that exists.
   */
  watch?(key: StepTextKey, onChange: () => void): { close(): void } | undefined;
}

/** The log's place: the turn ID hashed (it may hold any character), then step and attempt. */
function logName(key: StepTextKey): string {
  const turn = createHash('sha256').update(key.turnId).digest('hex').slice(0, 32);
  return `streams/${turn}/${key.step}-${key.attempt}`;
}

async function encode(record: StepTextRecord, codecs: PayloadCodec[]): Promise<Uint8Array> {
  let payloads: Payload[] = [
    { metadata: { encoding: JSON_ENCODING }, data: new TextEncoder().encode(JSON.stringify(record)) },
  ];
  for (const codec of codecs) payloads = await codec.encode(payloads);
  return ProtoPayload.encode(payloads[0]!).finish();
}

async function decode(bytes: Uint8Array, codecs: PayloadCodec[]): Promise<StepTextRecord> {
  let payloads: Payload[] = [ProtoPayload.decode(bytes)];
  for (const codec of [...codecs].reverse()) payloads = await codec.decode(payloads);
  return JSON.parse(new TextDecoder().decode(payloads[0]!.data!)) as StepTextRecord;
}

/** Logs as files of base64 lines under `<dir>/streams/`; the cursor is a byte offset. */
export class FilesystemStepTextStore implements StepTextStore {
  readonly pollMs = 25;

  constructor(
    private readonly dir: string,
    private readonly codecs: PayloadCodec[],
  ) {}

  async append(key: StepTextKey, record: StepTextRecord): Promise<void> {
    const file = join(this.dir, `${logName(key)}.log`);
    const line = `${Buffer.from(await encode(record, this.codecs)).toString('base64')}\n`;
    try {
      await appendFile(file, line, { mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await mkdir(join(file, '..'), { recursive: true, mode: 0o700 });
      await appendFile(file, line, { mode: 0o600 });
    }
  }

  watch(key: StepTextKey, onChange: () => void): { close(): void } | undefined {
    try {
      const watcher = watch(join(this.dir, `${logName(key)}.log`), { persistent: false }, onChange);
      // A watch that fails later (the file deleted) leaves the reader polling.
      watcher.on('error', () => watcher.close());
      return watcher;
    } catch {
      return undefined;
    }
  }

  async read(key: StepTextKey, cursor: number): Promise<StepTextRead | undefined> {
    const file = join(this.dir, `${logName(key)}.log`);
    // One stat when nothing is new: a reader asks every few tens of milliseconds while a step runs.
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    if (size <= cursor) return { records: [], cursor };
    const handle = await open(file, 'r');
    try {
      const buffer = Buffer.alloc(size - cursor);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, cursor);
      // A line being written has no newline yet: it is read next time.
      const end = buffer.subarray(0, bytesRead).lastIndexOf(0x0a) + 1;
      const lines = buffer.subarray(0, end).toString('utf8').split('\n').filter(Boolean);
      const records = await Promise.all(lines.map((l) => decode(Buffer.from(l, 'base64'), this.codecs)));
      return { records, cursor: cursor + end };
    } finally {
      await handle.close();
    }
  }
}

/** Logs as one object per record (`streams/<turn>/<step>-<attempt>/<n>.bin`); the cursor is a record number. */
export class S3StepTextStore implements StepTextStore {
  /** Each look is a GET: five a second per running step and reader, not forty. */
  readonly pollMs = 200;
  private readonly next = new Map<string, number>();

  constructor(
    private readonly s3: S3StorageDriver,
    private readonly codecs: PayloadCodec[],
  ) {}

  async append(key: StepTextKey, record: StepTextRecord): Promise<void> {
    const name = logName(key);
    const n = this.next.get(name) ?? 0;
    // The writer of an attempt is one process: numbering in memory is enough.
    this.next.set(name, n + 1);
    await this.s3.putObject(`${name}/${String(n).padStart(8, '0')}.bin`, await encode(record, this.codecs));
  }

  async read(key: StepTextKey, cursor: number): Promise<StepTextRead | undefined> {
    const name = logName(key);
    const records: StepTextRecord[] = [];
    for (let n = cursor; ; n++) {
      const bytes = await this.s3.getObject(`${name}/${String(n).padStart(8, '0')}.bin`);
      if (bytes === undefined) return n === 0 ? undefined : { records, cursor: n };
      records.push(await decode(bytes, this.codecs));
    }
  }
}

/** The store the settings name: the one every worker and API process of a deployment share. */
export function stepTextStoreFor(settings: Pick<Settings, 'dataDir' | 'payloads'>): StepTextStore {
  const codecs = createPayloadCodecs(settings.payloads);
  return settings.payloads.s3
    ? new S3StepTextStore(new S3StorageDriver(settings.payloads.s3), codecs)
    : new FilesystemStepTextStore(join(settings.dataDir, 'payloads'), codecs);
}
