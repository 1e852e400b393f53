/**
 * bench/tasks.ts's worker: a durable-mcp worker alone in its process (as test/fixtures/workerProcess.ts)
 * that also writes its own memory every --sample-ms as one JSON line `{"t","heapUsed","rss"}` to the file
 * named by --memory-log, after a full garbage collection (run it with --expose-gc), so the heap it
 * reports is what is still reachable, not garbage waiting for the collector. The SDK runs workflows
 * in worker threads of their own, each with its own heap: every thread it starts here does the same
 * for its heap (lines with `"thread"`), so workflow state is measured apart from the main thread's
 * (activities, MCP clients).
 * Usage: node --expose-gc tasksWorker.js --task-queue Q --bundle FILE --memory-log FILE --sample-ms N; prints
 * `{"workerQueue","pid"}` once it polls; SIGTERM shuts it down.
 */
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { WorkerOptions } from 'node:worker_threads';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { startWorker } from '../worker/index.js';
import { stopOnSigterm } from '../test/support/standalone.js';

function arg(name: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? process.argv[i + 1] : undefined;
  if (!value) throw new Error(`tasksWorker.js: --${name} is required`);
  return value;
}

const address = process.env.TEMPORAL_ADDRESS;
if (!address) throw new Error('tasksWorker.js: TEMPORAL_ADDRESS is required');
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('tasksWorker.js: run it with --expose-gc');
const memoryLog = arg('memory-log');
const sampleMs = Number(arg('sample-ms'));

/*
 * The SDK starts its workflow threads with `new (require('node:worker_threads').Worker)(file)`: each
 * thread first starts a sampler of its own heap (gc is there too: --expose-gc is process-wide), then
 * runs the SDK's file as it would have.
 */
const threads = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads');
const SdkWorker = threads.Worker;
threads.Worker = class extends SdkWorker {
  constructor(file: string | URL, options: WorkerOptions = {}) {
    const sampler = `const { appendFileSync } = require('node:fs');
const { getHeapStatistics } = require('node:v8');
const { threadId } = require('node:worker_threads');
setInterval(() => {
  globalThis.gc();
  appendFileSync(${JSON.stringify(memoryLog)}, JSON.stringify({ t: Date.now(), thread: threadId, heapUsed: getHeapStatistics().used_heap_size }) + '\\n');
}, ${sampleMs}).unref();
require(${JSON.stringify(String(file))});`;
    super(sampler, { ...options, eval: true });
  }
};

Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
const connection = await NativeConnection.connect({ address });
const worker = await startWorker({
  connection,
  logger: pino({ level: process.env.DMCP_LOG_LEVEL ?? 'warn' }, pino.destination(2)),
  taskQueue: arg('task-queue'),
  env: process.env,
  workflowBundle: { codePath: arg('bundle') },
});

const sampler = setInterval(() => {
  gc();
  const { heapUsed, rss } = process.memoryUsage();
  appendFileSync(memoryLog, `${JSON.stringify({ t: Date.now(), heapUsed, rss })}\n`);
}, sampleMs);

stopOnSigterm(async () => {
  clearInterval(sampler);
  await worker.shutdown();
  await connection.close();
});
process.stdout.write(`${JSON.stringify({ workerQueue: worker.workerQueue, pid: process.pid })}\n`);
