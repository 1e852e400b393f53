import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import pino from 'pino';
import { TurnClient } from '../../client/turnClient.js';
import { bundleWorkflows, startWorker, type RunningWorker } from '../../worker/index.js';

/** The Temporal server the test run started (test/run.ts sets TEMPORAL_ADDRESS). */
export function temporalAddress(): string {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is not set: run the tests with `npm test`, which starts a dev server');
  return address;
}

export const fixtureServer = fileURLToPath(new URL('../fixtures/echoServer.js', import.meta.url));
export const everythingServer = fileURLToPath(new URL('../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));

let runtimeInstalled = false;
let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Each test gets its own task queue, so tests never pick up each other's work. */
export function uniqueQueue(name: string): string {
  return `test-${name}-${randomBytes(4).toString('hex')}`;
}

export async function tempDir(prefix = 'dmcp-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function readLines(file: string): Promise<string[]> {
  try {
    return (await readFile(file, 'utf8')).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

export interface Harness {
  client: TurnClient;
  worker: RunningWorker;
  taskQueue: string;
  logs: string[];
  stop(): Promise<void>;
}

/** A real worker (own queue) and a TurnClient against the test run's dev server. */
export async function startHarness(name: string, env: NodeJS.ProcessEnv = {}): Promise<Harness> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    runtimeInstalled = true;
  }
  bundle ??= bundleWorkflows();
  const taskQueue = uniqueQueue(name);
  const logs: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const worker = await startWorker({
    connection,
    logger,
    taskQueue,
    workflowBundle: await bundle,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_NO_USER_CONFIG: '1', ...env },
  });
  const clientConnection = await Connection.connect({ address: temporalAddress() });
  const client = new TurnClient({ client: new Client({ connection: clientConnection }), taskQueue });
  return {
    client,
    worker,
    taskQueue,
    logs,
    async stop() {
      await worker.shutdown();
      await connection.close();
      await client.close();
    },
  };
}
