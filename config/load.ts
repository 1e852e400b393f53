import { execFile } from 'node:child_process';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { DataDirEntry, agentIdProblem, refsProofText, type LayerKind } from '../contract/index.js';
import { splitCommand } from './expand.js';
import { MAX_CONFIG_BYTES } from './json.js';
import { nameProblem } from './names.js';
import { findCommandExpressions, layerLabel, parseConfigText, pluginNameFrom, urlProblem } from './parse.js';
import { invalidAllowListNames, scrubbedEnvironment, scrubSecrets } from './secrets.js';
import { configSettings } from '../settings/index.js';
import { readOrCreatePrivateFile } from './privateFile.js';
import {
  ConfigError,
  isTrustedLayer,
  type Boundary,
  type CommandOutcome,
  type ConfigRefs,
  type LayerInfo,
  type LoadedConfig,
  type ParseResult,
  type RefusedEntry,
  type ServerEntry,
} from './types.js';

/** How long one `$(command)` may run while the config loads. */
export const COMMAND_TIMEOUT_MS = 10_000;

/** A `$(command)` to run: an argument vector (or `/bin/sh -c`), with the secret-scrubbed environment. */
export interface CommandRequest {
  argv: string[];
  /** The folder of the file that holds the expression. */
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/**
 * The loader's only contact with the outside world; tests pass a fake to stay off the disk.
 * `readText` rejects with an `ENOENT` error for a missing file (normal for most layers).
 */
export interface ConfigIO {
  readText(path: string): Promise<string>;
  /** Runs a command expression and resolves its stdout; rejects on failure, non-zero exit or timeout. */
  runCommand?(request: CommandRequest): Promise<string>;
  /** The path with every symlink resolved; rejects when it does not exist. Without it paths are taken as written. */
  realPath?(path: string): Promise<string>;
}

/** The real file system and process runner. Files over 1 MiB are refused before being read. */
export const nodeConfigIO: ConfigIO = {
  async readText(path) {
    const info = await stat(path);
    if (info.size > MAX_CONFIG_BYTES) {
      throw Object.assign(new Error(`file is ${info.size} bytes; config files are limited to 1 MiB`), {
        code: 'EFBIG',
      });
    }
    return readFile(path, 'utf8');
  },
  realPath: (path) => realpath(path),
  runCommand({ argv, cwd, env, timeoutMs }) {
    return new Promise((resolvePromise, reject) => {
      execFile(
        argv[0],
        argv.slice(1),
        { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 1024 * 1024, windowsHide: true },
        (err, stdout, stderr) => {
          if (err) {
            const detail = (stderr.trim().split('\n').pop() ?? '') || err.message.split('\n')[0];
            reject(new Error(err.killed ? `timed out after ${timeoutMs / 1000} s` : detail));
          } else resolvePromise(stdout);
        },
      );
    });
  },
};

/** `DMCP_MCP=false` (or 0/no/off) turns MCP off entirely. */
export function mcpOff(env: NodeJS.ProcessEnv): boolean {
  return configSettings(env).mcpOff;
}

/** The trusted config dir: DMCP_CONFIG_DIR, else $XDG_CONFIG_HOME/durable-mcp, else ~/.config/durable-mcp. */
export function configDirPath(env: NodeJS.ProcessEnv): string | undefined {
  return configSettings(env).configDir;
}

/** The operator's turn key: proof that a turn's references were chosen by whoever can read this file. */
export const turnKeyFile = (dataDir: string): string => join(dataDir, DataDirEntry.turnKey);

/** Reads a turn key file; refuses one that other users could read or change. */
export async function readTurnKey(file: string): Promise<Buffer> {
  const info = await stat(file);
  if ((info.mode & 0o077) !== 0) {
    throw new Error(
      `${file} is open to other users (mode ${(info.mode & 0o777).toString(8)}); a turn key must be 0600: chmod 600 ${file}`,
    );
  }
  const text = (await readFile(file, 'utf8')).trim();
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`${file} does not hold a turn key (64 hex digits)`);
  return Buffer.from(text, 'hex');
}

/**
 * The operator's turn key under `dataDir`, created (0600, 32 random bytes) on first use. Workers
 * and clients may start at the same moment: the key is written to a private file and linked into
 * place, so every process reads the one key that won.
 */
export async function ensureTurnKey(dataDir: string): Promise<Buffer> {
  return readOrCreatePrivateFile(turnKeyFile(dataDir), readTurnKey, () => `${randomBytes(32).toString('hex')}\n`);
}

/** The file of each layer, as read by the loader. */
export const layerFiles = {
  configDir: (dir: string): string => join(dir, 'mcp.json'),
  workspace: (workspace: string): string => join(workspace, '.agents', 'mcp.json'),
  pluginFile: (plugin: string): string => join(plugin, '.mcp.json'),
  pluginManifest: (plugin: string): string => join(plugin, 'plugin.json'),
};

/**
 * Parses one `--mcp 'name:command arg1 arg2'` spec, or `name:https://url`. Pure. `cwd` is where a
 * stdio server starts: a spec has no folder of its own, so the worker gives it one that the turn
 * does not choose (see {@link Boundary.inlineCwd}).
 */
export function parseInlineSpec(spec: string, index: number, cwd: string): ServerEntry {
  const where = `--mcp #${index + 1}`;
  const colon = spec.indexOf(':');
  if (colon <= 0)
    throw new ConfigError(`${where}: expected 'name:command args...', got ${JSON.stringify(spec)}`, where);
  const name = spec.slice(0, colon).trim();
  const bad = nameProblem(name);
  if (bad) throw new ConfigError(`${where}: ${bad}`, where);
  const argv = spec
    .slice(colon + 1)
    .trim()
    .split(/\s+/)
    .filter(Boolean);
  if (argv.length === 0)
    throw new ConfigError(`${where}: server "${name}" has no command`, where, undefined, 'command');
  const base = {
    name,
    layer: 'inline' as const,
    source: where,
    trusted: true,
    env: {},
    envFrom: {},
    headers: {},
    enabled: true,
  };
  if (argv.length === 1 && /^[a-z][a-z0-9+.-]*:\/\//i.test(argv[0])) {
    const problem = urlProblem(argv[0]);
    if (problem) throw new ConfigError(`${where}: server "${name}": ${problem}`, where, undefined, 'url');
    return { ...base, type: 'http', url: argv[0], args: [] };
  }
  return { ...base, type: 'stdio', command: argv[0], args: argv.slice(1), cwd };
}

function fatal(result: ParseResult, file: string): ConfigError | undefined {
  if (result.error) return new ConfigError(result.error.message, file, result.error.line, result.error.field);
  const first = result.refused[0];
  if (!first) return undefined;
  const more = result.refused.length > 1 ? ` (and ${result.refused.length - 1} more problem(s) in this file)` : '';
  return new ConfigError(first.reason + more, file, first.line, first.field);
}

/** Parses the text of an explicit `--mcp-config` file; any problem is a thrown ConfigError. Pure. */
export function parseExplicitFile(
  text: string,
  file: string,
  workspace: string,
  env: NodeJS.ProcessEnv = {},
): ServerEntry[] {
  const result = parseConfigText(text, { kind: 'explicit', file, workspace }, env);
  const err = fatal(result, file);
  if (err) throw err;
  return result.servers;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * Content hash of resolved entries: the same entries give the same hash whatever the key
 * order in the files or the line they sit on (`source` is left out). Every other field counts,
 * `retry`, `protocol` and `tasks` included; `"auto"` in any of them is hashed as leaving it out, since it is the
 * default (so an existing session does not restart when a file spells the default out).
 */
export function hashEntries(entries: ServerEntry[]): string {
  const body = [...entries]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(({ source: _s, retry, protocol, tasks, ...rest }) =>
      canonical({
        ...rest,
        ...(retry === undefined || retry === 'auto' ? {} : { retry }),
        ...(protocol === undefined || protocol === 'auto' ? {} : { protocol }),
        ...(tasks === undefined || tasks === 'auto' ? {} : { tasks }),
      }),
    );
  return createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 16);
}

/** One layer's entries, ready to merge. */
export interface LayerEntries {
  kind: LayerKind;
  servers: ServerEntry[];
  refused: RefusedEntry[];
}

type Slot = { trusted: boolean; source: string; kind: LayerKind } & (
  | { server: ServerEntry }
  | { refused: RefusedEntry }
);

/**
 * Merges layers in order. A later trusted layer replaces an entry of the same name whole;
 * an untrusted layer never replaces an existing entry (the existing one stays, with a warning). A
 * refused entry holds its name like a good one: fixing it is the owner's job, not a later layer's.
 */
export function mergeLayers(layers: LayerEntries[]): {
  servers: ServerEntry[];
  refused: RefusedEntry[];
  warnings: string[];
} {
  const slots = new Map<string, Slot>();
  const warnings: string[] = [];
  for (const layer of layers) {
    const trusted = isTrustedLayer(layer.kind);
    const items: Slot[] = [
      ...layer.servers.map((s) => ({ trusted, source: s.source, kind: layer.kind, server: s })),
      ...layer.refused.map((r) => ({ trusted, source: r.source, kind: layer.kind, refused: r })),
    ];
    for (const item of items) {
      const name = 'server' in item ? item.server.name : item.refused.name;
      const existing = slots.get(name);
      if (existing && !trusted) {
        const why = existing.trusted
          ? 'an untrusted layer cannot replace a server from a trusted layer'
          : 'a server of that name came first';
        warnings.push(
          `${item.source}: server "${name}" from the ${layerLabel(layer.kind)} layer is ignored: ` +
            `${why} (${existing.source}, ${layerLabel(existing.kind)} layer)`,
        );
        continue;
      }
      // Map.set keeps the original position, so replacing an entry does not reorder the status.
      slots.set(name, item);
    }
  }
  const servers: ServerEntry[] = [];
  const refused: RefusedEntry[] = [];
  for (const slot of slots.values()) {
    if ('server' in slot) servers.push(slot.server);
    else refused.push(slot.refused);
  }
  return { servers, refused, warnings };
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function readError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code === 'EFBIG' ? e.message : `cannot read it (${e.code ?? e.message})`;
}

/** What the layer readers share during one load. */
interface LoadContext {
  refs: ConfigRefs;
  env: NodeJS.ProcessEnv;
  io: ConfigIO;
  /** Layer-level warnings, in the order the layers are read. */
  warnings: string[];
  /** Each distinct command (per folder) runs once per load, however many fields or layers use it. */
  ran: Map<string, Promise<CommandOutcome>>;
  /** The client's pre-check: no command runs, no variable needs to be set. */
  checkOnly: boolean;
}

/** Runs the `$(command)` expressions of one trusted file, before the (pure) parse sees it. */
async function runCommands(ctx: LoadContext, text: string, file: string): Promise<Map<string, CommandOutcome>> {
  const { io, env } = ctx;
  const out = new Map<string, CommandOutcome>();
  for (const command of findCommandExpressions(text)) {
    const cwd = dirname(file);
    const key = `${cwd}\0${command}`;
    let pending = ctx.ran.get(key);
    if (!pending) {
      const argv = splitCommand(command) ?? ['/bin/sh', '-c', command];
      const run = io.runCommand;
      pending =
        run === undefined
          ? Promise.resolve<CommandOutcome>({ ok: false, error: 'no command runner is available here' })
          : run({ argv, cwd, env: scrubbedEnvironment(env), timeoutMs: COMMAND_TIMEOUT_MS }).then(
              (stdout): CommandOutcome => ({ ok: true, stdout: stdout.trim() }),
              (err: unknown): CommandOutcome => ({
                ok: false,
                error: scrubSecrets(String((err as Error)?.message ?? err), env),
              }),
            );
      ctx.ran.set(key, pending);
    }
    out.set(command, await pending);
  }
  return out;
}

/** Reads an optional file: undefined when missing, a warning when unreadable. */
async function readOptional(ctx: LoadContext, file: string, what: string): Promise<string | undefined> {
  try {
    return await ctx.io.readText(file);
  } catch (err) {
    if (!isMissing(err)) ctx.warnings.push(`${file}: ${readError(err)}; ${what} skipped`);
    return undefined;
  }
}

/** Parses a file of a layer that may be skipped: a problem with the whole file becomes a warning. */
function parseOptional(ctx: LoadContext, text: string, info: LayerInfo, what: string): ParseResult | undefined {
  const result = parseConfigText(text, info, ctx.env);
  ctx.warnings.push(...result.warnings);
  if (result.error) {
    ctx.warnings.push(`${result.error.message}; ${what} skipped`);
    return undefined;
  }
  return result;
}

/** Layer 1, trusted: `mcp.json` in the config dir, unless DMCP_NO_USER_CONFIG says to skip it. */
async function readConfigDirLayer(ctx: LoadContext): Promise<LayerEntries | undefined> {
  if (configSettings(ctx.env).noUserConfig) return undefined;
  // Only the worker's own settings name the config dir: a turn never chooses it.
  const dir = configDirPath(ctx.env);
  if (dir === undefined) return undefined;
  const file = layerFiles.configDir(dir);
  const text = await readOptional(ctx, file, 'config dir layer');
  if (text === undefined) return undefined;
  const commands = await runCommands(ctx, text, file);
  const result = parseOptional(
    ctx,
    text,
    { kind: 'configDir', file, folder: dir, workspace: ctx.refs.workspace, commands },
    'config dir layer',
  );
  return result && { kind: 'configDir', ...result };
}

/**
 * Layer 1b, trusted (the operator put them on the shelf and granted them): the agent's shelf
 * servers. Stdio servers start in the folder inline servers start in, which the turn does not
 * choose; `$(command)` is not run here. Remote servers carry the name of the login they use.
 */
async function readShelfLayer(
  ctx: LoadContext,
  agent: string,
  options: LoadOptions,
): Promise<LayerEntries | undefined> {
  if (!options.shelf) return undefined;
  let read: { text?: string; warnings: string[] };
  try {
    read = await options.shelf(agent);
  } catch (err) {
    ctx.warnings.push(
      `shelf: could not read the servers of agent ${agent} (${scrubSecrets(String((err as Error)?.message ?? err), ctx.env)}); its shelf servers are left out of this turn`,
    );
    return undefined;
  }
  ctx.warnings.push(...read.warnings);
  if (read.text === undefined) return undefined;
  const folder = options.boundary?.inlineCwd ?? process.cwd();
  const result = parseOptional(
    ctx,
    read.text,
    { kind: 'shelf', file: `shelf (agent ${agent})`, folder, workspace: ctx.refs.workspace },
    'shelf layer',
  );
  if (!result) return undefined;
  const servers = result.servers.map((s) => (s.type === 'stdio' ? s : { ...s, login: s.name }));
  return { kind: 'shelf', ...result, servers };
}

/** Layer 2, untrusted (the agent can write it): read only when DMCP_WORKSPACE_MCP asks for it (see `admit`). */
async function readWorkspaceLayer(ctx: LoadContext): Promise<LayerEntries | undefined> {
  const file = layerFiles.workspace(ctx.refs.workspace);
  const text = await readOptional(ctx, file, 'workspace layer');
  if (text === undefined) return undefined;
  const result = parseOptional(
    ctx,
    text,
    { kind: 'workspace', file, workspace: ctx.refs.workspace },
    'workspace layer',
  );
  return result && { kind: 'workspace', ...result };
}

/**
 * Layer 3, untrusted: one plugin folder's `.mcp.json` and the `mcpServers` of its `plugin.json`.
 * Undefined when the plugin's name cannot name servers (the plugin is skipped with a warning).
 */
async function readPluginLayer(ctx: LoadContext, root: string): Promise<LayerEntries | undefined> {
  const { workspace } = ctx.refs;
  const manifestFile = layerFiles.pluginManifest(root);
  const manifestText = await readOptional(ctx, manifestFile, 'plugin manifest');
  const name = pluginNameFrom(manifestText, basename(root));
  const badName = nameProblem(name);
  if (badName) {
    ctx.warnings.push(
      `${root}: plugin name ${JSON.stringify(name)} cannot name servers (${badName.replace(/^server name \S+ /, '')}); plugin skipped`,
    );
    return undefined;
  }
  const plugin = { name, root };
  const file = layerFiles.pluginFile(root);
  const fileText = await readOptional(ctx, file, 'plugin layer');
  const parts: ParseResult[] = [];
  if (fileText !== undefined) {
    const r = parseOptional(ctx, fileText, { kind: 'plugin', file, workspace, plugin }, 'plugin layer');
    if (r) parts.push(r);
  }
  if (manifestText !== undefined) {
    const r = parseOptional(
      ctx,
      manifestText,
      { kind: 'plugin', file: manifestFile, workspace, plugin, manifest: true },
      'plugin manifest servers',
    );
    if (r) parts.push(r);
  }
  // Inside one plugin the manifest's entries override its file's entries, as a trusted layer would:
  // both files come from the same author.
  const byName = new Map<string, { server: ServerEntry } | { refused: RefusedEntry }>();
  for (const part of parts) {
    for (const s of part.servers) byName.set(s.name, { server: s });
    for (const r of part.refused) byName.set(r.name, { refused: r });
  }
  const values = [...byName.values()];
  return {
    kind: 'plugin',
    servers: values.flatMap((v) => ('server' in v ? [v.server] : [])),
    refused: values.flatMap((v) => ('refused' in v ? [v.refused] : [])),
  };
}

/**
 * Layer 4, trusted: one `--mcp-config` file. The user named it, so any problem stops the command.
 * `real` is the file with its symlinks resolved: the file that was checked against the allowed
 * folders is the file that is read, and its folder is where commands run and servers start.
 */
async function readExplicitLayer(ctx: LoadContext, file: string, real: string): Promise<LayerEntries> {
  let text: string;
  try {
    text = await ctx.io.readText(real);
  } catch (err) {
    throw new ConfigError(`${file}: ${readError(err)}`, file);
  }
  const commands = ctx.checkOnly ? undefined : await runCommands(ctx, text, real);
  const info = {
    kind: 'explicit' as const,
    file,
    folder: dirname(real),
    workspace: ctx.refs.workspace,
    commands,
    checkOnly: ctx.checkOnly,
  };
  const result = parseConfigText(text, info, ctx.env);
  const err = fatal(result, file);
  if (err) throw err;
  ctx.warnings.push(...result.warnings);
  return { kind: 'explicit', servers: result.servers, refused: [] };
}

/** Layer 5, trusted: the `--mcp` specs, in order; a bad one throws. Refused specs hold their names. */
function inlineLayer(refs: ConfigRefs, cwd: string, refused: RefusedEntry[]): LayerEntries {
  const servers = refs.inlineSpecs.flatMap((spec, i) =>
    refused.some((r) => r.source === `--mcp #${i + 1}`) ? [] : [parseInlineSpec(spec, i, cwd)],
  );
  return { kind: 'inline', servers, refused };
}

/** Options of {@link loadConfig}. */
export interface LoadOptions {
  /**
   * What the worker honours of the turn's references. Absent: everything, as written (the caller
   * is the authority: the CLI's pre-check of its own command line, or a test).
   */
  boundary?: Boundary;
  /** The session whose turn carries the references: part of the text `refs.proof` signs. */
  sessionId?: string;
  /**
   * The client's pre-check: explicit files and inline specs are checked for shape, names, trust
   * and secret rules, but no `$(command)` runs (the worker runs it, once) and no variable needs to
   * be set (the client's environment is not the worker's).
   */
  checkOnly?: boolean;
  /**
   * The servers granted to `agent` on the shelf, as `mcp.json` text, with the proofs of entries and
   * grants already checked (`warnings` says which were refused). Read only for a turn that names
   * an agent and whose references' proof holds; absent: turns get no shelf layer.
   */
  shelf?: (agent: string) => Promise<{ text?: string; warnings: string[] }>;
}

/** The hex HMAC-SHA256 proof of a turn's references under the operator's turn key. */
export function refsProof(key: Buffer, sessionId: string, refs: ConfigRefs): string {
  return createHmac('sha256', key).update(refsProofText(sessionId, refs)).digest('hex');
}

function proofHolds(key: Buffer, sessionId: string | undefined, refs: ConfigRefs): boolean {
  if (sessionId === undefined || typeof refs.proof !== 'string') return false;
  const want = Buffer.from(refsProof(key, sessionId, refs), 'hex');
  const got = Buffer.from(refs.proof, 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
}

/** Whether `path` is `dir` or lies inside it (both absolute, symlinks already resolved). */
function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

async function realOrResolved(io: ConfigIO, path: string): Promise<string> {
  if (!io.realPath) return resolve(path);
  return io.realPath(path).catch(() => resolve(path));
}

/** The references of a turn that the worker's boundary lets through, and why the others were not. */
interface Admitted {
  workspaceLayer: boolean;
  plugins: string[];
  /** Explicit files to read: as named, and with symlinks resolved. */
  files: { file: string; real: string }[];
  /** Inline specs that are not used, as failed entries (or warnings when a spec names no server). */
  inlineRefused: RefusedEntry[];
  /** The agent whose shelf servers join the turn. */
  agent?: string;
}

const PROOF_HINT =
  "the turn carries no valid proof that the worker's operator chose it " +
  "(start turns through TurnClient given the worker's turn key, <DMCP_DATA_DIR>/turn.key)";

/**
 * Applies the worker's boundary to the references a turn chose. Nothing refused here is read or
 * run; each refusal is a warning (or a failed server) naming the reference and the setting that
 * allows it, and the rest of the turn goes on.
 */
async function admit(ctx: LoadContext, options: LoadOptions): Promise<Admitted> {
  const { refs, io, env } = ctx;
  const boundary = options.boundary;
  const workspaceWanted = configSettings(env).workspaceMcp;
  const files = refs.mcpConfigFiles.map((file) => ({ file, real: file }));
  if (!boundary) return { workspaceLayer: workspaceWanted, plugins: refs.plugins ?? [], files, inlineRefused: [] };

  const proven = boundary.turnKey === undefined || proofHolds(boundary.turnKey, options.sessionId, refs);
  const out: Admitted = { workspaceLayer: false, plugins: [], files: [], inlineRefused: [] };
  if (refs.agent !== undefined) {
    const bad = agentIdProblem(refs.agent);
    if (bad) ctx.warnings.push(`agent: shelf servers not used: ${bad}`);
    else if (!proven) ctx.warnings.push(`agent ${refs.agent}: shelf servers not used: ${PROOF_HINT}`);
    else out.agent = refs.agent;
  }
  const allowedDirs =
    boundary.allowedConfigDirs && (await Promise.all(boundary.allowedConfigDirs.map((d) => realOrResolved(io, d))));
  const folderProblem = (named: string, real: string): string | undefined => {
    if (!allowedDirs) return undefined;
    if (allowedDirs.length === 0)
      return 'this worker allows none (its operator lists folders in DMCP_ALLOWED_CONFIG_DIRS)';
    if (allowedDirs.some((d) => isInside(real, d))) return undefined;
    return `${real === resolve(named) ? 'it lies' : `it resolves to ${real}, which lies`} outside the folders DMCP_ALLOWED_CONFIG_DIRS allows (${allowedDirs.join(', ')})`;
  };

  if (workspaceWanted) {
    const real = await realOrResolved(io, refs.workspace);
    const roots =
      boundary.workspaceRoots && (await Promise.all(boundary.workspaceRoots.map((d) => realOrResolved(io, d))));
    if (!proven) ctx.warnings.push(`workspace ${refs.workspace}: workspace layer not read: ${PROOF_HINT}`);
    else if (roots && !roots.some((r) => isInside(real, r))) {
      const why =
        roots.length === 0
          ? 'this worker allows none (its operator lists folders in DMCP_WORKSPACE_ROOTS)'
          : `it lies outside DMCP_WORKSPACE_ROOTS (${roots.join(', ')})`;
      ctx.warnings.push(`workspace ${refs.workspace}: workspace layer not read: ${why}`);
    } else out.workspaceLayer = true;
  }
  for (const root of refs.plugins ?? []) {
    const real = await realOrResolved(io, root);
    const problem = proven ? folderProblem(root, real) : PROOF_HINT;
    if (problem) ctx.warnings.push(`plugin ${root}: not used: ${problem}`);
    else out.plugins.push(real);
  }
  for (const file of refs.mcpConfigFiles) {
    const real = await realOrResolved(io, file);
    const problem = proven ? folderProblem(file, real) : PROOF_HINT;
    if (problem) ctx.warnings.push(`--mcp-config ${file}: not used: ${problem}`);
    else out.files.push({ file, real });
  }
  refs.inlineSpecs.forEach((spec, i) => {
    const problem = !boundary.allowInline
      ? 'inline --mcp specs are not allowed on this worker; its operator allows them with DMCP_ALLOW_INLINE=true'
      : proven
        ? undefined
        : PROOF_HINT;
    if (!problem) return;
    const source = `--mcp #${i + 1}`;
    const name = spec.slice(0, Math.max(spec.indexOf(':'), 0)).trim();
    if (name === '' || nameProblem(name)) {
      ctx.warnings.push(`${source}: not used: ${problem}`);
      // Held as a nameless refusal so the spec is still left out of the layer.
      out.inlineRefused.push({ name: '', layer: 'inline', source, transport: 'stdio', reason: problem });
      return;
    }
    const rest = spec.slice(spec.indexOf(':') + 1).trim();
    const transport = /^https?:\/\/\S+$/i.test(rest) ? 'http' : 'stdio';
    out.inlineRefused.push({ name, layer: 'inline', source, transport, reason: `${source}: not used: ${problem}` });
  });
  return out;
}

/**
 * Resolves every layer into the turn's server entries. Explicit files and inline specs throw
 * ConfigError; references the boundary refuses are left out, with a warning or a failed server.
 */
export async function loadConfig(
  refs: ConfigRefs,
  env: NodeJS.ProcessEnv,
  io: ConfigIO = nodeConfigIO,
  options: LoadOptions = {},
): Promise<LoadedConfig> {
  if (mcpOff(env)) return { off: true, servers: [], refused: [], warnings: [], hash: 'off' };
  const ctx: LoadContext = { refs, env, io, warnings: [], ran: new Map(), checkOnly: options.checkOnly === true };
  const bad = invalidAllowListNames(env);
  if (bad.length > 0)
    ctx.warnings.push(`DMCP_MCP_ENV: ignored ${bad.map((n) => JSON.stringify(n)).join(', ')} (not variable names)`);
  const admitted = await admit(ctx, options);

  // Read one after another, in precedence order: warnings come out in layer order, and a fatal
  // explicit file stops the load before later files run their commands.
  const layers: (LayerEntries | undefined)[] = [
    await readConfigDirLayer(ctx),
    admitted.agent !== undefined ? await readShelfLayer(ctx, admitted.agent, options) : undefined,
    admitted.workspaceLayer ? await readWorkspaceLayer(ctx) : undefined,
  ];
  for (const root of admitted.plugins) layers.push(await readPluginLayer(ctx, root));
  for (const { file, real } of admitted.files) layers.push(await readExplicitLayer(ctx, file, real));
  const inline = inlineLayer(refs, options.boundary?.inlineCwd ?? process.cwd(), admitted.inlineRefused);
  layers.push({ ...inline, refused: inline.refused.filter((r) => r.name !== '') });

  const merged = mergeLayers(layers.filter((l) => l !== undefined));
  return {
    off: false,
    servers: merged.servers,
    refused: merged.refused,
    warnings: [...ctx.warnings, ...merged.warnings].map((w) => scrubSecrets(w, env)),
    hash: hashEntries(merged.servers),
  };
}
