import { MAX_SERVER_NAME_LENGTH, serverNameProblem } from '../contract/index.js';

/** Longest server name outside plugins; keeps public tool names well under 64 characters. */
export const MAX_NAME_LENGTH = MAX_SERVER_NAME_LENGTH;

/** The server-name rule (it lives in the contract: the shelf workflow checks names too). */
export const nameProblem = serverNameProblem;

/** True when `name` is a valid server name. */
export function isValidServerName(name: string): boolean {
  return nameProblem(name) === undefined;
}

/** The public name of a plugin's server: `plugin_<plugin>_<server>` (may exceed 32 characters). */
export function pluginServerName(plugin: string, server: string): string {
  return `plugin_${plugin}_${server}`;
}
