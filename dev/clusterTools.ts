/**
 * The tools of the cluster path, built from package registries into `.tools/` like the Temporal CLI:
 * the multi-service Temporal server and its SQL schema tool (`go.temporal.io/server`, at the server
 * version the pinned CLI embeds) and Versity's S3 gateway. Versions come from the top-level `.env`,
 * the file docker-compose.yml reads, so the compose cluster and the cluster test run the same ones.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { access, constants, mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { projectRoot, run } from './temporalCli.js';

/** The top-level `.env`: the cluster's settings, one source for compose and the cluster test. */
export const dotEnvPath = join(projectRoot, '.env');

/**
 * Parses a compose-style env file: `NAME=value` lines, `#` comments, optional matching quotes.
 * @throws Error naming the file and line of a line that is neither.
 */
export function parseDotEnv(text: string, file = '.env'): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) throw new Error(`${file}:${i + 1}: expected NAME=value, got ${JSON.stringify(raw)}`);
    let value = m[2]!;
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    out[m[1]!] = value;
  });
  return out;
}

export async function readDotEnv(file = dotEnvPath): Promise<Record<string, string>> {
  return parseDotEnv(await readFile(file, 'utf8'), file);
}

/** A value the cluster needs from `.env`; a missing one names the file and the variable. */
export function required(env: Record<string, string>, name: string): string {
  const v = env[name];
  if (v === undefined || v === '') throw new Error(`${dotEnvPath}: ${name} is not set`);
  return v;
}

/**
 * Where each tool lands for the versions in `.env`: under the project's `.tools/`, or under
 * DMCP_CLUSTER_TOOLS_DIR when set (a private build, where `.tools/` is shared and read-only).
 */
export function clusterToolPaths(env: Record<string, string>) {
  const server = required(env, 'TEMPORAL_VERSION').replace(/^v/, '');
  const versity = required(env, 'VERSITYGW_VERSION').replace(/^v/, '');
  const tools = process.env.DMCP_CLUSTER_TOOLS_DIR || join(projectRoot, '.tools');
  const serverDir = join(tools, 'temporal-server', server);
  const versityDir = join(tools, 'versitygw', versity);
  return {
    serverVersion: server,
    versityVersion: versity,
    temporalServer: join(serverDir, 'server'),
    temporalSql: join(serverDir, 'sql'),
    versitygw: join(versityDir, 'versitygw'),
  };
}

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `go install` of `packages` into `dir`, staged so an interrupted build leaves nothing half-written. */
async function goInstall(dir: string, packages: string[]): Promise<void> {
  const staging = `${dir}.partial`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await run('go', ['install', '-trimpath', ...packages], {
    ...process.env,
    GOBIN: staging,
    GOFLAGS: '-buildvcs=false',
  });
  await rm(dir, { recursive: true, force: true });
  await mkdir(dirname(dir), { recursive: true });
  await rename(staging, dir);
}

/** What {@link installClusterTools} did, with build times in seconds (0 when already there). */
export interface ClusterToolsReport {
  paths: ReturnType<typeof clusterToolPaths>;
  serverBuildSeconds: number;
  versityBuildSeconds: number;
}

/** Builds whatever is missing (of `only`, default both); idempotent. */
export async function installClusterTools(
  env: Record<string, string>,
  log: (m: string) => void = () => undefined,
  only: ('server' | 'versitygw')[] = ['server', 'versitygw'],
): Promise<ClusterToolsReport> {
  const paths = clusterToolPaths(env);
  let serverBuildSeconds = 0;
  let versityBuildSeconds = 0;
  if (
    only.includes('server') &&
    (!(await executable(paths.temporalServer)) || !(await executable(paths.temporalSql)))
  ) {
    log(
      `Building the Temporal server and SQL tool v${paths.serverVersion} with the Go toolchain (about 5 minutes the first time)...`,
    );
    const started = Date.now();
    await goInstall(dirname(paths.temporalServer), [
      `go.temporal.io/server/cmd/server@v${paths.serverVersion}`,
      `go.temporal.io/server/cmd/tools/sql@v${paths.serverVersion}`,
    ]);
    serverBuildSeconds = (Date.now() - started) / 1000;
  }
  if (only.includes('versitygw') && !(await executable(paths.versitygw))) {
    log(`Building versitygw v${paths.versityVersion} with the Go toolchain (about 5 minutes the first time)...`);
    const started = Date.now();
    await goInstall(dirname(paths.versitygw), [`github.com/versity/versitygw/cmd/versitygw@v${paths.versityVersion}`]);
    versityBuildSeconds = (Date.now() - started) / 1000;
  }
  return { paths, serverBuildSeconds, versityBuildSeconds };
}

/** The PostgreSQL server binaries (Debian's `postgresql` package), newest major first; undefined when none. */
export async function findPostgresBin(): Promise<string | undefined> {
  const root = '/usr/lib/postgresql';
  let majors: string[];
  try {
    majors = (await readdir(root)).filter((d) => /^\d+$/.test(d)).sort((a, b) => Number(b) - Number(a));
  } catch {
    return undefined;
  }
  for (const major of majors) {
    const bin = join(root, major, 'bin');
    if (await executable(join(bin, 'initdb'))) return bin;
  }
  return undefined;
}

/** Whether `name` is a command on PATH. */
export function commandExists(name: string): boolean {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name], { stdio: 'ignore' }).status === 0;
}

/**
 * Installs Debian packages that are missing, with apt-get, when running as root on Debian (the
 * project's CI machines); elsewhere throws saying what to install.
 */
export function ensureDebianPackages(wanted: string[], log: (m: string) => void = () => undefined): void {
  if (wanted.length === 0) return;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`needs ${wanted.join(', ')}: install them (Debian: apt-get install ${wanted.join(' ')})`);
  }
  log(`Installing Debian packages (apt-get install ${wanted.join(' ')})...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const r = spawnSync('apt-get', ['install', '-y', '-qq', ...wanted], { stdio: 'inherit', env });
  if (r.status !== 0) throw new Error(`apt-get install ${wanted.join(' ')} failed (exit ${r.status})`);
}
