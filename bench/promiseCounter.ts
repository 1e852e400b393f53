/**
 * Preloaded (`--import`) into a worker process by bench/promises.ts: counts the promises created in
 * workflow code (a vm context's Promise, not the thread's own) on every worker thread, and writes the
 * count to `$BENCH_PROMISE_DIR/<pid>-<thread>` ten times a second.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { promiseHooks } from 'node:v8';
import { isMainThread, threadId } from 'node:worker_threads';

const dir = process.env.BENCH_PROMISE_DIR;
if (!isMainThread && dir) {
  let created = 0;
  promiseHooks.onInit((promise) => {
    if ((promise as { constructor: unknown }).constructor !== Promise) created += 1;
  });
  const file = `${dir}/${process.pid}-${threadId}`;
  // Renamed into place: a reader never sees the file half written (an empty file would read as 0).
  setInterval(() => {
    writeFileSync(`${file}.part`, String(created));
    renameSync(`${file}.part`, file);
  }, 100).unref();
}
