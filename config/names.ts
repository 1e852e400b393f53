/** Longest server name outside plugins; keeps public tool names well under 64 characters. */
export const MAX_NAME_LENGTH = 32;

const NAME_RE = /^[A-Za-z](?:[A-Za-z0-9]|[_-](?=[A-Za-z0-9]))*$/;

/**
 * Checks a server name: starts with a letter; letters, digits, single `_` or `-` between
 * them (never `__`, which separates the parts of tool names); at most 32 characters.
 * Returns the problem in words, or undefined when the name is fine.
 */
export function nameProblem(name: string, maxLength: number = MAX_NAME_LENGTH): string | undefined {
  const shown = JSON.stringify(name);
  if (name === '') return 'server name is empty';
  if (!/^[A-Za-z]/.test(name)) return `server name ${shown} must start with a letter (A-Z or a-z)`;
  const bad = [...name].find((c) => !/[A-Za-z0-9_-]/.test(c));
  if (bad !== undefined) {
    return `server name ${shown} contains ${JSON.stringify(bad)}; use only ASCII letters, digits, "_" or "-"`;
  }
  if (/[_-]{2}/.test(name)) {
    return `server name ${shown} has two separators in a row ("__" separates the parts of tool names); use a single "_" or "-"`;
  }
  if (!NAME_RE.test(name)) return `server name ${shown} must end with a letter or digit`;
  if (name.length > maxLength) return `server name ${shown} is ${name.length} characters long; at most ${maxLength} are allowed`;
  return undefined;
}

/** True when `name` is a valid server name. */
export function isValidServerName(name: string): boolean {
  return nameProblem(name) === undefined;
}

/** The public name of a plugin's server: `plugin_<plugin>_<server>` (may exceed 32 characters). */
export function pluginServerName(plugin: string, server: string): string {
  return `plugin_${plugin}_${server}`;
}
