/**
 * A worker process for the "bare Temporal" baseline (bench/bareWorkflow.ts): the project's
 * Temporal SDK, a no-op activity. Usage: TEMPORAL_ADDRESS=host:port node bareWorker.js --task-queue Q.
 * Like a durable-mcp worker it also polls a queue of its own (`Q@pinned`, activities only), so a
 * turn can send its activities there. Prints `{"pid":N,"pinnedQueue":"..."}` once polling;
 * SIGTERM shuts it down.
 */
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { stopOnSigterm } from '../test/support/standalone.js';
import type { BareActivities } from './bareWorkflow.js';

const address = process.env.TEMPORAL_ADDRESS;
const i = process.argv.indexOf('--task-queue');
const taskQueue = i >= 0 ? process.argv[i + 1] : undefined;
if (!address || !taskQueue) {
  process.stderr.write('usage: TEMPORAL_ADDRESS=host:port node bareWorker.js --task-queue Q\n');
  process.exit(2);
}

Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
const activities: BareActivities = {
  async noop(input) {
    return { content: [{ type: 'text', text: input.id }], isError: false };
  },
};
const workflowBundle = await bundleWorkflowCode({
  workflowsPath: fileURLToPath(new URL('./bareWorkflow.js', import.meta.url)),
  logger: new DefaultLogger('WARN'),
});
const connection = await NativeConnection.connect({ address });
const pinnedQueue = `${taskQueue}@pinned`;
const worker = await Worker.create({ connection, taskQueue, workflowBundle, activities });
const pinned = await Worker.create({ connection, taskQueue: pinnedQueue, activities });
const running = Promise.all([worker.run(), pinned.run()]);
stopOnSigterm(async () => {
  worker.shutdown();
  pinned.shutdown();
  await running;
  await connection.close();
});
process.stdout.write(`${JSON.stringify({ pid: process.pid, pinnedQueue })}\n`);
