/**
 * The one place that undoes what the data converter did to a payload: an external-storage
 * reference is fetched from its driver, then the codecs (compression, encryption) are undone in
 * reverse order. With storageFastPath.ts, it holds the project's only imports of the SDK's internal
 * payload-store helpers, so an SDK upgrade that moves them breaks two files.
 */
import { StorageDriverClaim, type ExternalStorage, type Payload, type PayloadCodec } from '@temporalio/common';
import { decodeReferencePayload, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';

export interface DecodePayloadOptions {
  codecs: PayloadCodec[];
  externalStorage?: ExternalStorage;
  /**
   * A reference to a driver that is not configured here: `throw` (a transcript cannot be complete
   * without it) or `keep` the reference as it is (the codec server shows what it has).
   */
  missingDriver?: 'throw' | 'keep';
}

/** Whether a payload is an external-storage reference rather than the data itself. */
export function isStoredReference(payload: Payload): boolean {
  return isReferencePayload(payload);
}

export async function decodePayload(payload: Payload, options: DecodePayloadOptions): Promise<Payload> {
  let p = payload;
  if (isReferencePayload(p)) {
    const ref = decodeReferencePayload(p);
    const driver = options.externalStorage?.getDriver(ref.driverName);
    if (driver) {
      [p] = (await driver.retrieve({}, [new StorageDriverClaim(ref.claimData)])) as [Payload];
    } else if ((options.missingDriver ?? 'throw') === 'throw') {
      throw new Error(`history references external storage driver "${ref.driverName}", which is not configured here`);
    } else {
      return p;
    }
  }
  for (const codec of [...options.codecs].reverse()) [p] = (await codec.decode([p])) as [Payload];
  return p;
}
