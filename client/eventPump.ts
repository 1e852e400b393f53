/**
 * Events that producers push, read as an async iterator: what a turn's stream and a session's
 * share. `produce` starts the producers; the iterator ends when it resolves (after the events it
 * pushed are read), throws what a producer failed with, and stops them all when `signal` aborts or
 * the reader stops reading.
 */
import { setMaxListeners } from 'node:events';

export async function* pumpEvents<T>(
  signal: AbortSignal | undefined,
  produce: (emit: (event: T) => void, stop: AbortSignal, fail: (err: unknown) => void) => Promise<void>,
): AsyncGenerator<T> {
  const stop = new AbortController();
  // Every turn a session stream follows listens on it: dozens are expected, not a leak.
  setMaxListeners(0, stop.signal);
  const abort = () => stop.abort();
  signal?.addEventListener('abort', abort, { once: true });
  if (signal?.aborted) abort();
  const queue: T[] = [];
  let ended = false;
  let failed: { err: unknown } | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  stop.signal.addEventListener('abort', notify, { once: true });
  const fail = (err: unknown) => {
    if (!stop.signal.aborted) failed ??= { err };
    notify();
  };
  const emit = (event: T) => {
    queue.push(event);
    notify();
  };
  produce(emit, stop.signal, fail).then(() => {
    ended = true;
    notify();
  }, fail);
  try {
    for (;;) {
      if (queue.length > 0) {
        yield queue.shift()!;
        continue;
      }
      if (failed) throw failed.err;
      if (ended || stop.signal.aborted) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    signal?.removeEventListener('abort', abort);
    stop.abort();
  }
}
