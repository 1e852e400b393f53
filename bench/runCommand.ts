/**
 * Wall time of the one-shot CLI with `dev` running: `durable-mcp run` with one echo call of the
 * fixture echo server, N times against one `durable-mcp dev` (its own data dir, ports 0), median;
 * plus the time to load the embedded module (`import('./dist/cli/embedded.js')`) in a fresh Node.
 *
 * Run on demand: `npm run build:bench && node dist/bench/runCommand.js` (part of `npm run bench`;
 * it starts its own `dev`, whatever TEMPORAL_ADDRESS says). Knobs: BENCH_RUN_TIMES (default 5).
 */
import { spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { tempDir } from '../test/support/harness.js';
import { distRoot, echoFixture, runBench } from './procs.js';
import { machineLine, percentile, projectRoot, writeSection } from './support.js';

const TIMES = Number(process.env.BENCH_RUN_TIMES ?? 5);
const TITLE = '`durable-mcp run` with one call while `dev` runs';
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const cliMain = join(distRoot, 'cli/main.js');
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** Runs `node ...args` to its end; wall time in ms, or throws with its stderr. */
function timeNode(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out = (out + c).slice(-4000)));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (out = (out + c).slice(-4000)));
    child.once('error', reject);
    child.once('exit', (code) => {
      const ms = performance.now() - t0;
      if (code === 0) resolve(ms);
      else reject(new Error(`node ${args.join(' ')} exited ${code}: ${out}`));
    });
  });
}

async function main(): Promise<void> {
  const started = Date.now();
  const dir = await tempDir('dmcp-bench-run-');
  const dataDir = join(dir, 'data');
  const work = join(dir, 'work');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DMCP_DATA_DIR: dataDir,
    DMCP_DEV_PORT: '0',
    DMCP_DEV_UI_PORT: '0',
    DMCP_CODEC_PORT: '0',
    DMCP_API_PORT: '0',
    DMCP_NO_USER_CONFIG: '1',
  };
  await mkdir(work, { recursive: true });

  // Module load of the embedded path, in a fresh Node each time (no dev needed).
  const loadMs: number[] = [];
  for (let i = 0; i < TIMES; i++) loadMs.push(await timeNode(['-e', "import('./dist/cli/embedded.js')"], env, projectRoot));
  const bareNodeMs: number[] = [];
  for (let i = 0; i < TIMES; i++) bareNodeMs.push(await timeNode(['-e', ''], env, projectRoot));
  log(`embedded.js load: ${loadMs.map((x) => fmt(x)).join(', ')} ms; node -e '': ${bareNodeMs.map((x) => fmt(x)).join(', ')} ms`);

  log('starting durable-mcp dev');
  const devStart = performance.now();
  const dev = spawn(process.execPath, [cliMain, 'dev'], { env, cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let devErr = '';
  dev.stderr.setEncoding('utf8').on('data', (c: string) => (devErr = (devErr + c).slice(-4000)));
  const exited = new Promise<number | null>((r) => dev.once('exit', (code) => r(code)));
  const runMs: number[] = [];
  let devReadyMs = NaN;
  let load: number[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`dev did not get ready within 120 s; stderr: ${devErr}`)), 120_000);
      dev.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`dev exited early (${code}); stderr: ${devErr}`));
      });
      dev.stdout.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        if (out.includes('durable-mcp dev is running.')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    devReadyMs = performance.now() - devStart;
    log(`dev ready in ${fmt(devReadyMs)} ms`);
    load = loadavg();
    const args = [cliMain, 'run', '--mcp', `e:${process.execPath} ${echoFixture}`, '--call', 'mcp__e__echo {"text":"hi"}'];
    for (let i = 0; i < TIMES; i++) {
      const ms = await timeNode(args, env, work);
      runMs.push(ms);
      log(`run ${i + 1}/${TIMES}: ${fmt(ms)} ms`);
    }
  } finally {
    if (dev.exitCode === null && dev.signalCode === null) {
      dev.kill('SIGINT');
      const timer = setTimeout(() => dev.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }

  const med = (xs: number[]) => percentile(xs, 50);
  const body = `Command: \`npm run build:bench && node dist/bench/runCommand.js\` (part of \`npm run bench\`). Machine: ${await machineLine()}. Took ${((Date.now() - started) / 1000).toFixed(0)} s. Load average (1/5/15 min) when the runs started: ${load.map((x) => x.toFixed(2)).join(' / ')}.

\`durable-mcp dev\` started with its own DMCP_DATA_DIR (a temp dir) and DMCP_DEV_PORT, DMCP_DEV_UI_PORT, DMCP_CODEC_PORT=0 (ready in ${fmt(devReadyMs)} ms); then ${TIMES} times, one after the other with the same DMCP_DATA_DIR, \`node dist/cli/main.js run --mcp 'e:<node> test/fixtures/echoServer.js' --call 'mcp__e__echo {"text":"hi"}'\`, wall time from spawn to exit. Module load: \`node -e "import('./dist/cli/embedded.js')"\` from spawn to exit, ${TIMES} times (includes Node's own start).

| measure | runs (ms) | median (ms) |
|---|---|---|
| \`durable-mcp run\`, one echo call, \`dev\` running | ${runMs.map((x) => fmt(x)).join(', ')} | ${fmt(med(runMs))} |
| \`node -e "import('./dist/cli/embedded.js')"\` | ${loadMs.map((x) => fmt(x)).join(', ')} | ${fmt(med(loadMs))} |
| \`node -e ''\` (Node's own start, for reference) | ${bareNodeMs.map((x) => fmt(x)).join(', ')} | ${fmt(med(bareNodeMs))} |

No "before" column: this run measures the current build only (the issue's figure for before is about 1.7 s).
`;
  process.stdout.write(`${body}\n`);
  await writeSection(TITLE, body);
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s; dev exited ${String(await exited)}`);
}

runBench(main);
