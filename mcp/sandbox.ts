/**
 * Stdio servers from untrusted layers (the workspace's `.agents/mcp.json`, plugins) run whatever
 * command the agent or a plugin wrote. Outside a sandbox such a process could read the worker's
 * secrets: `/proc/<worker pid>/environ`, the data dir (payload store, dev database, turn key), the
 * config dir, the TLS key, the files in the worker's home. So they run under bubblewrap (`bwrap`):
 * their own PID namespace and `/proc`, a cleared environment, the root file system read-only, a
 * private `/tmp`, the workspace as the only writable host folder, and every file and folder the
 * worker's settings name, and its home, covered. What an entry says never widens that: its `cwd`
 * must lie in what the sandbox shows, and the paths its command line names are not bound in.
 */
import { spawn } from 'node:child_process';
import { access, constants, realpath, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerEntry } from '../config/types.js';

/**
 * What to do with a stdio server from an untrusted layer: run it in the sandbox (and refuse it
 * when no sandbox works), always refuse it, or run it unsandboxed like a trusted one.
 */
export type UntrustedStdioMode = 'sandbox' | 'refuse' | 'allow';

/** How the pool treats stdio servers from untrusted layers. */
export interface UntrustedStdioOptions {
  /** DMCP_UNTRUSTED_STDIO (default `sandbox`). */
  mode: UntrustedStdioMode;
  /** DMCP_BWRAP: the bubblewrap binary, a path or a name looked up on `path` (default `bwrap`). */
  bwrap?: string;
  /**
   * Files and folders a sandboxed server must not see, whatever else is shown, also inside its
   * workspace: those the worker's settings name (data dir, config dir, OAuth dir, TLS files, Temporal
   * profile, API tokens file, DMCP_SANDBOX_HIDE). Symlinks are followed; a folder is covered by an
   * empty tmpfs, a file by `/dev/null` bound without device access (it cannot be opened); paths that
   * do not exist are skipped.
   */
  hiddenPaths: string[];
  /**
   * The worker's home (HOME), covered by an empty tmpfs too. Unlike {@link hiddenPaths} the turn's
   * workspace may lie in it and is shown again, as are the folders the worker runs from inside it
   * (durable-mcp's, Node's, those on `path`). Ignored when it is `/`.
   */
  home?: string;
  /** The worker's PATH: the only worker variable a sandboxed server gets (besides `lang`); also where `bwrap` is looked up. */
  path?: string;
  /** The worker's LANG (default `C.UTF-8`). */
  lang?: string;
}

/** What the pool spawns for one stdio server. */
export interface StdioCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /** Set for a sandboxed launch: the one host folder the server may write (absent: none). */
  sandbox?: { writable?: string };
}

/** Host paths a sandboxed server is shown, for {@link sandboxArgs}. */
export interface SandboxPaths {
  /** The only host folder it may write (the turn's workspace); absent: none. */
  workspace?: string;
  /** Its working directory inside the sandbox. */
  cwd: string;
  /** Folders shown read-only again over the private `/tmp` or the hidden home (its plugin folder, the folders the worker runs from). */
  readable: string[];
  /** Folders covered by an empty tmpfs; each wins over what is shown around it (not over a folder shown inside it). */
  hidden: string[];
  /** Files covered by `/dev/null`, wherever they are shown. */
  hiddenFiles?: string[];
}

/** The existing paths a sandbox covers, symlinks resolved, for {@link sandboxPathsFor}. */
export interface HiddenPaths {
  folders: string[];
  files: string[];
  /** The worker's home (one of `folders`): the workspace and runtime folders inside it are shown again. */
  home?: string;
}

/** PATH when the worker has none: where bwrap and system tools live on Linux. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** HOME inside the sandbox: a folder in its private `/tmp`, so tools that write caches can. */
export const SANDBOX_HOME = '/tmp/home';

/**
 * Namespaces and capabilities, the same for the probe and for every server. Under root bwrap keeps
 * every capability unless told otherwise, and CAP_SYS_ADMIN would let the server unmount the tmpfs
 * over the data dir. No `--new-session`: the worker stops a server by signalling its process group,
 * and a new session inside would leave the server out of it (the server has no terminal to steal
 * from anyway: it is started in a session of its own).
 */
const ISOLATION = ['--unshare-pid', '--unshare-ipc', '--die-with-parent', '--cap-drop', 'ALL'];

function within(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

function depth(path: string): number {
  return path.split(sep).filter(Boolean).length;
}

/**
 * The bwrap argument vector (without `bwrap` itself) that runs `command args` with `paths`. A later
 * mount covers an earlier one, so after the root read-only, a fresh `/dev`, `/proc` and `/tmp`,
 * mounts go outer folders first: a folder shown inside a hidden one (the workspace in the home)
 * shows through, a hidden one inside a shown one (the data dir in the workspace) stays hidden, and at
 * the same folder hidden wins over writable, writable over read-only. Hidden files come last, each
 * only where something shows it.
 */
export function sandboxArgs(launch: { command: string; args: string[] }, paths: SandboxPaths): string[] {
  const { workspace } = paths;
  const out = [
    ...ISOLATION,
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--dir',
    SANDBOX_HOME,
  ];
  const folders: { path: string; rank: number; shown: boolean; args: string[] }[] = [];
  for (const folder of paths.readable) {
    // Inside the workspace it is shown read-write; a read-only mount over it would hide that.
    if (workspace && within(folder, workspace)) continue;
    folders.push({ path: folder, rank: 0, shown: true, args: ['--ro-bind', folder, folder] });
  }
  if (workspace) folders.push({ path: workspace, rank: 1, shown: true, args: ['--bind', workspace, workspace] });
  for (const h of paths.hidden) folders.push({ path: h, rank: 2, shown: false, args: ['--tmpfs', h] });
  folders.sort((a, b) => depth(a.path) - depth(b.path) || a.rank - b.rank);
  for (const f of folders) out.push(...f.args);
  const base = [
    { path: sep, shown: true },
    { path: join(sep, 'tmp'), shown: false },
  ];
  for (const file of paths.hiddenFiles ?? []) {
    // The last mount that holds the file decides whether the sandbox shows it.
    const holder = [...base, ...folders]
      .filter((f) => within(file, f.path))
      .reduce((a, b) => (depth(b.path) >= depth(a.path) ? b : a));
    if (holder.shown) out.push('--ro-bind', '/dev/null', file);
  }
  out.push('--chdir', paths.cwd, '--', launch.command, ...launch.args);
  return out;
}

/** The whole environment of a sandboxed server: PATH, HOME and LANG, then the entry's own `env`. */
export function sandboxEnvironment(
  entry: Pick<ServerEntry, 'env'>,
  options: Pick<UntrustedStdioOptions, 'path' | 'lang'>,
): Record<string, string> {
  return {
    PATH: options.path || DEFAULT_PATH,
    HOME: SANDBOX_HOME,
    LANG: options.lang || 'C.UTF-8',
    ...entry.env,
  };
}

/**
 * The turn's workspace as far as the entry tells it: a workspace-layer entry comes from
 * `<workspace>/.agents/mcp.json`. Used when the caller did not say.
 */
export function workspaceFromSource(entry: Pick<ServerEntry, 'layer' | 'source'>): string | undefined {
  if (entry.layer !== 'workspace') return undefined;
  const file = entry.source.replace(/:\d+$/, '');
  return isAbsolute(file) ? dirname(dirname(file)) : undefined;
}

/**
 * The folder durable-mcp itself is installed in (this file is `<root>/dist/mcp/sandbox.js`). The
 * operator chose it, and outside `/tmp` the read-only root shows it anyway; under the host's `/tmp`
 * (a CI checkout, an unpacked release) the private `/tmp` would hide it, and with it the servers
 * shipped inside it.
 */
export const INSTALL_ROOT = resolve(fileURLToPath(new URL('../../', import.meta.url)));

/**
 * What a sandbox shows again over its private `/tmp`: only folders the operator chose, the
 * plugin's folder (the operator installed the plugin) and durable-mcp's own, when under `/tmp`.
 * Never a folder the entry names: an untrusted entry is written by the agent or the plugin, so a
 * `/tmp/<x>` in its command line or its `cwd` must not open the host's `/tmp` to it.
 */
export function operatorFolders(plugin: string | undefined, installRoot = INSTALL_ROOT): string[] {
  const tmp = join(sep, 'tmp');
  const install = installRoot !== tmp && within(installRoot, tmp) ? [installRoot] : [];
  return [...(plugin !== undefined && plugin !== sep ? [plugin] : []), ...install];
}

/** A plugin entry's folder (`<plugin>/.mcp.json` or `<plugin>/plugin.json`): its files must stay visible. */
function pluginFolder(entry: Pick<ServerEntry, 'layer' | 'source'>): string | undefined {
  if (entry.layer !== 'plugin') return undefined;
  const file = entry.source.replace(/:\d+$/, '');
  return isAbsolute(file) ? dirname(file) : undefined;
}

/** A stdio server that may not run: its status says why and what to change. */
export class UntrustedStdioRefused extends Error {
  override name = 'UntrustedStdioRefused';
}

/**
 * What the sandbox of an untrusted `entry` shows of the host, with `workspace` the turn's
 * workspace (default: the one its source names), `hidden` the existing paths to cover, and
 * `runtime` the folders the worker runs from (durable-mcp's, Node's, its PATH): those inside the
 * hidden home are shown again read-only, or a server could not even start `node`.
 * @throws UntrustedStdioRefused when the entry names folders the sandbox may not show, or the
 * workspace is a folder it hides.
 */
export function sandboxPathsFor(
  entry: Pick<ServerEntry, 'layer' | 'source' | 'cwd'>,
  workspace: string | undefined,
  hidden: HiddenPaths,
  runtime: string[] = [],
): SandboxPaths {
  const ws = workspace ?? workspaceFromSource(entry);
  if (ws !== undefined && (!isAbsolute(ws) || resolve(ws) === sep)) {
    throw new UntrustedStdioRefused(
      `not started: the workspace ${JSON.stringify(ws)} cannot be the sandbox's writable folder`,
    );
  }
  const root = ws === undefined ? undefined : resolve(ws);
  if (root !== undefined && hidden.folders.includes(root)) {
    const what =
      root === hidden.home
        ? "the worker's home, which the sandbox hides"
        : 'a folder the sandbox hides (a data, config or credential folder of the worker)';
    throw new UntrustedStdioRefused(
      `not started: the workspace ${root} is ${what}, so a sandboxed server could neither see nor write it; ` +
        'name a project folder inside it as the workspace, or move the entry to a trusted layer (the config dir or a --mcp-config file)',
    );
  }
  const plugin = pluginFolder(entry);
  let cwd = root ?? SANDBOX_HOME;
  if (entry.cwd !== undefined) {
    // The server starts where the sandbox already shows the host: its workspace or its plugin folder.
    cwd = resolve((entry.layer === 'plugin' ? (plugin ?? root) : (root ?? plugin)) ?? sep, entry.cwd);
    const shown = [
      ...(root !== undefined ? [`the workspace ${root}`] : []),
      ...(plugin !== undefined ? [`the plugin folder ${plugin}`] : []),
    ];
    if (![root, plugin].some((folder) => folder !== undefined && within(cwd, folder))) {
      const places = shown.length > 0 ? shown.join(' and ') : 'every folder its sandbox shows (it has no workspace)';
      throw new UntrustedStdioRefused(
        `not started: "cwd" ${JSON.stringify(entry.cwd)} in ${entry.source} lies outside ${places}; a server from the ${entry.layer} layer (untrusted: the agent can write it) ` +
          `starts only there, since its sandbox shows no host folder its entry names; remove "cwd" or name a folder inside ${shown.length > 1 ? 'one of them' : 'it'}, ` +
          'or move the entry to a trusted layer (the config dir or a --mcp-config file)',
      );
    }
  }
  const { home } = hidden;
  const shownAgain =
    home === undefined
      ? []
      : runtime.filter((r) => r !== home && within(r, home) && !hidden.folders.some((h) => h !== home && within(r, h)));
  const readable = [...new Set([...operatorFolders(plugin), ...shownAgain])];
  return {
    ...(root !== undefined ? { workspace: root } : {}),
    cwd,
    readable,
    hidden: hidden.folders,
    hiddenFiles: hidden.files,
  };
}

type Probe = { ok: true; bwrap: string } | { ok: false; reason: string };

/**
 * Decides how each stdio server is started: trusted ones as written; untrusted ones per
 * {@link UntrustedStdioMode}. bwrap is probed once (on the first untrusted server), with the same
 * isolation flags the servers get, so a kernel that forbids them refuses servers up front instead
 * of failing each one obscurely.
 */
export class StdioSandbox {
  private probe?: Promise<Probe>;

  constructor(private readonly options: UntrustedStdioOptions) {}

  /**
   * The command to spawn for `entry`, whose unsandboxed environment is `env`.
   * @throws UntrustedStdioRefused when an untrusted server may not run.
   */
  async launch(entry: ServerEntry, env: () => Record<string, string>, workspace?: string): Promise<StdioCommand> {
    if (!entry.command) throw new Error('a stdio server needs a command');
    const plain = { command: entry.command, args: entry.args, cwd: entry.cwd };
    if (entry.trusted || this.options.mode === 'allow') return { ...plain, env: env() };
    const layer = `the ${entry.layer} layer (untrusted: the agent can write it)`;
    const elsewhere = 'move the entry to a trusted layer (the config dir or a --mcp-config file)';
    if (this.options.mode === 'refuse') {
      throw new UntrustedStdioRefused(
        `not started: DMCP_UNTRUSTED_STDIO=refuse runs no stdio server from ${layer}; ${elsewhere}, ` +
          'or set DMCP_UNTRUSTED_STDIO=sandbox (run it in a bubblewrap sandbox) or DMCP_UNTRUSTED_STDIO=allow (run it unsandboxed)',
      );
    }
    this.probe ??= probeBwrap(this.options.bwrap ?? 'bwrap', this.options.path);
    const probe = await this.probe;
    if (!probe.ok) {
      throw new UntrustedStdioRefused(
        `not started: stdio servers from ${layer} run in a bubblewrap sandbox, and no sandbox is available (${probe.reason}); ` +
          `install bubblewrap (apt-get install bubblewrap) or point DMCP_BWRAP at it, ${elsewhere}, ` +
          'or set DMCP_UNTRUSTED_STDIO=allow to run untrusted stdio servers unsandboxed',
      );
    }
    const paths = sandboxPathsFor(
      entry,
      workspace,
      await existingHiddenPaths(this.options),
      await runtimeFolders(this.options.path),
    );
    const args = sandboxArgs(plain, paths);
    // bwrap itself gets the cleared environment too: it is PID 1 of the sandbox, and its
    // /proc/1/environ is readable from inside.
    return {
      command: probe.bwrap,
      args,
      env: sandboxEnvironment(entry, this.options),
      sandbox: paths.workspace === undefined ? {} : { writable: paths.workspace },
    };
  }
}

/**
 * The existing paths of `options` to cover, symlinks resolved (bwrap mounts onto the real file),
 * the home among the folders unless it is `/`.
 */
export async function existingHiddenPaths(
  options: Pick<UntrustedStdioOptions, 'hiddenPaths' | 'home'>,
): Promise<HiddenPaths> {
  const found: HiddenPaths = { folders: [], files: [] };
  const home = options.home === undefined ? undefined : await realpath(resolve(options.home)).catch(() => undefined);
  for (const p of options.hiddenPaths) {
    const real = await realpath(resolve(p)).catch(() => undefined);
    // Covering / would leave nothing to run; settings refuse it, this guards other callers.
    if (real === sep) continue;
    const kind =
      real === undefined
        ? undefined
        : await stat(real).then(
            (s) => (s.isDirectory() ? 'folders' : 'files'),
            () => undefined,
          );
    if (real !== undefined && kind !== undefined && !found[kind].includes(real)) found[kind].push(real);
  }
  if (
    home !== undefined &&
    home !== sep &&
    (await stat(home).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  ) {
    if (!found.folders.includes(home)) found.folders.push(home);
    found.home = home;
  }
  return found;
}

/**
 * The folders the worker runs from: durable-mcp's, Node's installation, and those on its `path`
 * that exist (bwrap refuses to bind a missing one), absolute, symlinks resolved.
 */
export async function runtimeFolders(path: string | undefined): Promise<string[]> {
  const folders = [
    INSTALL_ROOT,
    dirname(dirname(process.execPath)),
    ...(path || DEFAULT_PATH).split(delimiter).filter((d) => isAbsolute(d)),
  ];
  const found: string[] = [];
  for (const folder of folders) {
    const real = await realpath(folder).catch(() => undefined);
    if (
      real !== undefined &&
      !found.includes(real) &&
      (await stat(real).then(
        (s) => s.isDirectory(),
        () => false,
      ))
    )
      found.push(real);
  }
  return found;
}

/** The absolute path of an executable: a path as given, or a name found on `path`. */
async function findExecutable(name: string, path: string | undefined): Promise<string | undefined> {
  const candidates = name.includes('/')
    ? [resolve(name)]
    : (path || DEFAULT_PATH)
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, name));
  for (const candidate of candidates) {
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return undefined;
}

const PROBE_TIMEOUT_MS = 5000;

/** Runs `true` in the sandbox; says why not when that fails (missing binary, no namespaces). */
export async function probeBwrap(bwrap: string, path: string | undefined): Promise<Probe> {
  const found = await findExecutable(bwrap, path);
  if (!found) return { ok: false, reason: `${bwrap} not found${bwrap.includes('/') ? '' : ' on PATH'}` };
  const args = sandboxArgs({ command: 'true', args: [] }, { cwd: '/', readable: [], hidden: [] });
  return new Promise((done) => {
    const child = spawn(found, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: path || DEFAULT_PATH } });
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      if (stderr.length < 2000) stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      done({ ok: false, reason: `${found} could not start: ${err.message}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) done({ ok: true, bwrap: found });
      else
        done({
          ok: false,
          reason: `${found} failed its test run (${signal ?? `exit ${code}`}): ${stderr.trim().split('\n').slice(-2).join(' ') || 'no message'}`,
        });
    });
  });
}
