/**
 * bench/tasks.ts's worker: a durable-mcp worker alone in its process (as test/fixtures/workerProcess.ts)
 * that also writes its own memory every --sample-ms as one JSON line `{"t","heapUsed","rss"}` to the file
 * named by --memory-log, after a full garbage collection (run it with --expose-gc), so the heap it
 * reports is what is still reachable, not garbage waiting for the collector. The heap is the main
 * thread's (activities, MCP clients); the SDK runs workflows in a worker thread of its own, which
 * only the RSS includes.
 * Usage: node --expose-gc tasksWorker.js --task-queue Q --bundle FILE --memory-log FILE --sample-ms N; prints
 * `{"workerQueue","pid"}` once it polls; SIGTERM shuts it down.
 */
import { appendFileSync } from 'node:fs';
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
}, Number(arg('sample-ms')));

stopOnSigterm(async () => {
  clearInterval(sampler);
  await worker.shutdown();
  await connection.close();
});
process.stdout.write(`${JSON.stringify({ workerQueue: worker.workerQueue, pid: process.pid })}\n`);
