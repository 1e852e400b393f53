/**
 * A worker process for the peer benchmark, run from the peer's install directory (its own
 * `@temporalio/*` versions). Usage:
 *   TEMPORAL_ADDRESS=host:port node peerWorker.js --task-queue Q --idle MS --servers JSON
 * `--idle 0` is the integration's stateless mode (a new MCP client, and for stdio a new server
 * process, for every listTools/callTool activity); a positive value is its pooled mode (one cached
 * connection per server per worker process). `--servers` maps names to `{command,args}` (stdio)
 * or `{url}` (Streamable HTTP). Prints `{"pid":N}` once polling; SIGTERM shuts it down.
 */
import { fileURLToPath } from 'node:url';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

type ServerSpec = { command: string; args?: string[] } | { url: string };

const address = process.env.TEMPORAL_ADDRESS;
const taskQueue = arg('task-queue');
const idle = Number(arg('idle') ?? '300000');
const servers = JSON.parse(arg('servers') ?? '{}') as Record<string, ServerSpec>;
if (!address || !taskQueue) {
  process.stderr.write(
    'usage: TEMPORAL_ADDRESS=host:port node peerWorker.js --task-queue Q --idle MS --servers JSON\n',
  );
  process.exit(2);
}

Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
const factories = Object.fromEntries(
  Object.entries(servers).map(([name, spec]) => [
    name,
    () =>
      createMCPClient({
        transport:
          'url' in spec
            ? { type: 'http', url: spec.url }
            : new Experimental_StdioMCPTransport({
                command: spec.command,
                args: spec.args ?? [],
                env: { PATH: process.env.PATH ?? '' },
                stderr: 'ignore',
              }),
      }),
  ]),
);
const noModel = () => {
  throw new Error('the benchmark drives tools only; no model');
};
const plugin = new AiSdkPlugin({
  modelProvider: { specificationVersion: 'v4', languageModel: noModel, embeddingModel: noModel, imageModel: noModel },
  mcpClientFactories: factories,
  mcpConnectionIdleTimeout: idle,
});
const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({
  connection,
  taskQueue,
  workflowsPath: fileURLToPath(new URL('./peerWorkflow.js', import.meta.url)),
  activities: {
    async noop(input: { id: string }) {
      return { content: [{ type: 'text', text: input.id }], isError: false };
    },
  },
  // The plugin's types come from the peer's install; the project's worker types do not know them.
  plugins: [plugin as never],
});
const running = worker.run();
// Self-contained on purpose (no stopOnSigterm import): this file is copied into the peer's install.
process.once('SIGTERM', () => {
  worker.shutdown();
  running
    .then(() => connection.close())
    .then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
});
process.stdout.write(`${JSON.stringify({ pid: process.pid })}\n`);
