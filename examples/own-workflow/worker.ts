/**
 * A worker of your own Temporal application with durable-mcp's plugin: it runs `workflows.ts` and
 * every MCP call they make. The servers are the operator's, given here (or in the `mcp.json` of a
 * config dir: `new DurableMcpPlugin({ configDir })`); workflow code only picks among them by name.
 *
 *   TEMPORAL_ADDRESS=localhost:7233 node worker.js
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { DurableMcpPlugin } from 'durable-mcp/plugin';

export const TASK_QUEUE = 'own-workflow';

const plugin = new DurableMcpPlugin({
  mcpServers: { everything: { command: process.execPath, args: [serverEverything(), 'stdio'] } },
});
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
const worker = await Worker.create({
  connection,
  taskQueue: TASK_QUEUE,
  workflowsPath: fileURLToPath(new URL('./workflows.js', import.meta.url)),
  plugins: [plugin],
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => worker.shutdown());
console.log(`worker polling ${TASK_QUEUE}`);
await worker.run();
await connection.close();

/** The entry script of `@modelcontextprotocol/server-everything`, installed beside this example. */
function serverEverything(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve('@modelcontextprotocol/server-everything/package.json');
  const { bin } = require(manifest) as { bin: Record<string, string> };
  return join(dirname(manifest), bin['mcp-server-everything']!);
}
