/**
 * `npm test`: starts a Temporal dev server (in memory, 127.0.0.1, free ports) unless
 * TEMPORAL_ADDRESS points at one, runs every unit, workflow and integration test with node's test
 * runner, then stops the server. Extra arguments go to `node --test` (e.g. a file). Workflow tests
 * (test/workflow/) start their own dev server from the same Temporal CLI and need no MCP server.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevServer, type DevServer } from '../dev/devServer.js';

const here = fileURLToPath(new URL('.', import.meta.url));

function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return testFiles(path);
      return name.endsWith('.test.js') ? [path] : [];
    })
    .sort();
}

/**
 * The Temporal UI and OAuth login tests drive Debian's Chromium, the sandbox test runs bubblewrap and the hook tests
 * run a bash + jq hook script. On a fresh
 * machine of the project's kind (Debian, root) install what is missing, so `npm test` alone passes;
 * elsewhere those tests fail saying what to install.
 */
function ensureSystemPackages(files: string[]): void {
  const browser = process.env.DMCP_CHROMIUM ?? '/usr/bin/chromium';
  const wanted: string[] = [];
  if (files.some((f) => /(ui|oauthLogin|apiReference)\.test\.js$/.test(f)) && !existsSync(browser))
    wanted.push('chromium');
  if (files.some((f) => f.endsWith('sandbox.test.js')) && spawnSync('bwrap', ['--version']).status !== 0)
    wanted.push('bubblewrap');
  if (
    files.some((f) => /(governance|hooksCrash|apiWalkthrough)\.test\.js$/.test(f)) &&
    spawnSync('jq', ['--version']).status !== 0
  )
    wanted.push('jq');
  if (wanted.length === 0 || process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return;
  process.stderr.write(`Installing Debian packages for the tests (apt-get install ${wanted.join(' ')})...\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  spawnSync('apt-get', ['install', '-y', '-qq', ...wanted], { stdio: 'inherit', env });
}

/** Runs `node --test` on `files` with `args`; resolves with its exit code. */
function nodeTest(files: string[], args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, ['--test', '--test-reporter=spec', ...args, ...files], {
      stdio: 'inherit',
      env,
    });
    child.once('error', reject);
    child.once('close', (code) => resolve(code ?? 1));
  });
}

/**
 * The whole suite in two runs: unit tests (pure code, no timing checks) two files at a time, which
 * halves their share on a 2-core machine; then workflow and integration tests one file at a time,
 * since their time bounds assume the machine is theirs.
 */
async function runAll(env: NodeJS.ProcessEnv): Promise<number> {
  const unit = await nodeTest(testFiles(join(here, 'unit')), ['--test-concurrency=2'], env);
  const rest = await nodeTest(
    ['workflow', 'integration'].flatMap((tier) => testFiles(join(here, tier))),
    [],
    env,
  );
  return unit !== 0 ? unit : rest;
}

async function main(): Promise<number> {
  const requested = process.argv.slice(2);
  const files =
    requested.length > 0
      ? requested
      : ['unit', 'workflow', 'integration'].flatMap((tier) => testFiles(join(here, tier)));
  ensureSystemPackages(files);
  let server: DevServer | undefined;
  const env = { ...process.env };
  if (!env.TEMPORAL_ADDRESS) {
    server = await startDevServer({ headless: true });
    env.TEMPORAL_ADDRESS = server.address;
    process.stderr.write(`Temporal dev server for tests: ${server.address} (${server.binary})\n`);
  }
  try {
    return await (requested.length > 0 ? nodeTest(files, [], env) : runAll(env));
  } finally {
    await server?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
