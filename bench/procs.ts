/**
 * Process helpers shared by the side-by-side benchmarks: start a helper process and wait for the
 * JSON line it prints once ready, stop it by PID, read RSS and CPU time from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const distRoot = fileURLToPath(new URL('../', import.meta.url));
export const workerProcessScript = fileURLToPath(new URL('../test/fixtures/workerProcess.js', import.meta.url));
export const echoFixture = fileURLToPath(new URL('../test/fixtures/echoServer.js', import.meta.url));
export const httpFixture = fileURLToPath(new URL('../test/fixtures/httpFixtureServer.js', import.meta.url));
export const loopbackOnly = fileURLToPath(new URL('../test/fixtures/loopbackOnly.js', import.meta.url));
export const everythingServer = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

/** A helper process this run started; `info` is the first JSON line it printed. */
export interface Started<T = Record<string, unknown>> {
  child: ChildProcess;
  pid: number;
  info: T;
  /** The end of its stderr (for error messages). */
  stderr(): string;
}

const started = new Set<ChildProcess>();

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  execArgv?: string[];
  cwd?: string;
  /** A regular expression the ready line must match (default: any line starting with `{`). */
  ready?: RegExp;
  timeoutMs?: number;
  /** Own process group (so its children can be signalled with it). */
  detached?: boolean;
}

/** Starts `node [execArgv] script ...args` and waits for its ready line on stdout. */
export function startNode<T = Record<string, unknown>>(
  script: string,
  args: string[],
  options: StartOptions = {},
): Promise<Started<T>> {
  const child = spawn(process.execPath, [...(options.execArgv ?? []), script, ...args], {
    env: options.env ?? { PATH: process.env.PATH },
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  if (child.pid === undefined) return Promise.reject(new Error(`could not start ${script}`));
  started.add(child);
  child.once('exit', () => started.delete(child));
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    err = (err + c).slice(-4000);
    if (process.env.BENCH_VERBOSE) process.stderr.write(c);
  });
  const ready = options.ready ?? /^\{.*\}$/m;
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () =>
        reject(new Error(`${script} printed no ready line within ${options.timeoutMs ?? 60_000} ms; stderr: ${err}`)),
      options.timeoutMs ?? 60_000,
    );
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited early (${code}); stderr: ${err}`));
    };
    child.once('exit', onExit);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      if (out === undefined) return;
      out += chunk;
      const line = ready.exec(out)?.[0];
      if (line) {
        clearTimeout(timer);
        child.off('exit', onExit);
        out = '';
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve({ child, pid: child.pid!, info: JSON.parse(line) as T, stderr: () => err });
      }
    });
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
export async function stopProcess(p: Started<unknown> | undefined, graceMs = 10_000): Promise<void> {
  if (!p) return;
  const { child } = p;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Last resort at exit: SIGKILL every helper process this run started and that is still running. */
export function killStarted(): void {
  for (const child of started) {
    try {
      if (child.pid) process.kill(child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, starting with field 3 (state).
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Resident set size of one process in KiB (0 when it is gone). */
export function rssKiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

const TICKS_PER_SECOND = 100;

/** User + system CPU time of one process in ms (utime + stime; children not included). */
export function cpuMs(pid: number): number {
  const f = statFields(pid);
  if (!f) return 0;
  // state(3) ppid(4) ... utime(14) stime(15): index = field - 3.
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND;
}

/** Every live descendant of `root` (children, grandchildren, ...), from /proc. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (!f || f[0] === 'Z') continue;
    const ppid = Number(f[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const c of children.get(queue.shift()!) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

/** CPU ms of the children a process has reaped (cutime + cstime). */
function reapedCpuMs(pid: number): number {
  const f = statFields(pid);
  return f ? ((Number(f[13]) + Number(f[14])) * 1000) / TICKS_PER_SECOND : 0;
}

/**
 * CPU ms of a process, and of its descendants (live ones plus those already reaped), separately.
 * Servers that exited between two readings without being reaped are missed.
 */
export function treeCpuMs(pid: number): { self: number; children: number } {
  const live = descendants(pid);
  return { self: cpuMs(pid), children: reapedCpuMs(pid) + live.reduce((sum, p) => sum + cpuMs(p) + reapedCpuMs(p), 0) };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs a benchmark's main; on failure prints the stack, stops every process it started, exits 1. */
export function runBench(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    killStarted();
    process.exit(1);
  });
}
