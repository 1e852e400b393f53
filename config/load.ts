import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join } from 'node:path';
import type { LayerKind } from '../contract/index.js';
import { splitCommand } from './expand.js';
import { MAX_CONFIG_BYTES } from './json.js';
import { nameProblem } from './names.js';
import { findCommandExpressions, layerLabel, parseConfigText, pluginNameFrom, urlProblem } from './parse.js';
import { invalidAllowListNames, scrubbedEnvironment, scrubSecrets } from './secrets.js';
import { parseFlag } from '../settings/index.js';
import {
  ConfigError, isTrustedLayer, type CommandOutcome, type ConfigRefs, type LayerInfo, type LoadedConfig,
  type ParseResult, type RefusedEntry, type ServerEntry,
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
}

/** The real file system and process runner. Files over 1 MiB are refused before being read. */
export const nodeConfigIO: ConfigIO = {
  async readText(path) {
    const info = await stat(path);
    if (info.size > MAX_CONFIG_BYTES) {
      throw Object.assign(new Error(`file is ${info.size} bytes; config files are limited to 1 MiB`), { code: 'EFBIG' });
    }
    return readFile(path, 'utf8');
  },
  runCommand({ argv, cwd, env, timeoutMs }) {
    return new Promise((resolvePromise, reject) => {
      execFile(argv[0], argv.slice(1), { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 1024 * 1024, windowsHide: true },
        (err, stdout, stderr) => {
          if (err) {
            const detail = (stderr.trim().split('\n').pop() ?? '') || err.message.split('\n')[0];
            reject(new Error(err.killed ? `timed out after ${timeoutMs / 1000} s` : detail));
          } else resolvePromise(stdout);
        });
    });
  },
};

/** `DMCP_MCP=false` (or 0/no/off) turns MCP off entirely. */
export function mcpOff(env: NodeJS.ProcessEnv): boolean {
  return parseFlag(env.DMCP_MCP, 'DMCP_MCP') === false;
}

/** The trusted config dir: DMCP_CONFIG_DIR, else $XDG_CONFIG_HOME/durable-mcp, else ~/.config/durable-mcp. */
export function configDirPath(env: NodeJS.ProcessEnv): string | undefined {
  if (env.DMCP_CONFIG_DIR) return env.DMCP_CONFIG_DIR;
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  if (env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)) return join(env.XDG_CONFIG_HOME, 'durable-mcp');
  if (env.HOME) return join(env.HOME, '.config', 'durable-mcp');
  return undefined;
}

/** The file of each layer, as read by the loader. */
export const layerFiles = {
  configDir: (dir: string): string => join(dir, 'mcp.json'),
  workspace: (workspace: string): string => join(workspace, '.agents', 'mcp.json'),
  pluginFile: (plugin: string): string => join(plugin, '.mcp.json'),
  pluginManifest: (plugin: string): string => join(plugin, 'plugin.json'),
};

/** Parses one `--mcp 'name:command arg1 arg2'` spec, or `name:https://url`. Pure. */
export function parseInlineSpec(spec: string, index: number, workspace: string): ServerEntry {
  const where = `--mcp #${index + 1}`;
  const colon = spec.indexOf(':');
  if (colon <= 0) throw new ConfigError(`${where}: expected 'name:command args...', got ${JSON.stringify(spec)}`, where);
  const name = spec.slice(0, colon).trim();
  const bad = nameProblem(name);
  if (bad) throw new ConfigError(`${where}: ${bad}`, where);
  const argv = spec.slice(colon + 1).trim().split(/\s+/).filter(Boolean);
  if (argv.length === 0) throw new ConfigError(`${where}: server "${name}" has no command`, where, undefined, 'command');
  const base = { name, layer: 'inline' as const, source: where, trusted: true, env: {}, envFrom: {}, headers: {}, enabled: true };
  if (argv.length === 1 && /^[a-z][a-z0-9+.-]*:\/\//i.test(argv[0])) {
    const problem = urlProblem(argv[0]);
    if (problem) throw new ConfigError(`${where}: server "${name}": ${problem}`, where, undefined, 'url');
    return { ...base, type: 'http', url: argv[0], args: [] };
  }
  return { ...base, type: 'stdio', command: argv[0], args: argv.slice(1), cwd: workspace };
}

function fatal(result: ParseResult, file: string): ConfigError | undefined {
  if (result.error) return new ConfigError(result.error.message, file, result.error.line, result.error.field);
  const first = result.refused[0];
  if (!first) return undefined;
  const more = result.refused.length > 1 ? ` (and ${result.refused.length - 1} more problem(s) in this file)` : '';
  return new ConfigError(first.reason + more, file, first.line, first.field);
}

/** Parses the text of an explicit `--mcp-config` file; any problem is a thrown ConfigError. Pure. */
export function parseExplicitFile(text: string, file: string, workspace: string, env: NodeJS.ProcessEnv = {}): ServerEntry[] {
  const result = parseConfigText(text, { kind: 'explicit', file, workspace }, env);
  const err = fatal(result, file);
  if (err) throw err;
  return result.servers;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]));
  }
  return value;
}

/**
 * Content hash of resolved entries: the same entries give the same hash whatever the key
 * order in the files or the line they sit on (`source` is left out). Every other field counts,
 * `retry` included; `"retry": "auto"` is hashed as no `retry`, since it is the default.
 */
export function hashEntries(entries: ServerEntry[]): string {
  const body = [...entries]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(({ source: _s, retry, ...rest }) => canonical(retry === undefined || retry === 'auto' ? rest : { ...rest, retry }));
  return createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 16);
}

/** One layer's entries, ready to merge. */
export interface LayerEntries {
  kind: LayerKind;
  servers: ServerEntry[];
  refused: RefusedEntry[];
}

type Slot = { trusted: boolean; source: string; kind: LayerKind } & ({ server: ServerEntry } | { refused: RefusedEntry });

/**
 * Merges layers in order. A later trusted layer replaces an entry of the same name whole;
 * an untrusted layer never replaces an existing entry (the existing one stays, with a warning). A
 * refused entry holds its name like a good one: fixing it is the owner's job, not a later layer's.
 */
export function mergeLayers(layers: LayerEntries[]): { servers: ServerEntry[]; refused: RefusedEntry[]; warnings: string[] } {
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
        warnings.push(`${item.source}: server "${name}" from the ${layerLabel(layer.kind)} layer is ignored: ` +
          `${why} (${existing.source}, ${layerLabel(existing.kind)} layer)`);
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
      pending = run === undefined
        ? Promise.resolve<CommandOutcome>({ ok: false, error: 'no command runner is available here' })
        : run({ argv, cwd, env: scrubbedEnvironment(env), timeoutMs: COMMAND_TIMEOUT_MS }).then(
          (stdout): CommandOutcome => ({ ok: true, stdout: stdout.trim() }),
          (err: unknown): CommandOutcome => ({ ok: false, error: scrubSecrets(String((err as Error)?.message ?? err), env) }),
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
  if (parseFlag(ctx.env.DMCP_NO_USER_CONFIG, 'DMCP_NO_USER_CONFIG') === true) return undefined;
  const dir = ctx.refs.configDir ?? configDirPath(ctx.env);
  if (dir === undefined) return undefined;
  const file = layerFiles.configDir(dir);
  const text = await readOptional(ctx, file, 'config dir layer');
  if (text === undefined) return undefined;
  const commands = await runCommands(ctx, text, file);
  const result = parseOptional(ctx, text, { kind: 'configDir', file, workspace: ctx.refs.workspace, commands }, 'config dir layer');
  return result && { kind: 'configDir', ...result };
}

/** Layer 2, untrusted (the agent can write it): read only when DMCP_WORKSPACE_MCP asks for it. */
async function readWorkspaceLayer(ctx: LoadContext): Promise<LayerEntries | undefined> {
  if (parseFlag(ctx.env.DMCP_WORKSPACE_MCP, 'DMCP_WORKSPACE_MCP') !== true) return undefined;
  const file = layerFiles.workspace(ctx.refs.workspace);
  const text = await readOptional(ctx, file, 'workspace layer');
  if (text === undefined) return undefined;
  const result = parseOptional(ctx, text, { kind: 'workspace', file, workspace: ctx.refs.workspace }, 'workspace layer');
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
    ctx.warnings.push(`${root}: plugin name ${JSON.stringify(name)} cannot name servers (${badName.replace(/^server name \S+ /, '')}); plugin skipped`);
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
    const r = parseOptional(ctx, manifestText, { kind: 'plugin', file: manifestFile, workspace, plugin, manifest: true }, 'plugin manifest servers');
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

/** Layer 4, trusted: one `--mcp-config` file. The user named it, so any problem stops the command. */
async function readExplicitLayer(ctx: LoadContext, file: string): Promise<LayerEntries> {
  let text: string;
  try {
    text = await ctx.io.readText(file);
  } catch (err) {
    throw new ConfigError(`${file}: ${readError(err)}`, file);
  }
  const commands = await runCommands(ctx, text, file);
  const result = parseConfigText(text, { kind: 'explicit', file, workspace: ctx.refs.workspace, commands }, ctx.env);
  const err = fatal(result, file);
  if (err) throw err;
  ctx.warnings.push(...result.warnings);
  return { kind: 'explicit', servers: result.servers, refused: [] };
}

/** Layer 5, trusted: the `--mcp` specs, in order; a bad one throws. */
function inlineLayer(refs: ConfigRefs): LayerEntries {
  return { kind: 'inline', servers: refs.inlineSpecs.map((spec, i) => parseInlineSpec(spec, i, refs.workspace)), refused: [] };
}

/** Resolves every layer into the turn's server entries. Explicit files and inline specs throw ConfigError. */
export async function loadConfig(refs: ConfigRefs, env: NodeJS.ProcessEnv, io: ConfigIO = nodeConfigIO): Promise<LoadedConfig> {
  if (mcpOff(env)) return { off: true, servers: [], refused: [], warnings: [], hash: 'off' };
  const ctx: LoadContext = { refs, env, io, warnings: [], ran: new Map() };
  const bad = invalidAllowListNames(env);
  if (bad.length > 0) ctx.warnings.push(`DMCP_MCP_ENV: ignored ${bad.map((n) => JSON.stringify(n)).join(', ')} (not variable names)`);

  // Read one after another, in precedence order: warnings come out in layer order, and a fatal
  // explicit file stops the load before later files run their commands.
  const layers: (LayerEntries | undefined)[] = [await readConfigDirLayer(ctx), await readWorkspaceLayer(ctx)];
  for (const root of refs.plugins ?? []) layers.push(await readPluginLayer(ctx, root));
  for (const file of refs.mcpConfigFiles) layers.push(await readExplicitLayer(ctx, file));
  layers.push(inlineLayer(refs));

  const merged = mergeLayers(layers.filter((l) => l !== undefined));
  return {
    off: false,
    servers: merged.servers,
    refused: merged.refused,
    warnings: [...ctx.warnings, ...merged.warnings].map((w) => scrubSecrets(w, env)),
    hash: hashEntries(merged.servers),
  };
}
