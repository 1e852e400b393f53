/**
 * `durable-mcp payloads gc`: deletes what the filesystem payload store no longer needs, and
 * `durable-mcp payloads codec-server`: the codec service alone (the cluster's Temporal UI decodes
 * through it), without a worker.
 */
import { lstat, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDuration, payloadDir, type Settings } from '../settings/index.js';
import { UsageError } from './common.js';

/**
 * `30d`, `720h`, `90m`...: durations of days as well as the usual units.
 * @throws UsageError naming `option` when the value is not a positive duration.
 */
export function parseRetention(value: string, option: string): number {
  const days = /^\s*(\d+(?:\.\d+)?)\s*d\s*$/.exec(value);
  let ms: number;
  try {
    ms = days ? Math.round(Number(days[1]) * 86_400_000) : parseDuration(value, option);
  } catch {
    ms = Number.NaN;
  }
  if (!(ms > 0))
    throw new UsageError(`${option} must be a positive duration such as 30d or 720h, got ${JSON.stringify(value)}`);
  return ms;
}

/** A stored payload (`<sha256>.bin`) or a store's leftover staging file (`<sha256>.bin.<hex>.tmp`). */
const STORE_FILE = /^[0-9a-f]{64}\.bin(\.[0-9a-f]+\.tmp)?$/;

/** What {@link collectGarbage} did (or would do, on a dry run). */
export interface GcResult {
  dir: string;
  deleted: number;
  deletedBytes: number;
  kept: number;
  /** Files in the folder that are not the store's: never touched. */
  ignored: number;
}

/**
 * Deletes the store's files under `dir` last written more than `olderThanMs` ago. A payload is
 * rewritten (new mtime) whenever any turn stores the same content again, so a file older than the
 * namespace retention (plus the longest a turn runs) is referenced by no history Temporal still keeps.
 */
export async function collectGarbage(options: {
  dir: string;
  olderThanMs: number;
  now?: number;
  dryRun?: boolean;
}): Promise<GcResult> {
  const cutoff = (options.now ?? Date.now()) - options.olderThanMs;
  const result: GcResult = { dir: options.dir, deleted: 0, deletedBytes: 0, kept: 0, ignored: 0 };
  let names: string[];
  try {
    names = await readdir(options.dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return result;
    throw err;
  }
  for (const name of names) {
    if (!STORE_FILE.test(name)) {
      result.ignored++;
      continue;
    }
    const file = join(options.dir, name);
    const stat = await lstat(file).catch(() => undefined);
    if (!stat?.isFile()) {
      result.ignored++;
      continue;
    }
    if (stat.mtimeMs >= cutoff) {
      result.kept++;
      continue;
    }
    if (!options.dryRun) {
      try {
        await unlink(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
    }
    result.deleted++;
    result.deletedBytes += stat.size;
  }
  return result;
}

/** `payloads gc --older-than <duration> [--dry-run]`. */
export async function payloadsGcCommand(
  settings: Settings,
  opts: { olderThan: string; dryRun?: boolean },
  print: (line: string) => void,
): Promise<void> {
  const olderThanMs = parseRetention(opts.olderThan, '--older-than');
  if (settings.payloads.s3) {
    print(
      `note: new payloads go to s3://${settings.payloads.s3.bucket}/${settings.payloads.s3.prefix}; expire those with a bucket lifecycle rule (see docs/cluster.md). Collecting the filesystem store only.`,
    );
  }
  const r = await collectGarbage({ dir: payloadDir(settings), olderThanMs, dryRun: opts.dryRun });
  const mib = (r.deletedBytes / 1024 / 1024).toFixed(1);
  print(
    `${r.dir}: ${opts.dryRun ? 'would delete' : 'deleted'} ${r.deleted} payload file(s) (${mib} MiB) last written more than ${opts.olderThan} ago; kept ${r.kept}${r.ignored ? `; left ${r.ignored} other file(s) alone` : ''}`,
  );
}

/**
 * `payloads codec-server`: `/encode` and `/decode` for the Temporal UI and CLI, reading the payload
 * store the settings name (S3 in a cluster). Listens on 127.0.0.1 only, like the one `dev` starts:
 * whoever reaches it can read every payload. Prints its URL, then serves until stopped.
 */
export async function codecServerCommand(
  settings: Settings,
  opts: { port?: string; allowedOrigin: string[] },
  print: (line: string) => void,
): Promise<{ close(): Promise<void> }> {
  const [{ startCodecServer }, { dataConverterFor }] = await Promise.all([
    import('../payloads/codecServer.js'),
    import('../payloads/dataConverter.js'),
  ]);
  const dataConverter = dataConverterFor(settings);
  const port = opts.port === undefined ? settings.dev.codecPort : Number(opts.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be a port number (0-65535), got ${JSON.stringify(opts.port)}`);
  const codec = await startCodecServer({
    codecs: dataConverter.payloadCodecs ?? [],
    externalStorage: dataConverter.externalStorage,
    port,
    token: settings.dev.codecToken,
    allowedOrigins: opts.allowedOrigin,
  });
  const store = settings.payloads.s3
    ? `s3://${settings.payloads.s3.bucket}/${settings.payloads.s3.prefix}`
    : payloadDir(settings);
  print(
    `codec server: ${codec.url} (payloads ${settings.payloads.encryptionKey ? 'compressed and encrypted' : 'compressed'}; store ${store})`,
  );
  return codec;
}
