/**
 * `npm run test:conformance` (after `node dist/dev/setupConformance.js`): runs every client scenario
 * of both lines of the MCP conformance suite against the project's conformance client
 * (test/conformance/client.ts), which drives real durable turns on one worker started here against
 * one Temporal dev server started here. Each result is compared with the line's baseline of
 * expected failures (test/conformance/baseline-<line>.yml); a failure not in it (a regression) or an
 * entry whose scenario passes (stale: remove it) fails the run. Results go under a temp dir.
 *
 *   node dist/test/conformance/run.js [scenario ...]
 *
 * With scenario names, only those run (on every line that has them), and baseline entries of the
 * others are not judged.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import pino from 'pino';
import {
  CONFORMANCE_LINES,
  requireConformanceTools,
  type ConformanceLine,
  type ConformanceTools,
} from '../../dev/conformanceTools.js';
import { startDevServer } from '../../dev/devServer.js';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { loadSettings } from '../../settings/index.js';
import { bundleWorkflows, startWorker } from '../../worker/index.js';
import { readBaseline, verdict as baselineVerdict, type Baseline, type Verdict } from './baseline.js';

const clientScript = fileURLToPath(new URL('./client.js', import.meta.url));
const sourceDir = fileURLToPath(new URL('../../../test/conformance/', import.meta.url));

/** Scenarios run at once: the machine has two cores, and each scenario is a turn plus two processes. */
const PARALLEL = 2;
/** What the suite gives the client before it kills it. */
const CLIENT_TIMEOUT_MS = 30_000;
/** What a scenario gets in all (the suite also waits for its server to stop) before it is killed here. */
const SCENARIO_TIMEOUT_MS = 60_000;

interface ScenarioRun {
  line: ConformanceLine;
  scenario: string;
  passed: boolean;
  /** Checks that failed or warned (the suite counts both as failure), or why the run failed. */
  problems: string[];
  seconds: number;
}

function collect(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ code: number | null; out: string; timedOut: boolean }> {
  return new Promise((resolve, reject) => {
    // Its own process group: on a timeout the suite, its shell and the client all go.
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env, detached: true });
    let out = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
    const timer = setTimeout(() => {
      timedOut = true;
      process.kill(-child.pid!, 'SIGKILL');
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, timedOut });
    });
  });
}

async function listScenarios(tools: ConformanceTools, line: ConformanceLine): Promise<string[]> {
  const args = [
    tools.suites.get(line.line)!,
    'list',
    '--client',
    ...(line.specVersion ? ['--spec-version', line.specVersion] : []),
  ];
  const { code, out } = await collect(tools.node, args, process.env, 30_000);
  if (code !== 0) throw new Error(`conformance ${line.version} list exited with ${code}: ${out.slice(-2000)}`);
  return [...out.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]!);
}

/** Failed and warned checks of the scenario's result dir (written by the suite before it stops its server). */
async function failedChecks(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { recursive: true }).catch(() => [] as string[])) {
    if (!entry.endsWith('checks.json')) continue;
    const checks = JSON.parse(await readFile(join(dir, entry), 'utf8')) as {
      id: string;
      name: string;
      status: string;
      errorMessage?: string;
    }[];
    for (const c of checks)
      if (c.status === 'FAILURE' || c.status === 'WARNING')
        found.push(`${c.status.toLowerCase()} ${c.id}${c.name && c.name !== c.id ? ` (${c.name})` : ''}`);
  }
  return found;
}

async function runScenario(
  tools: ConformanceTools,
  line: ConformanceLine,
  scenario: string,
  env: NodeJS.ProcessEnv,
  resultsDir: string,
): Promise<ScenarioRun> {
  const started = Date.now();
  const outDir = join(resultsDir, line.line, scenario.replace(/\//g, '_'));
  await mkdir(outDir, { recursive: true });
  const args = [
    tools.suites.get(line.line)!,
    'client',
    '--command',
    `${process.execPath} ${clientScript}`,
    '--scenario',
    scenario,
    '--timeout',
    String(CLIENT_TIMEOUT_MS),
    '--output-dir',
    outDir,
    ...(line.specVersion ? ['--spec-version', line.specVersion] : []),
  ];
  const { code, out, timedOut } = await collect(tools.node, args, env, SCENARIO_TIMEOUT_MS);
  const problems = await failedChecks(outDir);
  if (timedOut) problems.push(`killed after ${SCENARIO_TIMEOUT_MS / 1000}s`);
  if (code !== 0 && problems.length === 0)
    problems.push(`suite exited with ${code}: ${out.trim().split('\n').slice(-3).join(' / ')}`);
  return { line, scenario, passed: code === 0 && !timedOut, problems, seconds: (Date.now() - started) / 1000 };
}

async function inPool<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

const verdict = (run: ScenarioRun, baseline: Baseline): Verdict => baselineVerdict(run.scenario, run.passed, baseline);

function printLine(line: ConformanceLine, runs: ScenarioRun[], baseline: Baseline): number {
  const width = Math.max(...runs.map((r) => r.scenario.length));
  process.stdout.write(
    `\n${line.line} (@modelcontextprotocol/conformance ${line.version}${line.specVersion ? `, --spec-version ${line.specVersion}` : ''})\n`,
  );
  let bad = 0;
  for (const run of runs) {
    const v = verdict(run, baseline);
    if (v === 'REGRESSION' || v === 'STALE') bad += 1;
    const issue = baseline.entries.get(run.scenario);
    const note =
      v === 'expected'
        ? `(${issue})`
        : v === 'STALE'
          ? `passes: remove it from ${baseline.file}`
          : v === 'REGRESSION'
            ? run.problems.join('; ')
            : '';
    process.stdout.write(
      `  ${run.scenario.padEnd(width)}  ${(run.passed ? 'pass' : 'fail').padEnd(4)}  ${v.padEnd(10)} ${run.seconds.toFixed(1).padStart(5)}s  ${note}\n`,
    );
  }
  const passed = runs.filter((r) => r.passed).length;
  process.stdout.write(
    `  ${passed} of ${runs.length} pass, ${runs.length - passed} fail (${runs.filter((r) => verdict(r, baseline) === 'expected').length} expected)\n`,
  );
  return bad;
}

async function main(): Promise<number> {
  const only = process.argv.slice(2);
  const tools = await requireConformanceTools();
  for (const path of [process.execPath, clientScript]) {
    // The suite splits --command on spaces.
    if (/\s/.test(path)) throw new Error(`the conformance suite cannot run a command whose path has a space: ${path}`);
  }
  const baselines = new Map<string, Baseline>();
  for (const line of CONFORMANCE_LINES)
    baselines.set(line.line, await readBaseline(join(sourceDir, `baseline-${line.line}.yml`)));
  const started = Date.now();
  const work = await mkdtemp(join(tmpdir(), 'dmcp-conformance-'));
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const server = await startDevServer({ headless: true });
  const taskQueue = `conformance-${randomBytes(4).toString('hex')}`;
  const dataDir = join(work, 'data');
  // The client ends each turn's session, which closes the scenario server's streams at once.
  const workerEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DMCP_NO_USER_CONFIG: '1',
    DMCP_DATA_DIR: dataDir,
  };
  const connection = await NativeConnection.connect({ address: server.address });
  const logger = pino({ level: 'info' }, pino.destination({ dest: join(work, 'worker.log'), sync: false }));
  const settings = loadSettings(workerEnv);
  const worker = await startWorker({
    connection,
    logger,
    taskQueue,
    env: workerEnv,
    settings,
    dataConverter: dataConverterFor(settings),
    workflowBundle: await bundleWorkflows(),
  });
  process.stderr.write(`Temporal ${server.address}, worker on ${taskQueue}; results in ${work}\n`);
  try {
    const clientEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      DMCP_TASK_QUEUE: taskQueue,
      DMCP_DATA_DIR: dataDir,
      DMCP_NO_USER_CONFIG: '1',
    };
    const jobs: { line: ConformanceLine; scenario: string }[] = [];
    for (const line of CONFORMANCE_LINES) {
      for (const scenario of await listScenarios(tools, line))
        if (only.length === 0 || only.includes(scenario)) jobs.push({ line, scenario });
    }
    const runs = await inPool(jobs, PARALLEL, (j) =>
      runScenario(tools, j.line, j.scenario, clientEnv, join(work, 'results')),
    );
    let bad = 0;
    for (const line of CONFORMANCE_LINES) {
      const baseline = baselines.get(line.line)!;
      const lineRuns = runs.filter((r) => r.line.line === line.line);
      if (lineRuns.length > 0) bad += printLine(line, lineRuns, baseline);
      const notRun =
        only.length > 0 ? [] : [...baseline.entries.keys()].filter((s) => !lineRuns.some((r) => r.scenario === s));
      for (const s of notRun)
        process.stdout.write(`  STALE: ${baseline.file} lists ${s}, which this line does not have\n`);
      bad += notRun.length;
    }
    const passed = runs.filter((r) => verdict(r, baselines.get(r.line.line)!) === 'pass').length;
    const expected = runs.filter((r) => verdict(r, baselines.get(r.line.line)!) === 'expected').length;
    process.stdout.write(
      `\n${expected} expected failures (baselined); ${((Date.now() - started) / 1000).toFixed(0)}s\n`,
    );
    process.stdout.write(`conformance: ${passed} passed, ${bad} failed\n`);
    return bad > 0 ? 1 : 0;
  } finally {
    await worker.shutdown();
    await connection.close();
    await server.stop();
    if (process.env.DMCP_KEEP_TEST_DIRS !== '1') await rm(work, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
