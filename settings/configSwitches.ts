import { isAbsolute, join } from 'node:path';
import { CONFIG_DIR_NAME } from '../contract/defaults.js';
import { parseFlag, type Env } from './valueParsers.js';

/** The config loader's switches and its trusted folder: parsed here, read by `config/` and `governance/`. */
export interface ConfigSettings {
  /** DMCP_MCP=false turns MCP off. */
  mcpOff: boolean;
  /** DMCP_NO_USER_CONFIG=1 skips the config-dir layer. */
  noUserConfig: boolean;
  /** DMCP_WORKSPACE_MCP=true reads `<workspace>/.agents/mcp.json`. */
  workspaceMcp: boolean;
  /** The trusted config dir: DMCP_CONFIG_DIR, else $XDG_CONFIG_HOME/durable-mcp, else ~/.config/durable-mcp. */
  configDir?: string;
}

/**
 * The config switches of `env`. Cheap, and called by the loader each turn with the environment it
 * was given (a worker's own, or one a test or `run`'s pre-check made), so they are never stale.
 * @throws SettingsError naming a switch whose value is not a flag.
 */
export function configSettings(env: Env): ConfigSettings {
  return {
    mcpOff: parseFlag(env.DMCP_MCP, 'DMCP_MCP') === false,
    noUserConfig: parseFlag(env.DMCP_NO_USER_CONFIG, 'DMCP_NO_USER_CONFIG') === true,
    workspaceMcp: parseFlag(env.DMCP_WORKSPACE_MCP, 'DMCP_WORKSPACE_MCP') === true,
    ...optional('configDir', configDirOf(env)),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function configDirOf(env: Env): string | undefined {
  if (env.DMCP_CONFIG_DIR) return env.DMCP_CONFIG_DIR;
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  if (env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)) return join(env.XDG_CONFIG_HOME, CONFIG_DIR_NAME);
  if (env.HOME) return join(env.HOME, '.config', CONFIG_DIR_NAME);
  return undefined;
}

/** The entries of DMCP_MCP_ENV (comma- or whitespace-separated), as written: the config room checks each is a variable name. */
export function mcpEnvEntries(env: Env): string[] {
  return (env.DMCP_MCP_ENV ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}
