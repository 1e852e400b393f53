import { execFile, spawn } from 'node:child_process';
import { access, constants, mkdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The Temporal CLI version the setup step installs (pinned: a build is reproducible). */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/** The checkout, or the installed package's folder (`node_modules/durable-mcp`). */
export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/**
 * An installed package sits in a `node_modules` folder that npm replaces at will, and may be
 * read-only (a global install): its Temporal CLI goes to the user's cache, shared by every project.
 * A checkout keeps its own in `.tools/`, beside the other tools its tests build.
 */
export const installedAsPackage = projectRoot.split(sep).includes('node_modules');
export const installedCliPath = installedAsPackage
  ? join(homedir(), '.cache', 'durable-mcp', 'temporal', TEMPORAL_CLI_VERSION, 'temporal')
  : join(projectRoot, '.tools', 'temporal', TEMPORAL_CLI_VERSION, 'temporal');

export interface FoundCli {
  path: string;
  /** Which rule of the search order found it (`installed`: the copy durable-mcp built). */
  source: 'DMCP_TEMPORAL_CLI' | 'PATH' | 'installed';
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function onPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    if (await isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/**
 * Finds a `temporal` binary: DMCP_TEMPORAL_CLI, then `temporal` on PATH, then the copy durable-mcp
 * built ({@link installedCliPath}). Returns undefined when there is none.
 */
export async function findTemporalCli(env: NodeJS.ProcessEnv = process.env): Promise<FoundCli | undefined> {
  if (env.DMCP_TEMPORAL_CLI) {
    if (await isExecutable(env.DMCP_TEMPORAL_CLI)) return { path: env.DMCP_TEMPORAL_CLI, source: 'DMCP_TEMPORAL_CLI' };
    throw new Error(`DMCP_TEMPORAL_CLI=${env.DMCP_TEMPORAL_CLI} is not an executable file`);
  }
  const path = await onPath('temporal', env);
  if (path) return { path, source: 'PATH' };
  if (await isExecutable(installedCliPath)) return { path: installedCliPath, source: 'installed' };
  return undefined;
}

/** Runs `command` with its output on ours; rejects naming it and its exit code unless it exits 0. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'], env });
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with code ${code}`)),
    );
  });
}

/**
 * Builds the pinned Temporal CLI into {@link installedCliPath} from the Go module proxy
 * (`go install github.com/temporalio/cli/cmd/temporal@v<version>`).
 */
export async function installTemporalCli(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = dirname(installedCliPath);
  // Staged per process then moved, so neither an interrupted build nor two at once leave a half-written binary.
  const staging = `${dir}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  process.stderr.write(
    `Building Temporal CLI v${TEMPORAL_CLI_VERSION} into ${dir} with the Go toolchain (several minutes the first time)...\n`,
  );
  try {
    await run(
      'go',
      [
        'install',
        '-trimpath',
        `-ldflags=-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`,
        `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`,
      ],
      { ...env, GOBIN: staging, GOFLAGS: '-buildvcs=false' },
    );
    await rm(dir, { recursive: true, force: true });
    await mkdir(dirname(dir), { recursive: true });
    await rename(staging, dir);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return installedCliPath;
}

/**
 * Like {@link findTemporalCli}, but when there is none it builds the pinned copy if Go is on PATH
 * (a checkout's `npm install` has usually done so already; an installed package does it on first
 * use), and otherwise says how to get one.
 */
export async function requireTemporalCli(env: NodeJS.ProcessEnv = process.env): Promise<FoundCli> {
  const found = await findTemporalCli(env);
  if (found) return found;
  if (await onPath('go', env)) return { path: await installTemporalCli(env), source: 'installed' };
  throw new Error(
    `no Temporal CLI found (searched DMCP_TEMPORAL_CLI, PATH and ${installedCliPath}), and no Go toolchain on PATH ` +
      'to build one. Put a `temporal` binary on PATH or name it in DMCP_TEMPORAL_CLI' +
      (installedAsPackage ? '.' : ', or install the pinned copy with `npm run setup:temporal`.'),
  );
}

export async function temporalCliVersion(path: string): Promise<string> {
  const { stdout } = await execFileAsync(path, ['--version'], { timeout: 10_000 });
  return stdout.trim();
}
