import type { ExternalStorage, Payload, PayloadCodec } from '@temporalio/common';
import { decodePayload } from './decodePayload.js';
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;

function isPayload(value: unknown): value is Payload {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { data?: unknown; metadata?: unknown };
  return v.data instanceof Uint8Array && typeof v.metadata === 'object' && v.metadata !== null;
}

/**
 * Replaces every payload in a fetched history with its plain form: external references are
 * fetched from their driver, then the codecs (compression, encryption) are undone, so a transcript
 * can be read from history alone. Mutates and returns `history`.
 */
export async function decodeHistoryPayloads(
  history: History,
  options: { codecs: PayloadCodec[]; externalStorage?: ExternalStorage },
): Promise<History> {
  const decodeOne = (payload: Payload) => decodePayload(payload, options);
  const pending: Promise<void>[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => {
        if (isPayload(item)) pending.push(decodeOne(item).then((p) => void (node[i] = p)));
        else walk(item);
      });
      return;
    }
    if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return;
    const record = node as Record<string, unknown>;
    for (const [key, value] of Object.entries(record)) {
      if (isPayload(value)) pending.push(decodeOne(value).then((p) => void (record[key] = p)));
      else walk(value);
    }
  };
  walk(history);
  await Promise.all(pending);
  return history;
}
