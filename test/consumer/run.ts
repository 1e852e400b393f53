/**
 * `npm run test:consumer`: the package as a user gets it. Packs the checkout, installs the tarball
 * into a fresh project under the system's temp folder (outside the checkout, so nothing resolves
 * through the repository's own node_modules), then checks that:
 * - the tarball holds no test, bench, example or fixture file;
 * - installing it alone brings none of the optional framework peers, and the entries that need
 *   none of them import;
 * - the `durable-mcp` bin runs;
 * - with the peers installed, every "exports" entry imports, and a strict consumer typechecks
 *   (with skipLibCheck off, errors are allowed only in other packages' declarations, and listed);
 * - examples/aiSdk.ts and examples/connect.ts, copied unchanged, compile and run a turn against
 *   the embedded default (a Temporal dev server and worker started by the example);
 * - examples/own-workflow/, copied unchanged: a worker of the user's own with the plugin runs a
 *   workflow of the user's own that lists and calls MCP tools, started by the example's starter.
 * Needs the npm registry (its local cache makes it quick) and a Temporal CLI (the checkout's).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevServer } from '../../dev/devServer.js';
import { findTemporalCli } from '../../dev/temporalCli.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, unknown>;
  peerDependencies: Record<string, string>;
};
const entries = Object.keys(pkg.exports)
  .filter((key) => key !== './package.json')
  .map((key) => `${pkg.name}${key.slice(1)}`);
/** The entries that load an optional peer: a client-only user never imports them. */
const needPeers = new Set(['ai-sdk', 'openai-agents', 'langchain', 'workflow/ai-sdk'].map((e) => `${pkg.name}/${e}`));

/** The version this checkout has installed, so the consumer gets what the tests ran against (and the cache has). */
function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;
}

function sh(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): SpawnSyncReturns<string> {
  const out = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 600_000 });
  if (out.error) throw out.error;
  return out;
}

function ok(command: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): string {
  const out = sh(command, args, cwd, env);
  assert.equal(out.status, 0, `${command} ${args.join(' ')} exited with ${out.status}\n${out.stdout}\n${out.stderr}`);
  return out.stdout;
}

const npmInstall = (project: string, specs: string[]) =>
  ok('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...specs], project);

/** Packs the checkout (already built) into `dir`, checks what ships, and returns the tarball's path. */
function pack(dir: string): string {
  const [info] = JSON.parse(ok('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], root)) as {
    filename: string;
    size: number;
    unpackedSize: number;
    files: { path: string }[];
  }[];
  const shipped = info!.files.map((f) => f.path);
  const unwanted = shipped.filter((f) => /(^|\/)(test|bench|examples|fixtures?)\/|\.map$/.test(f));
  assert.deepEqual(unwanted, [], 'files that must not ship');
  for (const entry of Object.values(pkg.exports).flatMap((t) => (typeof t === 'object' ? Object.values(t!) : [t])))
    assert.ok(shipped.includes((entry as string).replace(/^\.\//, '')), `${String(entry)} is not in the tarball`);
  console.log(
    `tarball: ${info!.filename}, ${(info!.size / 1024).toFixed(0)} kB packed, ` +
      `${(info!.unpackedSize / 1024).toFixed(0)} kB unpacked, ${shipped.length} files`,
  );
  return join(dir, info!.filename);
}

function importEach(project: string, specifiers: string[]): void {
  for (const s of specifiers) ok(process.execPath, ['--input-type=module', '-e', `await import('${s}')`], project);
}

/** Alone, the tarball brings no framework, and the framework-free entries and the bin work. */
function checkClientOnly(project: string, tarball: string): void {
  npmInstall(project, [tarball]);
  for (const peer of Object.keys(pkg.peerDependencies))
    assert.ok(!existsSync(join(project, 'node_modules', peer)), `${peer} was installed with the package alone`);
  importEach(
    project,
    entries.filter((e) => !needPeers.has(e)),
  );
  const help = ok(join(project, 'node_modules', '.bin', 'durable-mcp'), ['--help'], project);
  assert.match(help, /Usage: durable-mcp/);
}

function tsconfig(options: Record<string, unknown>, include: string[]): string {
  const compilerOptions = {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2023'],
    types: ['node'],
    strict: true,
    ...options,
  };
  return JSON.stringify({ compilerOptions, include }, null, 2);
}

/**
 * A strict consumer of every entry, compiled with skipLibCheck off: it must have no error of its
 * own nor in this package's declarations (so with skipLibCheck on, it is clean); errors in other
 * packages' declarations are returned, one line per file and code.
 */
function typecheck(project: string): string[] {
  const consumer = entries.map((e, i) => `import * as entry${i} from '${e}';`).join('\n');
  writeFileSync(
    join(project, 'consumer.ts'),
    `${consumer}\nexport const all = [${entries.map((_, i) => `entry${i}`)}];\n`,
  );
  writeFileSync(join(project, 'tsconfig.json'), tsconfig({ noEmit: true, skipLibCheck: false }, ['consumer.ts']));
  const out = sh(join(project, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], project);
  const errors = out.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
  const ours = errors.filter(
    (line) => !line.startsWith('node_modules/') || line.startsWith(`node_modules/${pkg.name}/`),
  );
  assert.deepEqual(ours, [], `errors outside other packages' declarations:\n${out.stdout}`);
  const byFileAndCode = new Map(errors.map((line) => [line.replace(/\(\d+,\d+\)(: error TS\d+).*$/, '$1'), line]));
  return [...byFileAndCode.values()].map((line) => (line.length > 220 ? `${line.slice(0, 220)}...` : line));
}

/** Copies an example and its helper unchanged, compiles them as a user's project would, and runs it. */
function runExample(project: string, dataDir: string, cli: string | undefined): string {
  mkdirSync(join(project, 'examples'));
  for (const file of ['connect.ts', 'aiSdk.ts'])
    copyFileSync(join(root, 'examples', file), join(project, 'examples', file));
  mkdirSync(join(project, 'examples', 'own-workflow'));
  for (const file of ['workflows.ts', 'worker.ts', 'starter.ts'])
    copyFileSync(join(root, 'examples', 'own-workflow', file), join(project, 'examples', 'own-workflow', file));
  writeFileSync(
    join(project, 'tsconfig.examples.json'),
    tsconfig({ outDir: 'out', rootDir: '.', skipLibCheck: true }, ['examples']),
  );
  ok(join(project, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.examples.json'], project);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DMCP_NO_USER_CONFIG: '1',
    DMCP_DATA_DIR: dataDir,
    ...(cli ? { DMCP_TEMPORAL_CLI: cli } : {}),
  };
  const stdout = ok(process.execPath, [join(project, 'out', 'examples', 'aiSdk.js')], project, env);
  assert.match(stdout, /call_echo mcp__everything__echo: .*Echo: hello durable/);
  assert.match(stdout, /Turn \S+ ended \(endTurn\), 2 calls recorded/);
  return stdout;
}

/**
 * examples/own-workflow, as compiled by {@link runExample}: its worker (the user's, with the plugin)
 * against a Temporal dev server started here, and its starter, which prints the workflow's result.
 */
async function runOwnWorkflow(project: string, dataDir: string): Promise<string> {
  const server = await startDevServer({});
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DMCP_DATA_DIR: dataDir,
    TEMPORAL_ADDRESS: server.address,
  };
  const dir = join(project, 'out', 'examples', 'own-workflow');
  const worker = spawn(process.execPath, [join(dir, 'worker.js')], {
    cwd: project,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let workerOut = '';
  worker.stdout.setEncoding('utf8').on('data', (c: string) => (workerOut += c));
  worker.stderr.setEncoding('utf8').on('data', (c: string) => (workerOut += c));
  const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 120_000;
    while (!workerOut.includes('worker polling') && Date.now() < deadline && worker.exitCode === null)
      await new Promise((resolve) => setTimeout(resolve, 200));
    assert.match(workerOut, /worker polling own-workflow/, `the worker did not start:\n${workerOut}`);
    const stdout = ok(process.execPath, [join(dir, 'starter.js')], project, env);
    assert.match(stdout, /^\d+ tools; Echo: hello from my workflow; The sum of 2 and 3 is 5\.$/m);
    worker.kill('SIGINT');
    assert.equal(await exited, 0, `the worker did not stop cleanly on SIGINT:\n${workerOut}`);
    return stdout;
  } finally {
    if (worker.exitCode === null) worker.kill('SIGKILL');
    await server.stop();
  }
}

function step<T>(name: string, run: () => T): T {
  const started = Date.now();
  const value = run();
  console.log(`ok: ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
  return value;
}

async function main(): Promise<void> {
  const started = Date.now();
  const scratch = mkdtempSync(join(tmpdir(), 'dmcp-consumer-'));
  const project = join(scratch, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  const cli = (await findTemporalCli())?.path;
  try {
    const tarball = step('npm pack: no test, bench, example or fixture file ships', () => pack(scratch));
    step('installed alone: no optional peer, the client entries import, the bin runs', () =>
      checkClientOnly(project, tarball),
    );
    const devPackages = ['typescript', '@types/node', '@modelcontextprotocol/server-everything'];
    const peers = ['ai', '@openai/agents', '@openai/agents-core', '@langchain/core'];
    step('with the peers: every entry imports', () => {
      npmInstall(
        project,
        [...peers, ...devPackages].map((name) => `${name}@${installedVersion(name)}`),
      );
      importEach(project, entries);
    });
    const lib = step('a strict consumer of every entry typechecks', () => typecheck(project));
    if (lib.length)
      console.log(`  skipLibCheck off, errors only in other packages' declarations:\n    ${lib.join('\n    ')}`);
    const output = step('examples/aiSdk.ts, copied unchanged, runs a turn on the embedded default', () =>
      runExample(project, join(scratch, 'data'), cli),
    );
    console.log(output.replace(/^/gm, '  | '));
    const ownStarted = Date.now();
    const own = await runOwnWorkflow(project, join(scratch, 'own-data'));
    console.log(
      `ok: examples/own-workflow, copied unchanged: a worker with the plugin runs a user workflow calling MCP tools (${((Date.now() - ownStarted) / 1000).toFixed(1)}s)`,
    );
    console.log(own.replace(/^/gm, '  | '));
    console.log(`consumer check passed in ${((Date.now() - started) / 1000).toFixed(1)}s (${scratch} removed)`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
