/**
 * Where the MCP conformance suite and the Node it needs live, at pinned versions: each in its own
 * npm prefix under `.tools/conformance/` (ignored by git, cached with the checkout).
 */
import { spawn } from 'node:child_process';
import { access, constants, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { projectRoot } from './temporalCli.js';

/** The suite's npm package. */
export const CONFORMANCE_PACKAGE = '@modelcontextprotocol/conformance';

/**
 * The suite's two lines: the stable one (wire revisions up to 2025-11-25) and the newest, which
 * runs its scenarios at the 2026-07-28 wire. `specVersion` is passed as `--spec-version`.
 */
export const CONFORMANCE_LINES = [
  { line: '0.1.16', version: '0.1.16', specVersion: undefined },
  { line: '2026-07-28', version: '0.2.0-alpha.12', specVersion: '2026-07-28' },
] as const;

export type ConformanceLine = (typeof CONFORMANCE_LINES)[number];

/** Both suite lines need Node 22; npm ships it as `node-<platform>-<arch>`. */
export const CONFORMANCE_NODE_VERSION = '22.23.5';

export const conformanceDir = join(projectRoot, '.tools', 'conformance');

/** The npm package that carries a Node binary for this machine. */
export function nodePackageName(platform: string = process.platform, arch: string = process.arch): string {
  if (platform === 'win32')
    throw new Error("the conformance run needs a Unix-like system: npm's Node packages for Windows ship no bin/node");
  return `node-${platform}-${arch}`;
}

/** A pinned package installed into its own prefix. */
interface PinnedInstall {
  prefix: string;
  name: string;
  version: string;
  /** The file inside the package that must exist once it is installed. */
  entry: string;
}

function nodeInstall(): PinnedInstall {
  return {
    prefix: join(conformanceDir, 'node22'),
    name: nodePackageName(),
    version: CONFORMANCE_NODE_VERSION,
    entry: join('bin', 'node'),
  };
}

function suiteInstall(line: ConformanceLine): PinnedInstall {
  return {
    prefix: join(conformanceDir, line.version),
    name: CONFORMANCE_PACKAGE,
    version: line.version,
    entry: join('dist', 'index.js'),
  };
}

const packageDir = (p: PinnedInstall, prefix = p.prefix) => join(prefix, 'node_modules', ...p.name.split('/'));
const entryPath = (p: PinnedInstall) => join(packageDir(p), p.entry);

/** The installed version of `p`, or undefined when it is missing or its entry file is. */
async function installedVersion(p: PinnedInstall): Promise<string | undefined> {
  try {
    await access(entryPath(p), constants.R_OK);
    const manifest = JSON.parse(await readFile(join(packageDir(p), 'package.json'), 'utf8')) as { version?: string };
    return manifest.version;
  } catch {
    return undefined;
  }
}

function npm(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', (err) => reject(new Error(`could not run npm: ${err.message}`)));
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`npm ${args.join(' ')} exited with code ${code}`)),
    );
  });
}

/**
 * Installs `p` unless its pinned version is there. Staged in `<prefix>.partial` and then moved,
 * so an interrupted install never leaves a prefix that looks complete.
 */
async function ensureInstalled(p: PinnedInstall, say: (m: string) => void): Promise<'installed' | 'present'> {
  if ((await installedVersion(p)) === p.version) return 'present';
  const staging = `${p.prefix}.partial`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  say(`Installing ${p.name}@${p.version} into ${p.prefix} ...`);
  await npm(['install', '--prefix', staging, '--no-audit', '--no-fund', '--loglevel=error', `${p.name}@${p.version}`]);
  const staged = join(packageDir(p, staging), p.entry);
  try {
    await access(staged, constants.R_OK);
  } catch {
    throw new Error(`${p.name}@${p.version} installed without ${p.entry} (looked for ${staged})`);
  }
  await rm(p.prefix, { recursive: true, force: true });
  await rename(staging, p.prefix);
  return 'installed';
}

/** Paths of an installed toolset. */
export interface ConformanceTools {
  node: string;
  /** The suite's CLI (`dist/index.js`) per line. */
  suites: Map<ConformanceLine['line'], string>;
}

/** Installs Node 22 and both suite lines where missing; idempotent; throws saying what failed. */
export async function installConformanceTools(say: (m: string) => void): Promise<ConformanceTools> {
  const node = nodeInstall();
  say(`Node ${node.version}: ${await ensureInstalled(node, say)}`);
  const suites = new Map<ConformanceLine['line'], string>();
  for (const line of CONFORMANCE_LINES) {
    const suite = suiteInstall(line);
    say(`${suite.name}@${suite.version}: ${await ensureInstalled(suite, say)}`);
    suites.set(line.line, entryPath(suite));
  }
  return { node: entryPath(node), suites };
}

/** The installed toolset; throws naming what is missing and how to install it. */
export async function requireConformanceTools(): Promise<ConformanceTools> {
  const wanted = [nodeInstall(), ...CONFORMANCE_LINES.map(suiteInstall)];
  const missing: string[] = [];
  for (const p of wanted) if ((await installedVersion(p)) !== p.version) missing.push(`${p.name}@${p.version}`);
  if (missing.length > 0)
    throw new Error(
      `missing under ${conformanceDir}: ${missing.join(', ')}; install them with \`node dist/dev/setupConformance.js\` (or \`npm run test:conformance\`)`,
    );
  return {
    node: entryPath(wanted[0]!),
    suites: new Map(CONFORMANCE_LINES.map((line) => [line.line, entryPath(suiteInstall(line))])),
  };
}
