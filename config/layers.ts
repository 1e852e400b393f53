/**
 * Each layer read into its entries: the config dir, the shelf, the workspace, plugins, `--mcp-config`
 * files and `--mcp` specs. Files are read through `ConfigIO`, `$(command)`s run before the (pure)
 * parse; optional layers turn problems into warnings, the layers a command line names throw them.
 */
import { basename, dirname, join } from 'node:path';
import { configSettings } from '../settings/index.js';
import { COMMAND_TIMEOUT_MS, type ConfigIO } from './configIO.js';
import { splitCommand } from './expand.js';
import type { LayerEntries } from './merge.js';
import { nameProblem } from './names.js';
import { findCommandExpressions, parseConfigText, pluginNameFrom } from './parse.js';
import { scrubbedEnvironment, scrubSecrets } from './secrets.js';
import { urlProblem } from './transports.js';
import {
  ConfigError,
  type CommandOutcome,
  type ConfigRefs,
  type LayerInfo,
  type ParseResult,
  type RefusedEntry,
  type ServerEntry,
} from './types.js';

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
 * does not choose (the boundary's `inlineCwd`).
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

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function readError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code === 'EFBIG' ? e.message : `cannot read it (${e.code ?? e.message})`;
}

/** Reads the servers granted to an agent on the shelf, as `mcp.json` text, with warnings about refused ones. */
export type ShelfReader = (agent: string) => Promise<{ text?: string; warnings: string[] }>;

/** What the layer readers share during one load. */
export interface LoadContext {
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
export async function readConfigDirLayer(ctx: LoadContext): Promise<LayerEntries | undefined> {
  const { noUserConfig, configDir: dir } = configSettings(ctx.env);
  if (noUserConfig) return undefined;
  // Only the worker's own settings name the config dir: a turn never chooses it.
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
export async function readShelfLayer(
  ctx: LoadContext,
  agent: string,
  shelf: ShelfReader,
  folder: string,
): Promise<LayerEntries | undefined> {
  let read: { text?: string; warnings: string[] };
  try {
    read = await shelf(agent);
  } catch (err) {
    ctx.warnings.push(
      `shelf: could not read the servers of agent ${agent} (${scrubSecrets(String((err as Error)?.message ?? err), ctx.env)}); its shelf servers are left out of this turn`,
    );
    return undefined;
  }
  ctx.warnings.push(...read.warnings);
  if (read.text === undefined) return undefined;
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
export async function readWorkspaceLayer(ctx: LoadContext): Promise<LayerEntries | undefined> {
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
export async function readPluginLayer(ctx: LoadContext, root: string): Promise<LayerEntries | undefined> {
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
export async function readExplicitLayer(ctx: LoadContext, file: string, real: string): Promise<LayerEntries> {
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
export function inlineLayer(refs: ConfigRefs, cwd: string, refused: RefusedEntry[]): LayerEntries {
  const servers = refs.inlineSpecs.flatMap((spec, i) =>
    refused.some((r) => r.source === `--mcp #${i + 1}`) ? [] : [parseInlineSpec(spec, i, cwd)],
  );
  return { kind: 'inline', servers, refused };
}
