/** What every command of the CLI shares: its refusal, option parsers, settings, logger and version. */
import { createRequire } from 'node:module';
import type { Command } from 'commander';
import { loadSettings, type Settings } from '../settings/index.js';
import { createLogger } from '../worker/logger.js';

/** A refusal of the command line itself: one line on stderr, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** For repeatable options: every value, in order. */
export const collect = (value: string, previous: string[]) => [...previous, value];

/** Like {@link collect}, but undefined until the option is given once (an allow list that is absent is not empty). */
export const collectOptional = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** A step of a slow start, for a person watching: said on a terminal only, so scripts' stderr stays quiet. */
export const progress = (message: string) => {
  if (process.stderr.isTTY) process.stderr.write(`${message}\n`);
};

/** What the user must read whatever takes the output (stderr; stdout stays the command's result). */
export const notice = (message: string) => {
  process.stderr.write(`${message}\n`);
};

/** The settings of this command, from its environment: read once, at the edge. */
export function commandSettings(): Settings {
  return loadSettings(process.env);
}

/** DMCP_LOG_LEVEL when set; otherwise the command's own default (quieter for one-shot commands). */
export function cliLogger(settings: Settings, fallback = 'info') {
  return createLogger({ level: settings.given.has('DMCP_LOG_LEVEL') ? settings.logLevel : fallback });
}

/**
 * The value of option `key` when it was given on the command line, else undefined. An option that
 * declares its variable with `.env()` gets the raw text from commander; the caller takes the parsed
 * setting instead, so the variable is validated and read in one place.
 */
export function givenOnCommandLine<T>(command: Command, key: string): T | undefined {
  return command.getOptionValueSource(key) === 'cli' ? (command.opts()[key] as T) : undefined;
}

/** The version in package.json, read at run time so it cannot drift from the published one. */
export function packageVersion(): string {
  // The package refers to itself by name through its `exports` ("./package.json"), wherever it is built.
  return (createRequire(import.meta.url)('durable-mcp/package.json') as { version: string }).version;
}

export { GrpcStatus, grpcStatusOf } from '../client/failures.js';
