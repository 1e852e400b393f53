/**
 * Wall time of the one-shot CLI with `dev` running: `durable-mcp run` with one echo call of the
 * fixture echo server, against two `durable-mcp dev`s running at once (each its own data dir, ports
 * 0): one as `dev` starts by default (one warm spare per trusted stdio server) and one with
 * DMCP_WARM_SPARES=0. With BENCH_ALT_CLI=<other build>/dist/cli/main.js (label BENCH_ALT_LABEL) the
 * other build's CLI runs against the same two devs, side by side: rounds of every (CLI, dev) pair,
 * order rotated every round. Plus the CLI's start-up alone (`main.js --version`) of each build.
 *
 * Run on demand: `npm run build:bench && node dist/bench/runCommand.js` (part of `npm run bench`;
 * it starts its own `dev`s, whatever TEMPORAL_ADDRESS says). Knobs: BENCH_RUN_TIMES (rounds,
 * default 5), BENCH_RUN_PAUSE_MS (pause between two runs, default 1000).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { tempDir } from '../test/support/harness.js';
import { distRoot, echoFixture, runBench, sleep } from './procs.js';
import { machineLine, percentile, writeSection } from './support.js';

const TIMES = Number(process.env.BENCH_RUN_TIMES ?? 5);
const PAUSE_MS = Number(process.env.BENCH_RUN_PAUSE_MS ?? 1000);
const TITLE = '`durable-mcp run` with one call while `dev` runs';
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const med = (xs: number[]) => percentile(xs, 50);

/** CPU time (user + system) of each timed process, by the wall-time array it was pushed with. */
const cpuOf = new WeakMap<number[], number[]>();

/**
 * Runs `node ...args` to its end under bash's `time` (which reports the CPU time of the process, a
 * measure a loaded machine disturbs less than wall time); pushes its wall time in ms to `wall` and its
 * CPU time to `cpuOf.get(wall)`, or throws with its output.
 */
function timeNode(args: string[], env: NodeJS.ProcessEnv, cwd: string, wall: number[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const script = 'TIMEFORMAT="cpu %3U %3S"; time "$@" >"$OUT" 2>&1';
    const out = join(cwd, `.bench-out-${process.pid}`);
    const child = spawn('bash', ['-c', script, 'bash', process.execPath, ...args], {
      env: { ...env, OUT: out },
      cwd,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-4000)));
    child.once('error', reject);
    child.once('exit', (code) => {
      const ms = performance.now() - t0;
      const m = /cpu (\d+\.\d+) (\d+\.\d+)\s*$/.exec(err);
      if (code !== 0 || !m) {
        reject(new Error(`node ${args.join(' ')} exited ${code}: ${err}; see ${out}`));
        return;
      }
      wall.push(ms);
      if (!cpuOf.has(wall)) cpuOf.set(wall, []);
      cpuOf.get(wall)!.push((Number(m[1]) + Number(m[2])) * 1000);
      resolve();
    });
  });
}

interface Dev {
  label: string;
  env: NodeJS.ProcessEnv;
  work: string;
  process: ChildProcess;
  exited: Promise<number | null>;
  readyMs: number;
  /** The first run on this dev: its server has no spare yet. */
  firstRunMs: number[];
}

async function startDev(label: string, dir: string, extraEnv: NodeJS.ProcessEnv): Promise<Dev> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DMCP_DATA_DIR: join(dir, 'data'),
    DMCP_DEV_PORT: '0',
    DMCP_DEV_UI_PORT: '0',
    DMCP_CODEC_PORT: '0',
    DMCP_API_PORT: '0',
    DMCP_NO_USER_CONFIG: '1',
  };
  const work = join(dir, 'work');
  await mkdir(work, { recursive: true });
  const started = performance.now();
  const child = spawn(process.execPath, [join(distRoot, 'cli/main.js'), 'dev'], {
    env: { ...env, ...extraEnv },
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`dev (${label}) did not get ready within 120 s; stderr: ${err}`)),
      120_000,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`dev (${label}) exited early (${code}); stderr: ${err}`));
    });
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (out.includes('durable-mcp dev is running.')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return { label, env, work, process: child, exited, readyMs: performance.now() - started, firstRunMs: [] };
}

async function stopDev(dev: Dev): Promise<void> {
  if (dev.process.exitCode !== null || dev.process.signalCode !== null) return;
  dev.process.kill('SIGINT');
  const timer = setTimeout(() => dev.process.kill('SIGKILL'), 30_000);
  await dev.exited;
  clearTimeout(timer);
}

async function main(): Promise<void> {
  const started = Date.now();
  const dir = await tempDir('dmcp-bench-run-');
  const clis: [string, string][] = [['this build', join(distRoot, 'cli/main.js')]];
  if (process.env.BENCH_ALT_CLI)
    clis.push([process.env.BENCH_ALT_LABEL ?? process.env.BENCH_ALT_CLI, process.env.BENCH_ALT_CLI]);
  const baseEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_NO_USER_CONFIG: '1' };

  // Start-up of each CLI alone, in a fresh Node each time, interleaved.
  const loadMs = new Map<string, number[]>(clis.map(([label]) => [label, []]));
  const bareNodeMs: number[] = [];
  for (let i = 0; i < TIMES * 2; i++) {
    for (const [label, cli] of i % 2 ? [...clis].reverse() : clis)
      await timeNode([cli, '--version'], baseEnv, dir, loadMs.get(label)!);
    await timeNode(['-e', ''], baseEnv, dir, bareNodeMs);
  }
  for (const [label, xs] of loadMs) log(`${label}: main.js --version ${xs.map((x) => fmt(x)).join(', ')} ms`);

  const devs: Dev[] = [];
  const runMs = new Map<string, number[]>();
  let load: number[] = [];
  try {
    log('starting two durable-mcp devs');
    devs.push(await startDev('`dev` default (one warm spare)', join(dir, 'spares'), {}));
    devs.push(await startDev('`dev` with DMCP_WARM_SPARES=0', join(dir, 'nospares'), { DMCP_WARM_SPARES: '0' }));
    log(`devs ready in ${devs.map((d) => fmt(d.readyMs)).join(' and ')} ms`);
    const args = (cli: string) => [
      cli,
      'run',
      '--mcp',
      `e:${process.execPath} ${echoFixture}`,
      '--call',
      'mcp__e__echo {"text":"hi"}',
    ];
    // The first run of the server on each dev (no spare exists yet), with this build's CLI.
    for (const dev of devs) {
      await timeNode(args(clis[0]![1]), dev.env, dev.work, dev.firstRunMs);
      await sleep(PAUSE_MS);
    }
    load = loadavg();
    const pairs = devs.flatMap((dev) =>
      clis.map(([label, cli]) => ({ dev, label, cli, key: `${label}|${dev.label}` })),
    );
    for (let round = 0; round < TIMES; round++) {
      const order = pairs.map((_, i) => pairs[(i + round) % pairs.length]!);
      for (const p of order) {
        if (!runMs.has(p.key)) runMs.set(p.key, []);
        const xs = runMs.get(p.key)!;
        await timeNode(args(p.cli), p.dev.env, p.dev.work, xs);
        log(
          `round ${round + 1}/${TIMES}, ${p.label}, ${p.dev.label}: ${fmt(xs[xs.length - 1]!)} ms (CPU ${fmt(cpuOf.get(xs)![xs.length - 1]!)} ms)`,
        );
        await sleep(PAUSE_MS);
      }
    }
  } finally {
    await Promise.all(devs.map((d) => stopDev(d)));
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }

  // Ratios per round (the pairs of one round ran within seconds of each other), median over rounds:
  // robust to load that changes between rounds on a shared machine.
  const baseKey = `${clis[clis.length - 1]![0]}|${devs[1]!.label}`;
  const baseRuns = runMs.get(baseKey) ?? [];
  const rows = devs.flatMap((dev) =>
    clis.map(([label]) => {
      const xs = runMs.get(`${label}|${dev.label}`) ?? [];
      const ratio = med(xs.map((x, i) => x / baseRuns[i]!));
      return `| ${label} | ${dev.label} | ${xs.map((x) => fmt(x)).join(', ')} | ${fmt(med(xs))} | ${fmt(ratio, 2)}x | ${fmt(med(cpuOf.get(xs) ?? []))} |`;
    }),
  );
  const baseLoad = loadMs.get(clis[clis.length - 1]![0])!;
  const loadRows = clis.map(([label]) => {
    const xs = loadMs.get(label)!;
    const cpu = cpuOf.get(xs)!;
    const baseCpu = cpuOf.get(baseLoad)!;
    return `| ${label}: \`node dist/cli/main.js --version\` | ${xs.map((x) => fmt(x)).join(', ')} | ${fmt(med(xs))} | ${fmt(med(xs.map((x, i) => x / baseLoad[i]!)), 2)}x | ${fmt(med(cpu))} | ${fmt(med(cpu.map((x, i) => x / baseCpu[i]!)), 2)}x |`;
  });
  const body = `Command: \`npm run build:bench && node dist/bench/runCommand.js\` (part of \`npm run bench\`${clis.length > 1 ? `; here with \`BENCH_ALT_CLI\` for the "${clis[1]![0]}" rows` : ''}). Machine: ${await machineLine()}. Took ${((Date.now() - started) / 1000).toFixed(0)} s. Load average (1/5/15 min) when the runs started: ${load.map((x) => x.toFixed(2)).join(' / ')}.

Two \`durable-mcp dev\`s running at once, each with its own DMCP_DATA_DIR (a temp dir) and ports 0: one as \`dev\` starts by default, one with DMCP_WARM_SPARES=0. Against each, \`node <build>/dist/cli/main.js run --mcp 'e:<node> test/fixtures/echoServer.js' --call 'mcp__e__echo {"text":"hi"}'\` (a new session every time), wall time from spawn to exit (and the CLI process's CPU time, from bash's \`time\`); ${TIMES} rounds of every (CLI, dev) pair, order rotated every round, ${PAUSE_MS} ms between two runs. Before the rounds, one run per dev started the echo server there for the first time (no spare yet): ${devs.map((d) => `${d.label} ${d.firstRunMs.map((x) => fmt(x)).join(', ')} ms`).join('; ')}.

| CLI | dev | runs (ms) | median (ms) | vs ${clis[clis.length - 1]![0]} CLI on \`dev\` without spares (median of per-round ratios) | CLI process CPU, median (ms) |
|---|---|---|---|---|---|
${rows.join('\n')}

Start-up of the CLI alone, in a fresh Node each time (${TIMES * 2} times, builds interleaved):

| measure | wall, runs (ms) | wall, median (ms) | wall vs ${clis[clis.length - 1]![0]} (median of per-pair ratios) | CPU, median (ms) | CPU vs ${clis[clis.length - 1]![0]} |
|---|---|---|---|---|---|
${loadRows.join('\n')}
| \`node -e ''\` (Node's own start, for reference) | ${bareNodeMs.map((x) => fmt(x)).join(', ')} | ${fmt(med(bareNodeMs))} | | ${fmt(med(cpuOf.get(bareNodeMs) ?? []))} | |
`;
  process.stdout.write(`${body}\n`);
  await writeSection('runCommand', TITLE, body);
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

runBench(main);
