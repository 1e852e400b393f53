/**
 * What the Temporal UI shows for a turn from its start (Temporal user metadata): a one-line static
 * summary for the workflow list and static details. The client sets them when it starts the turn;
 * the workflow repeats the summary in the current details of a run that continued as new, so both
 * render it here. Names only: a command line, a URL or a folder above a file's own never reaches
 * this text.
 */
import { serverNameProblem } from './names.js';
import type { ConfigRefs } from './turn.js';

/** Longest static summary: it is one column of the workflow list. */
export const MAX_SUMMARY_LENGTH = 160;
/** Longest name (call ID, tool, server, field) shown; caller-chosen names could be long. */
const MAX_NAME_LENGTH = 64;

/** `text` with each control character (a line break among them) replaced by `by`. */
function withoutControls(text: string, by: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c >= 0x20 && c !== 0x7f) continue;
    out += text.slice(from, i) + by;
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** A name as inline code: one line, no backticks, bounded. */
export function inlineCode(name: string): string {
  const flat = withoutControls(name.includes('`') ? name.replaceAll('`', '?') : name, '?');
  const cut = flat.length > MAX_NAME_LENGTH ? `${flat.slice(0, MAX_NAME_LENGTH - 1)}…` : flat;
  return `\`${cut}\``;
}

/** The last segment of a path: the folder it sits in can name a person (a home folder). */
function baseName(path: string): string {
  const parts = path.split(/[\\/]/).filter(Boolean);
  return parts[parts.length - 1] ?? path;
}

/**
 * The name of an inline `name:command args` spec, or its position when the text before the colon is
 * no server name. Never the rest: a command line or URL can hold a token.
 */
function inlineName(spec: string, index: number): string {
  const colon = spec.indexOf(':');
  const name = colon > 0 ? spec.slice(0, colon).trim() : '';
  return serverNameProblem(name) === undefined ? name : `--mcp #${index + 1}`;
}

/** The servers a turn names at start: inline spec names, config file and plugin folder names. */
function namedAtStart(refs: ConfigRefs): string[] {
  return [
    ...refs.inlineSpecs.map(inlineName),
    ...refs.mcpConfigFiles.map(baseName),
    ...(refs.plugins ?? []).map((p) => `plugin ${baseName(p)}`),
  ];
}

/**
 * The turn's one-line summary for the workflow list: `session <id> · agent <name> · servers a, b`.
 * Servers are the ones the turn names at start (inline spec names, config file names, plugin folder
 * names); those of the workspace and the worker's own layers are known only once reconciled, and
 * show in the current details.
 */
export function turnSummary(sessionId: string, refs: ConfigRefs): string {
  const parts = [`session ${sessionId}`];
  if (refs.agent !== undefined) parts.push(`agent ${refs.agent}`);
  const servers = namedAtStart(refs);
  if (servers.length > 0) parts.push(`servers ${servers.join(', ')}`);
  const text = withoutControls(parts.join(' · '), ' ');
  return text.length > MAX_SUMMARY_LENGTH ? `${text.slice(0, MAX_SUMMARY_LENGTH - 1)}…` : text;
}

/**
 * The turn's static details (Markdown): how it is driven and what it names at start, one fact a
 * line (the UI shows them in a small frame).
 */
export function turnStaticDetails(sessionId: string, refs: ConfigRefs, batchCalls?: number): string {
  const lines = [
    `**durable-mcp turn** · ${batchCalls === undefined ? 'interactive' : `batch of ${plural(batchCalls, 'call')}`}`,
    `session ${inlineCode(sessionId)}${refs.agent !== undefined ? ` · agent ${inlineCode(refs.agent)}` : ''}`,
  ];
  const inline = refs.inlineSpecs.map(inlineName);
  if (inline.length > 0) lines.push(`servers given inline: ${inline.map(inlineCode).join(', ')}`);
  if (refs.mcpConfigFiles.length > 0)
    lines.push(`config files: ${refs.mcpConfigFiles.map((f) => inlineCode(baseName(f))).join(', ')}`);
  if (refs.plugins?.length) lines.push(`plugins: ${refs.plugins.map((p) => inlineCode(baseName(p))).join(', ')}`);
  // Two trailing spaces: a Markdown line break, so each fact keeps its line.
  return lines.join('  \n');
}

/** `n` and a noun, in the plural unless `n` is 1: `3 calls`. */
export function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}
