import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { createRequire } from 'node:module';
import type * as TemporalClient from '@temporalio/client';
import { SESSION_ID_SEARCH_ATTRIBUTE } from '../contract/index.js';
import { TailBuffer } from '../text/tailBuffer.js';
import { requireTemporalCli } from './temporalCli.js';

/**
 * `@temporalio/client`, required once a server starts: imported from an ES module, its files would be
 * scanned for export names at every start of every command that loads this module (see
 * client/temporalClient.ts).
 */
const temporalClient = () => createRequire(import.meta.url)('@temporalio/client') as typeof TemporalClient;

/** Search attributes every turn sets. */
export const SEARCH_ATTRIBUTES = { [SESSION_ID_SEARCH_ATTRIBUTE]: 'Keyword' } as const;

/**
 * Updates in flight per workflow on the tuned server (Temporal's default is 10). Parallel tool
 * calls of one turn are Updates of one workflow; a rejected Update is retried by the client with
 * backoff, so a lower limit turns 30 parallel calls into several slow rounds.
 */
export const TUNED_MAX_IN_FLIGHT_UPDATES = 200;

/**
 * Dynamic config of the tuned dev server. It has one history shard, and each of its queue
 * processors reads at most 20 times a second by default, so every transfer task (an activity task
 * to matching, the workflow task after an activity completes) waits up to 50 ms; a durable call
 * needs two. Values are JSON, as `--dynamic-config-value KEY=VALUE` expects.
 */
export const TUNED_DYNAMIC_CONFIG: Readonly<Record<string, number | string | boolean>> = {
  'history.transferProcessorMaxPollRPS': 1000,
  'history.maxInFlightUpdates': TUNED_MAX_IN_FLIGHT_UPDATES,
  // A side-effecting call sent to the turn's own queue comes back to the worker in the answer to
  // the workflow task that scheduled it, without a trip through matching (DMCP_EAGER_CALLS).
  'system.enableActivityEagerExecution': true,
};

/**
 * SQLite pragmas of the tuned server on a file. WAL with synchronous=normal syncs at checkpoints
 * instead of at every commit: a process crash loses nothing, a power loss can lose the last
 * transactions.
 */
export const TUNED_SQLITE_PRAGMAS: Readonly<Record<string, string>> = { journal_mode: 'wal', synchronous: 'normal' };

/** Options of {@link startDevServer}. */
export interface DevServerOptions {
  /**
   * Start the server tuned for this workload ({@link TUNED_DYNAMIC_CONFIG}, and
   * {@link TUNED_SQLITE_PRAGMAS} on a file). Default true; false gives the stock dev server, which
   * benchmarks compare against.
   */
  tuned?: boolean;
  /** More dynamic config values (JSON-serializable), applied over the tuned ones. */
  dynamicConfig?: Record<string, number | string | boolean>;
  /** More SQLite pragmas (only with `dbFile`), applied over the tuned ones. */
  sqlitePragmas?: Record<string, string>;
  /** SQLite file; omitted: an in-memory server (tests). */
  dbFile?: string;
  /** gRPC port; 0 or omitted picks a free one. */
  port?: number;
  /** Web UI port; 0 or omitted picks a free one. */
  uiPort?: number;
  /** No Web UI (tests that do not need it). */
  headless?: boolean;
  /** Codec endpoint the UI uses to show decoded payloads. */
  codecEndpoint?: string;
  namespace?: string;
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the server to answer (default 60 s: the first start migrates SQLite). */
  readyTimeoutMs?: number;
  /**
   * Run the server in its own process group, so a Ctrl-C in the terminal reaches only the command
   * that started it, which then stops it last (after its worker has drained).
   */
  ownProcessGroup?: boolean;
}

export interface DevServer {
  address: string;
  uiAddress?: string;
  namespace: string;
  pid: number;
  binary: string;
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The dev server process ended before it answered. */
class ExitedAtStart extends Error {}

/**
 * Starts the Temporal CLI dev server on 127.0.0.1 and waits until it answers. When it picked the
 * ports itself and the server ends before answering, it tries once more with new ones: a free
 * port found here can be taken by another process before the server binds it, and the server
 * also picks ports of its own for its internal services.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const env = options.env ?? process.env;
  const cli = await requireTemporalCli(env);
  const ownPorts = !options.port && (options.headless === true || !options.uiPort);
  try {
    return await startOnce(options, env, cli);
  } catch (err) {
    if (!(err instanceof ExitedAtStart) || !ownPorts) throw err;
    process.stderr.write(`${err.message}\nstarting it again on other ports\n`);
    return startOnce(options, env, cli);
  }
}

async function startOnce(options: DevServerOptions, env: NodeJS.ProcessEnv, cli: { path: string }): Promise<DevServer> {
  const port = options.port || (await freePort());
  const uiPort = options.headless ? undefined : options.uiPort || (await freePort());
  const namespace = options.namespace ?? 'default';
  const tuned = options.tuned ?? true;
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--namespace',
    namespace,
    '--log-level',
    'warn',
  ];
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  if (options.dbFile) {
    await mkdir(dirname(options.dbFile), { recursive: true, mode: 0o700 });
    args.push('--db-filename', options.dbFile);
    const pragmas = { ...(tuned ? TUNED_SQLITE_PRAGMAS : {}), ...options.sqlitePragmas };
    for (const [name, value] of Object.entries(pragmas)) args.push('--sqlite-pragma', `${name}=${value}`);
  }
  const dynamicConfig = { ...(tuned ? TUNED_DYNAMIC_CONFIG : {}), ...options.dynamicConfig };
  for (const [key, value] of Object.entries(dynamicConfig))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  if (uiPort) {
    args.push('--ui-port', String(uiPort), '--ui-ip', '127.0.0.1');
    if (options.codecEndpoint) args.push('--ui-codec-endpoint', options.codecEndpoint);
  } else {
    args.push('--headless');
  }
  const child: ChildProcess = spawn(cli.path, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env,
    detached: options.ownProcessGroup === true,
  });
  const stderr = new TailBuffer(8192);
  // A Go panic puts its cause first and a long stack after it: keep the start too.
  let head = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    if (head.length < 4096) head += chunk.slice(0, 4096 - head.length);
    stderr.push(chunk);
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let exitedEarly = false;
  void exited.then(() => {
    exitedEarly = true;
  });

  const address = `127.0.0.1:${port}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (exitedEarly) {
      const cause = head
        .split('\n')
        .find((l) => /^(panic|fatal|error)\b|"level":"(fatal|error)"|\blevel=(ERROR|FATAL)\b|^Error:/i.test(l.trim()));
      throw new ExitedAtStart(
        `temporal server start-dev exited (${cli.path}): ${cause ? `${cause.trim()}\n` : ''}${stderr.lastLines(8) || 'no output'}`,
      );
    }
    try {
      const connection = await temporalClient().Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        break;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(
          `temporal dev server did not answer on ${address}: ${(err as Error).message}; ${stderr.lastLines(8)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  const stop = async () => {
    if (exitedEarly) return;
    child.kill('SIGTERM');
    const killed = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killed);
  };
  return {
    address,
    uiAddress: uiPort ? `http://127.0.0.1:${uiPort}` : undefined,
    namespace,
    pid: child.pid!,
    binary: cli.path,
    stop,
  };
}
