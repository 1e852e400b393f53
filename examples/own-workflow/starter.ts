/**
 * Starts `echoAndAdd` on the worker's task queue and prints its result. The client takes the same
 * plugin, for its data converter.
 *
 *   TEMPORAL_ADDRESS=localhost:7233 node starter.js
 */
import { Client, Connection } from '@temporalio/client';
import { DurableMcpPlugin } from 'durable-mcp/plugin';
import type { echoAndAdd } from './workflows.js';

const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
const client = new Client({ connection, plugins: [new DurableMcpPlugin()] });
const result = await client.workflow.execute<typeof echoAndAdd>('echoAndAdd', {
  taskQueue: 'own-workflow',
  workflowId: `echo-and-add-${Date.now()}`,
  args: ['hello from my workflow'],
});
console.log(result);
await connection.close();
