/**
 * A shortcut through the SDK's payload-store pass when it has nothing to do. The SDK runs that pass
 * over every workflow activation and completion, every local activity's task and result, and every
 * Update on the client; for each payload field it sets up a batch (an `AbortSignal.any`, about
 * 30 µs of CPU on Node 20, some 7 of them per fast call in the worker) before it looks at a
 * payload, and it encodes each payload to weigh it. Nearly every payload of an interactive call is
 * far below the threshold and none is a reference, so the runner is given a check first that
 * answers exactly what it would have answered (the same array back) and otherwise hands over to
 * the SDK's own code. With decodePayload.ts, the project's only use of the SDK's internals.
 */
import type { ExternalStorage, Payload } from '@temporalio/common';
import { ExternalStorageRunner, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';

/** Below this, {@link encodedSizeAtMost} is a sound bound (every length fits a 3-byte varint). */
const BOUND_SOUND_BELOW = 2 * 1024 * 1024;

/**
 * At most the encoded size of `payload` (of less than 2 MiB: each field's tag and length take at
 * most 12 bytes). Every payload of every workflow task passes the codec, and nearly all are far
 * below its compression bound, so the exact size, an encoding of the whole payload, is taken only
 * near that bound.
 */
export function encodedSizeAtMost(payload: Payload): number {
  let size = 12 + (payload.data?.byteLength ?? 0);
  for (const [key, value] of Object.entries(payload.metadata ?? {}))
    size += 12 + Buffer.byteLength(key) + (value?.byteLength ?? 0);
  return size;
}

const INSTALLED = Symbol.for('durable-mcp.storageFastPath');

type Runner = ExternalStorageRunner & { [INSTALLED]?: true };

/**
 * Gives the SDK's `ExternalStorageRunner` (one per pass, process-wide) its shortcut: `store` returns
 * the payloads as they are when each is surely below the threshold (the runner keeps every payload
 * below it), `retrieve` when none is a reference (the runner passes every other payload through).
 * Idempotent; an SDK whose runner lacks these methods is left alone.
 */
export function installStorageFastPath(): void {
  const runner = ExternalStorageRunner.prototype as Runner;
  if (runner[INSTALLED] || typeof runner.store !== 'function' || typeof runner.retrieve !== 'function') return;
  const { store, retrieve } = runner;
  runner.store = async function (this: ExternalStorageRunner, payloads, options) {
    const threshold = (this as unknown as { externalStorage: ExternalStorage }).externalStorage.payloadSizeThreshold;
    const bound = Math.min(threshold, BOUND_SOUND_BELOW);
    // A payload with external details is a reference already: the runner's own code weighs it.
    const keptAsIs = (p: Payload) => !p.externalPayloads?.length && encodedSizeAtMost(p) < bound;
    if (payloads.every(keptAsIs)) return payloads;
    return store.call(this, payloads, options);
  };
  runner.retrieve = async function (this: ExternalStorageRunner, payloads, options) {
    if (!payloads.some(isReferencePayload)) return payloads;
    return retrieve.call(this, payloads, options);
  };
  runner[INSTALLED] = true;
}
