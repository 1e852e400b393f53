/**
 * Writes a model step's text to its attempt's log as the model produces it. Pieces are gathered
 * for {@link FLUSH_MS} and written as one record, so a fast model costs one write per interval,
 * not one per token. The log is best effort: a step whose log cannot be written still runs, and
 * its whole text reaches history when it ends.
 */
import type { Logger } from 'pino';
import type { StepTextKey, StepTextStore } from '../payloads/streamLog.js';

export type { StepTextStore };

/**
 * 50 ms: half the latency a stream reader may add to a piece of text, well under the 100 ms a
 * person notices, and at most 20 writes a second per running step.
 */
export const FLUSH_MS = 50;

export interface StepTextWriter {
  add(text: string): void;
  /** Writes what is gathered; resolves once every record is written (or given up). */
  close(): Promise<void>;
}

export function stepTextWriter(store: StepTextStore, key: StepTextKey, logger: Logger): StepTextWriter {
  let pending = '';
  let timer: NodeJS.Timeout | undefined;
  let failed = false;
  let chain = write({ begin: true, at: Date.now() });

  function write(record: Parameters<StepTextStore['append']>[1]): Promise<void> {
    return store.append(key, record).catch((err: unknown) => {
      if (!failed) logger.warn({ err, turnId: key.turnId, step: key.step }, 'model step text: log not written');
      failed = true;
    });
  }

  function flush(): void {
    timer = undefined;
    if (pending === '' || failed) return;
    const text = pending;
    pending = '';
    chain = chain.then(() => (failed ? undefined : write({ text, at: Date.now() })));
  }

  return {
    add(text) {
      if (text === '' || failed) return;
      pending += text;
      timer ??= setTimeout(flush, FLUSH_MS);
    },
    async close() {
      if (timer !== undefined) clearTimeout(timer);
      flush();
      await chain;
    },
  };
}
