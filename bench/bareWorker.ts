/**
 * A worker process for the "bare Temporal" baseline (bench/bareWorkflow.ts): the project's
 * Temporal SDK, a no-op activity. Usage: TEMPORAL_ADDRESS=host:port node bareWorker.js --task-queue Q.
 * Like a durable-mcp worker it also polls a queue of its own (`Q@pinned`, activities only), so a
 * turn can send its activities there. Prints `{"pid":N,"pinnedQueue":"..."}` once polling;
 * SIGTERM shuts it down.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
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
/** The echo server (BENCH_ECHO_SERVER, a script run with this Node), connected on the first `mcpEcho`. */
let echo: Promise<Client> | undefined;
function echoClient(): Promise<Client> {
  const script = process.env.BENCH_ECHO_SERVER;
  if (!script) throw new Error('mcpEcho needs BENCH_ECHO_SERVER, the echo server script');
  echo ??= (async () => {
    const client = new Client({ name: 'bare-bench', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [script] }));
    return client;
  })();
  return echo;
}
const activities: BareActivities = {
  async noop(input) {
    return { content: [{ type: 'text', text: input.id }], isError: false };
  },
  async mcpEcho(input) {
    const result = await (await echoClient()).callTool({ name: 'echo', arguments: input.arguments });
    return { content: result.content as { type: 'text'; text: string }[], isError: result.isError === true };
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
  await (await echo?.catch(() => undefined))?.close();
  worker.shutdown();
  pinned.shutdown();
  await running;
  await connection.close();
});
process.stdout.write(`${JSON.stringify({ pid: process.pid, pinnedQueue })}\n`);
