// Only a type import and text/ (pure string helpers, no imports of their own): this stays a pure
// function with no Node built-ins, so any room (the workflow included) may render it.
import type { ServerStatus, TurnStatus } from '../contract/index.js';
import { oneLine } from '../text/oneLine.js';

/** Longest server-supplied text (an error or a warning) quoted in the paragraph. */
export const MAX_QUOTED_LENGTH = 200;
/** Warnings shown per server; the rest are counted. */
export const MAX_WARNINGS_SHOWN = 3;

const HEADER = 'MCP servers for this turn (this list is current; ignore MCP server lists from earlier turns):';

/** Server-supplied text as one line of at most `max` characters, spacing collapsed. */
function quote(text: string, max = MAX_QUOTED_LENGTH): string {
  return oneLine(text, { max, spacing: 'collapse', cut: 'fit' });
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * How the model will see the server's tools. Normally every name shares `mcp__<server>__` (or
 * `<server>__`); names that were cleaned or cut do not, and then they are listed as they are.
 */
function describeToolNames(server: ServerStatus): string {
  const { name, tools } = server;
  if (tools.length === 0) return 'no tools';
  const cleanedName = name.replace(/[^A-Za-z0-9_-]/gu, '_');
  const candidates = [`mcp__${name}__`, `${name}__`, `mcp__${cleanedName}__`, `${cleanedName}__`];
  const prefix = candidates.find((p) => tools.every((tool) => tool.startsWith(p)));
  const count = plural(tools.length, 'tool');
  if (prefix !== undefined) return `${count}, named ${prefix}*`;
  return `${count}: ${[...tools].sort(compareStrings).join(', ')}`;
}

function describeWarnings(warnings: string[]): string {
  if (warnings.length === 0) return '';
  const shown = warnings.slice(0, MAX_WARNINGS_SHOWN).map((w) => quote(w));
  const more = warnings.length - shown.length;
  return `; ${warnings.length === 1 ? 'warning' : 'warnings'}: ${shown.join('; ')}${more > 0 ? ` (+${more} more)` : ''}`;
}

function describeServer(server: ServerStatus): string {
  const name = quote(server.name, 100);
  switch (server.state) {
    case 'ready':
    case 'degraded':
      return `- ${name}: connected, ${describeToolNames(server)}${describeWarnings(server.warnings)}`;
    case 'failed': {
      // The operator has to log in; the model can only tell them so (and must not try the tools).
      if (server.login === 'refresh_failed' && server.error)
        return `- ${name}: not available this turn: ${quote(server.error)}`;
      if (server.login !== undefined && server.error)
        return `- ${name}: not available until its operator logs in: ${quote(server.error)}`;
      const reason = server.error === undefined || server.error.trim() === '' ? 'no reason given' : quote(server.error);
      return `- ${name}: not available, failed to start or answer: ${reason}`;
    }
    case 'disabled':
      return `- ${name}: disabled in the configuration`;
    case 'off':
      return `- ${name}: off`;
  }
}

/**
 * Renders a turn's status as a short text block for the model's context: one line per
 * server, sorted by name, saying which servers are connected and how their tools are named, and
 * what failed servers said. Pure and deterministic: the same status gives the same text.
 */
export function renderServersParagraph(status: TurnStatus): string {
  if (status.mcp === 'off') return 'MCP is off for this turn: there are no MCP servers and no MCP tools.';
  if (status.servers.length === 0) return 'There are no MCP servers for this turn, so there are no MCP tools.';
  const lines = status.servers
    .map((server) => ({ name: server.name, line: describeServer(server) }))
    // Ties (a duplicated name) fall back to the line text so input order never shows through.
    .sort((a, b) => compareStrings(a.name, b.name) || compareStrings(a.line, b.line))
    .map(({ line }) => line);
  return [HEADER, ...lines].join('\n');
}
