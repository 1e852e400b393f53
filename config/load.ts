/**
 * A turn's server entries: the references the worker's boundary admits (`admit.ts`), each layer read
 * in precedence order (`layers.ts`), merged (`merge.ts`) and hashed.
 */
import { configSettings } from '../settings/index.js';
import { admit } from './admit.js';
import { nodeConfigIO, type ConfigIO } from './configIO.js';
import {
  inlineLayer,
  readConfigDirLayer,
  readExplicitLayer,
  readPluginLayer,
  readShelfLayer,
  readWorkspaceLayer,
  type LoadContext,
  type ShelfReader,
} from './layers.js';
import { hashEntries, mergeLayers, type LayerEntries } from './merge.js';
import { invalidAllowListNames, scrubSecrets } from './secrets.js';
import type { Boundary, ConfigRefs, LoadedConfig } from './types.js';

// What the worker and the CLI take from the loader besides loadConfig.
export { hashEntries } from './merge.js';
export { ensureTurnKey, readTurnKey, refsProof, turnKeyFile } from './turnKey.js';

/** `DMCP_MCP=false` (or 0/no/off) turns MCP off entirely. */
export function mcpOff(env: NodeJS.ProcessEnv): boolean {
  return configSettings(env).mcpOff;
}

/** The trusted config dir: DMCP_CONFIG_DIR, else $XDG_CONFIG_HOME/durable-mcp, else ~/.config/durable-mcp. */
export function configDirPath(env: NodeJS.ProcessEnv): string | undefined {
  return configSettings(env).configDir;
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
  shelf?: ShelfReader;
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
  const admitted = await admit(ctx, options.boundary, options.sessionId);
  // Stdio servers of the shelf and of inline specs start here: a folder the turn does not choose.
  const inlineCwd = options.boundary?.inlineCwd ?? process.cwd();

  // Read one after another, in precedence order: warnings come out in layer order, and a fatal
  // explicit file stops the load before later files run their commands.
  const layers: (LayerEntries | undefined)[] = [
    await readConfigDirLayer(ctx),
    admitted.agent !== undefined && options.shelf
      ? await readShelfLayer(ctx, admitted.agent, options.shelf, inlineCwd)
      : undefined,
    admitted.workspaceLayer ? await readWorkspaceLayer(ctx) : undefined,
  ];
  for (const root of admitted.plugins) layers.push(await readPluginLayer(ctx, root));
  for (const { file, real } of admitted.files) layers.push(await readExplicitLayer(ctx, file, real));
  const inline = inlineLayer(refs, inlineCwd, admitted.inlineRefused);
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
