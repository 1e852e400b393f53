import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import pino from 'pino';
import { installRuntimeLogger } from '../../worker/runtimeLogger.js';
import { TurnClient } from '../../client/turnClient.js';
import type { ServerStatus } from '../../contract/index.js';
import { scrubSecrets } from '../../config/secrets.js';
import { bundleWorkflows, startWorker, type RunningWorker } from '../../worker/index.js';

/** The Temporal server the test run started (test/run.ts sets TEMPORAL_ADDRESS). */
export function temporalAddress(): string {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address)
    throw new Error('TEMPORAL_ADDRESS is not set: run the tests with `npm test`, which starts a dev server');
  return address;
}

export const fixtureServer = fileURLToPath(new URL('../fixtures/echoServer.js', import.meta.url));
export const everythingServer = fileURLToPath(
  new URL('../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

let runtimeInstalled = false;
/**
 * What the Temporal SDK logged in this process (one pino line each), through the same logger and
 * scrubbing as the CLI installs; also written to stderr as before. The runtime is installed once per
 * process, so it scrubs the secrets of every harness started so far.
 */
export const runtimeLogs: string[] = [];
const harnessEnvs: NodeJS.ProcessEnv[] = [];
let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Each test gets its own task queue, so tests never pick up each other's work. */
export function uniqueQueue(name: string): string {
  return `test-${name}-${randomBytes(4).toString('hex')}`;
}

/** Folders {@link tempDir} made in this process; removed when it exits. */
const tempDirs = new Set<string>();
let removeOnExit = false;

/** Removes every folder {@link tempDir} made so far (also runs when the process exits). */
export function removeTempDirs(): void {
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch (err) {
      process.stderr.write(`could not remove test folder ${dir}: ${(err as Error).message}\n`);
    }
  }
  tempDirs.clear();
}

/**
 * A new folder in the OS temp dir, removed when the process exits (each test file runs in its own
 * process, so that is after its last test and after-hook), also when a test failed. Leaves it with
 * DMCP_KEEP_TEST_DIRS=1, to look at what a failed test wrote.
 */
export async function tempDir(prefix = 'dmcp-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  if (process.env.DMCP_KEEP_TEST_DIRS !== '1') {
    if (!removeOnExit) process.once('exit', removeTempDirs);
    removeOnExit = true;
    tempDirs.add(dir);
  }
  return dir;
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
export interface HarnessOptions {
  /** Another Temporal server than the test run's (e.g. one with the UI on). */
  address?: string;
  /** Codecs and external storage, shared by the worker and the client. */
  dataConverter?: DataConverter;
  /** The worker's workflow cache; 0 replays every workflow task from the start of the history. */
  maxCachedWorkflows?: number;
}

export async function startHarness(
  name: string,
  env: NodeJS.ProcessEnv = {},
  options: HarnessOptions = {},
): Promise<Harness> {
  const workerEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_NO_USER_CONFIG: '1', ...env };
  harnessEnvs.push(workerEnv);
  if (!runtimeInstalled) {
    const sdkLogger = pino(
      { level: 'debug' },
      {
        write: (line: string) => {
          runtimeLogs.push(line);
          process.stderr.write(line);
        },
      },
    );
    installRuntimeLogger(sdkLogger, 'WARN', (text) => harnessEnvs.reduce((out, e) => scrubSecrets(out, e), text));
    runtimeInstalled = true;
  }
  bundle ??= bundleWorkflows();
  const taskQueue = uniqueQueue(name);
  const logs: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
  const address = options.address ?? temporalAddress();
  const { dataConverter } = options;
  const connection = await NativeConnection.connect({ address });
  const worker = await startWorker({
    connection,
    logger,
    taskQueue,
    dataConverter,
    workflowBundle: await bundle,
    ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
    env: workerEnv,
  });
  const clientConnection = await Connection.connect({ address });
  const client = new TurnClient({ client: new Client({ connection: clientConnection, dataConverter }), taskQueue });
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

// --- lifecycle helpers (processes, PIDs, config files) ---

export const lifecycleServer = fileURLToPath(new URL('../fixtures/lifecycleServer.js', import.meta.url));
export const workerProcessScript = fileURLToPath(new URL('../fixtures/workerProcess.js', import.meta.url));

/** A worker in its own OS process (`test/fixtures/workerProcess.ts`), so a test can SIGKILL it. */
export interface WorkerProcess {
  child: ChildProcess;
  /** The worker's own queue (where its session's calls go). */
  workerQueue: string;
  pid: number;
}

/**
 * Starts a worker process on `taskQueue` with the workflow bundle at `bundleFile` (without one, the
 * worker bundles its own workflows), and resolves once it polls. Its environment is PATH,
 * `DMCP_LOG_LEVEL=warn` and `env`, nothing else inherited. `script`: another build's worker process.
 */
export function startWorkerProcess(
  taskQueue: string,
  bundleFile: string | undefined,
  env: NodeJS.ProcessEnv,
  script = workerProcessScript,
): Promise<WorkerProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [script, '--task-queue', taskQueue, ...(bundleFile ? ['--bundle', bundleFile] : [])],
      {
        env: { PATH: process.env.PATH, DMCP_LOG_LEVEL: 'warn', ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    const timer = setTimeout(() => reject(new Error('worker process did not start in 30 s')), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) {
        clearTimeout(timer);
        const { workerQueue, pid } = JSON.parse(line) as { workerQueue: string; pid: number };
        resolve({ child, workerQueue, pid });
      }
    });
    child.once('exit', (code) => reject(new Error(`worker process exited early (${code})`)));
  });
}

/** SIGTERM, then SIGKILL after 10 s; nothing for a worker already gone (or never started). */
export async function stopWorkerProcess(w: WorkerProcess | undefined): Promise<void> {
  if (!w || w.child.exitCode !== null || w.child.signalCode !== null) return;
  const exited = new Promise((r) => w.child.once('exit', r));
  w.child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  if (w.child.exitCode === null) w.child.kill('SIGKILL');
}

/** An inline `--mcp` spec that runs the lifecycle fixture with `args`. */
export function lifecycleSpec(name: string, ...args: string[]): string {
  return `${name}:${process.execPath} ${lifecycleServer} --name ${name} ${args.join(' ')}`.trimEnd();
}

/** An mcp.json entry that runs the lifecycle fixture with `args`. */
export function lifecycleEntry(name: string, ...args: string[]): { command: string; args: string[] } {
  return { command: process.execPath, args: [lifecycleServer, '--name', name, ...args] };
}

/** A function that writes each `mcpServers` it is given to a new `mcp-<n>.json` in `dir`, and returns the file's path. */
export function configFiles(dir: string): (mcpServers: Record<string, unknown>) => Promise<string> {
  let written = 0;
  return async (mcpServers) => {
    const file = join(dir, `mcp-${++written}.json`);
    await writeFile(file, JSON.stringify({ mcpServers }));
    return file;
  };
}

/** The status of server `name`, failing the test when the turn's status has none. */
export function serverStatus(servers: readonly ServerStatus[], name: string): ServerStatus {
  const found = servers.find((s) => s.name === name);
  assert.ok(found, `server "${name}" is in the status`);
  return found;
}

/** Writes `{ mcpServers }` to `file` (tests rewrite it between turns to change the config). */
export async function writeMcpJson(file: string, mcpServers: Record<string, unknown>): Promise<void> {
  await writeFile(file, `${JSON.stringify({ mcpServers }, null, 2)}\n`);
}

/**
 * Makes `dir` (with its parents) a worker's config dir: `mcp.json` with `mcpServers` (JSON indented
 * by `indent`, default none) and, given `settings`, `settings.json`. Returns the environment that
 * points a worker at it: DMCP_CONFIG_DIR, with the user config on.
 */
export async function writeConfigDir(
  dir: string,
  mcpServers: Record<string, unknown>,
  options: { settings?: unknown; indent?: number } = {},
): Promise<{ DMCP_NO_USER_CONFIG: '0'; DMCP_CONFIG_DIR: string }> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'mcp.json'), JSON.stringify({ mcpServers }, null, options.indent));
  if (options.settings !== undefined)
    await writeFile(join(dir, 'settings.json'), JSON.stringify(options.settings, null, 2));
  return { DMCP_NO_USER_CONFIG: '0', DMCP_CONFIG_DIR: dir };
}

/** Whether a process exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** PIDs of every live process whose process group is one of `groups` (read from /proc). */
export function processesInGroups(groups: Iterable<number>): number[] {
  const wanted = new Set(groups);
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name: state ppid pgrp ...
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z' && wanted.has(Number(pgrp))) found.push(Number(entry));
    } catch {
      // The process went away while we looked.
    }
  }
  return found;
}

/** Polls `check` until it returns true or `timeoutMs` passes; returns the last result. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** SIGKILLs each process group (and process) that is still alive; for after() hooks. */
export function killGroups(pids: Iterable<number>): void {
  for (const pid of pids) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

/** Writes the shared workflow bundle to a file, so separate worker processes skip bundling. */
export async function workflowBundleFile(dir: string): Promise<string> {
  bundle ??= bundleWorkflows();
  const path = join(dir, 'workflow-bundle.js');
  await writeFile(path, (await bundle).code);
  return path;
}

/** Like {@link waitFor}, but fails naming `what` when `check` never holds. */
export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  if (!(await waitFor(check, timeoutMs, 100))) throw new Error(`timed out waiting for ${what}`);
}

/** `p`, or a failure naming `what` when it has not settled within `ms`: keeps a hang from eating the suite's time. */
export async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// --- the CLI as a user runs it ---

/** The built `durable-mcp` command. */
export const cliScript = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

/** What one `durable-mcp` command did. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `durable-mcp <args>` with exactly `env` (nothing inherited) and resolves with its exit code and output; at most 90 s. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [cliScript, ...args], {
      env,
      timeout: 90_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A `durable-mcp dev` process started by {@link startDevProcess}. */
export interface DevProcess {
  child: ChildProcess;
  /** The Temporal address dev printed. */
  address: string;
  dataDir: string;
  /** Resolves with the exit code when dev ends. */
  exit: Promise<number | null>;
  /** What dev printed so far (its addresses once it is running). */
  stdout(): string;
}

/**
 * Starts `durable-mcp dev` in its own process group (like a shell job, so a test can signal the
 * group as a terminal would) on free ports, with a fresh data dir whose config dir holds the fixture
 * server, plus `env(dataDir)`; resolves once dev says it is running. `onSpawn` gets the process at
 * once, so the caller can stop it even if the start fails.
 */
export async function startDevProcess(
  prefix: string,
  env: (dataDir: string) => NodeJS.ProcessEnv,
  onSpawn: (child: ChildProcess) => void,
): Promise<DevProcess> {
  const dataDir = await tempDir(prefix);
  const configDir = join(dataDir, 'config');
  await mkdir(configDir);
  await writeFile(
    join(configDir, 'mcp.json'),
    JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [fixtureServer] } } }),
  );
  const child = spawn(process.execPath, [cliScript, 'dev'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DMCP_DATA_DIR: dataDir,
      DMCP_CONFIG_DIR: configDir,
      DMCP_DEV_PORT: '0',
      DMCP_DEV_UI_PORT: '0',
      DMCP_CODEC_PORT: '0',
      DMCP_API_PORT: '0',
      ...env(dataDir),
    },
  });
  onSpawn(child);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-4000)));
  await waitUntil(
    'dev to start',
    async () => out.includes('durable-mcp dev is running.') || child.exitCode !== null,
    90_000,
  );
  if (child.exitCode !== null) throw new Error(`dev exited early (${child.exitCode}): ${out}\n${err}`);
  const address = /Temporal server:\s+(\S+)/.exec(out)?.[1];
  if (!address) throw new Error(`dev printed no Temporal address: ${out}`);
  return { child, address, dataDir, exit, stdout: () => out };
}

/**
 * Starts `node ...args` (PATH and `env` only) and records its PID in `started`, for the caller to
 * end; resolves with group 1 of the first match of `pattern` on its stdout (10 s at most).
 */
export async function startListening(
  args: string[],
  pattern: RegExp,
  started: Set<number>,
  env: NodeJS.ProcessEnv = {},
): Promise<string> {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${args.join(' ')}`);
  started.add(child.pid);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-2000)));
  child.stdout.setEncoding('utf8');
  const found = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(
      () => reject(new Error(`nothing from ${args.join(' ')} within 10 s; stderr: ${stderr}`)),
      10_000,
    );
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const match = pattern.exec(buffered);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}; stderr: ${stderr}`)));
  });
  child.stdout.resume();
  return found;
}
