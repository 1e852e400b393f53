/**
 * History bytes per call: how much one small echo call and one 100 KB result add to a
 * turn's history, with the project's data converter (compression + external storage) and with the
 * SDK's default (plain JSON). Run on demand: `npm run build:bench && node dist/bench/history.js`.
 * Uses TEMPORAL_ADDRESS if set, else starts an in-memory dev server.
 */
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { TurnClient } from '../client/turnClient.js';
import { startDevServer } from '../dev/devServer.js';
import { createDataConverter } from '../payloads/dataConverter.js';
import { bundleWorkflows, startWorker } from '../worker/index.js';
import { fixtureServer, tempDir, uniqueQueue } from '../test/support/harness.js';
import { machineLine, writeSection } from './support.js';

const bigServer = fixtureServer.replace(/echoServer\.js$/, 'bigServer.js');
const History = proto.temporal.api.history.v1.History;

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const server = process.env.TEMPORAL_ADDRESS ? undefined : await startDevServer({ headless: true });
  const address = process.env.TEMPORAL_ADDRESS ?? server!.address;
  const bundle = await bundleWorkflows();
  const dir = await tempDir('dmcp-bench-');
  const rows: string[] = [];
  try {
    for (const [label, converter] of [
      ['default converter (plain JSON)', undefined],
      [
        'durable-mcp converter (brotli + external storage over 16 KiB)',
        createDataConverter({ payloadDir: join(dir, 'payloads') }),
      ],
    ] as [string, DataConverter | undefined][]) {
      const taskQueue = uniqueQueue('bench-history');
      const connection = await NativeConnection.connect({ address });
      const worker = await startWorker({
        connection,
        taskQueue,
        workflowBundle: bundle,
        dataConverter: converter,
        logger: pino({ level: 'silent' }),
        env: { PATH: process.env.PATH, DMCP_NO_USER_CONFIG: '1' },
      });
      const client = new TurnClient({
        client: new Client({ connection: await Connection.connect({ address }), dataConverter: converter }),
        taskQueue,
      });
      const bytesAfter = async (calls: { name: string; arguments: Record<string, unknown> }[]) => {
        const turn = await client.startTurn({
          sessionId: `bench-${Date.now()}-${Math.random().toString(16).slice(2, 8)}`,
          workspace: dir,
          servers: {
            inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`, `big:${process.execPath} ${bigServer}`],
          },
        });
        for (const [i, c] of calls.entries()) await turn.callTool({ id: `c${i}`, ...c });
        await turn.end();
        const history = await client.client.workflow.getHandle(turn.turnId).fetchHistory();
        return { bytes: History.encode(history).finish().byteLength, events: history.events?.length ?? 0 };
      };
      const echo = { name: 'mcp__fixture__echo', arguments: { text: 'extension check' } };
      const big = { name: 'mcp__big__text', arguments: { bytes: 100 * 1024, seed: 'bench' } };
      const base = await bytesAfter([echo]);
      const small = await bytesAfter(Array.from({ length: 21 }, () => echo));
      const large = await bytesAfter([echo, ...Array.from({ length: 10 }, () => big)]);
      const perSmall = (small.bytes - base.bytes) / 20;
      const perLarge = (large.bytes - base.bytes) / 10;
      rows.push(
        `| ${label} | ${base.bytes} | ${perSmall.toFixed(0)} | ${((small.events - base.events) / 20).toFixed(1)} | ${perLarge.toFixed(0)} |`,
      );
      await worker.shutdown();
      await connection.close();
      await client.close();
    }
  } finally {
    await server?.stop();
  }
  const body = [
    `Command: \`npm run build:bench && node dist/bench/history.js\`. Machine: ${await machineLine()}.`,
    '',
    'Bytes of the serialized history (the protobuf Temporal stores). A turn with one echo call is the base;',
    'the per-call figures are the increment of 20 more echo calls, or of 10 calls returning 100 KB of text.',
    '',
    '| data converter | turn with 1 call (bytes) | + per small echo call | events per call | + per 100 KB result |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  process.stdout.write(`${body}\n`);
  await writeSection('history', 'History bytes per call', body);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
