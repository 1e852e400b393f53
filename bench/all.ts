/**
 * `npm run bench`: every benchmark, one after the other, against one Temporal dev server (in
 * memory, tuned as `dev` starts it; or TEMPORAL_ADDRESS; devTuning, throughput and runCommand start
 * their own servers). Each writes its own section of its own `bench/results/<bench>.md`;
 * BENCHMARKS.md's headline table is kept by hand from those files. Run on demand, never in CI.
 * BENCH_ONLY=sideBySide,profile,... runs a subset.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTemporal } from './setup.js';

const ALL = [
  'sideBySide',
  'devTuning',
  'profile',
  'promises',
  'rss',
  'crash',
  'history',
  'reconcile',
  'firstTurn',
  'eras',
  'throughput',
  'runCommand',
  'inputs',
  'tasks',
  'callerSide',
  'sharedServers',
  'modelTurn',
  'turnStream',
];

function run(script: string, env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [fileURLToPath(new URL(`./${script}.js`, import.meta.url))], {
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const scripts = only ? ALL.filter((s) => only.includes(s)) : ALL;
const temporal = await startTemporal();
const failed: string[] = [];
const started = Date.now();
try {
  for (const script of scripts) {
    const t0 = Date.now();
    process.stderr.write(`[bench] ${script}: start\n`);
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: temporal.address,
      ...(temporal.pid ? { BENCH_TEMPORAL_PID: String(temporal.pid) } : {}),
    };
    const code = await run(script, env);
    process.stderr.write(
      `[bench] ${script}: ${code === 0 ? 'done' : `failed (${code})`} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`,
    );
    if (code !== 0) failed.push(script);
  }
} finally {
  await temporal.stop();
}
process.stderr.write(
  `[bench] all done in ${((Date.now() - started) / 1000).toFixed(0)} s${failed.length ? `; failed: ${failed.join(', ')}` : ''}\n`,
);
process.exit(failed.length ? 1 : 0);
