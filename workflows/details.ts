/**
 * What the Temporal UI shows for a turn (Temporal user metadata): a one-line static summary for the
 * workflow list, static details, and the current details in Markdown. Pure and free of SDK imports,
 * so the client (which sets the static parts at start) and the workflow (which keeps the current
 * details) render the same text. Names and states only: an argument, a result, an error message or
 * an input request's message never reaches this text. It is meant to be read at a glance by anyone
 * who can list workflows (through the codec server where payloads are encrypted), while values stay
 * behind the history's own payloads.
 */
import {
  serverNameProblem,
  type CallErrorKind,
  type CallOutcome,
  type ConfigRefs,
  type ProtocolEra,
  type ServerState,
  type TurnResult,
} from '../contract/index.js';

/** Rows of calls the current details show; older calls are counted, not listed. */
export const DETAILS_CALLS_SHOWN = 20;
/** Longest static summary: it is one column of the workflow list. */
export const MAX_SUMMARY_LENGTH = 160;
/** Longest name (call ID, tool, server, field) shown; caller-chosen names could be long. */
const MAX_NAME_LENGTH = 64;
/** Input request fields named, at most. */
const MAX_FIELDS_NAMED = 8;

/** Where a call is. `waiting`: for a person's answer (an input request) or a task's end. */
export type DetailsCallStatus = 'running' | 'waiting' | 'ok' | 'error' | 'cancelled';

/**
 * What an input request asks, without its message: the mode, and for a form the names of the
 * fields it asks for (the schema's property names).
 */
export interface InputWait {
  requestId: string;
  mode: 'form' | 'url';
  fields?: string[];
}

/** A long-running task a call waits on: its ID and its state as the server reports it. */
export interface TaskWait {
  taskId: string;
  status: string;
}

/** One call as the current details show it. */
export interface DetailsCall {
  id: string;
  /** The public tool name. */
  name: string;
  status: DetailsCallStatus;
  /** Attempts so far; 0 while the call has not reached its tool (hooks, queueing). */
  attempt: number;
  /** Why an `error` call failed (the kind only, never the message). */
  errorKind?: CallErrorKind;
  /** The tool ran and said it failed (MCP `isError`). */
  toolError?: boolean;
  input?: InputWait;
  task?: TaskWait;
}

/** A server as the current details show it. */
export interface DetailsServer {
  name: string;
  state: ServerState;
  era?: ProtocolEra;
}

/** Everything the current details are rendered from: a plain value, so the rendering is table-tested. */
export interface TurnDetailsView {
  phase: 'starting' | 'ready' | 'ended';
  endedBy?: TurnResult['endedBy'];
  /** Absent until the first reconcile. */
  servers?: DetailsServer[];
  /** `mcp: off` on the worker (DMCP_MCP=false). */
  mcpOff?: boolean;
  /** Calls still running or waiting, oldest first. */
  open: DetailsCall[];
  /** The newest finished calls, oldest first; the rendering shows the last few. */
  finished: DetailsCall[];
  /** Finished calls of this run, including those no longer in `finished`. */
  callsDone: number;
  /** Finished calls by outcome, over the whole run. */
  counts: { ok: number; error: number; cancelled: number };
  /** Calls finished in earlier runs of a turn that continued as new. */
  callsBefore?: number;
  /** A run made by continue-as-new: the turn's summary, which that run has no static summary for. */
  continuedSummary?: string;
}

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
function code(name: string): string {
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
    `session ${code(sessionId)}${refs.agent !== undefined ? ` · agent ${code(refs.agent)}` : ''}`,
  ];
  const inline = refs.inlineSpecs.map(inlineName);
  if (inline.length > 0) lines.push(`servers given inline: ${inline.map(code).join(', ')}`);
  if (refs.mcpConfigFiles.length > 0)
    lines.push(`config files: ${refs.mcpConfigFiles.map((f) => code(baseName(f))).join(', ')}`);
  if (refs.plugins?.length) lines.push(`plugins: ${refs.plugins.map((p) => code(baseName(p))).join(', ')}`);
  // Two trailing spaces: a Markdown line break, so each fact keeps its line.
  return lines.join('  \n');
}

/** A finished call's row fields, from its recorded outcome: its status and error kind, never its content or message. */
export function finishedCall(id: string, name: string, outcome: CallOutcome): DetailsCall {
  if (outcome.status === 'ok')
    return { id, name, status: 'ok', attempt: outcome.attempts, ...(outcome.isError ? { toolError: true } : {}) };
  if (outcome.errorKind === 'cancelled') return { id, name, status: 'cancelled', attempt: outcome.attempts };
  return {
    id,
    name,
    status: 'error',
    attempt: outcome.attempts,
    ...(outcome.errorKind !== undefined ? { errorKind: outcome.errorKind } : {}),
  };
}

/**
 * What an open call waits for, in words and names only: "waiting for input: form asking for
 * `name`, `email` (request `r1`)". The request's message is left out: it is the server's text and
 * may quote what the call was given.
 */
export function describeWait(call: Pick<DetailsCall, 'input' | 'task'>): string | undefined {
  if (call.input) {
    const { mode, fields = [], requestId } = call.input;
    const named = fields.slice(0, MAX_FIELDS_NAMED).map(code).join(', ');
    const more = fields.length > MAX_FIELDS_NAMED ? ` and ${fields.length - MAX_FIELDS_NAMED} more` : '';
    const what =
      mode === 'url' ? 'a page to open (URL mode)' : fields.length > 0 ? `form asking for ${named}${more}` : 'form';
    return `waiting for input: ${what} (request ${code(requestId)})`;
  }
  if (call.task) return `task ${code(call.task.taskId)} ${code(call.task.status)}`;
  return undefined;
}

/** Rows of finished calls, which never change: each is rendered once, not on every change of the turn. */
const finishedRows = new WeakMap<DetailsCall, string>();

function finishedRow(call: DetailsCall): string {
  let row = finishedRows.get(call);
  if (row === undefined) finishedRows.set(call, (row = callRow(call)));
  return row;
}

function callRow(call: DetailsCall): string {
  let status: string = call.status;
  if (call.toolError) status = 'ok · tool error';
  if (call.errorKind !== undefined && call.status === 'error') status = `error · ${call.errorKind}`;
  const attempt = call.attempt > 1 ? ` · attempt ${call.attempt}` : '';
  const wait = describeWait(call);
  return `- ${code(call.id)} ${code(call.name)} **${status}**${attempt}${wait ? ` · ${wait}` : ''}`;
}

/** Servers named on one line, at most this many. */
const SERVERS_SHOWN = 12;

function serversText(view: TurnDetailsView): string {
  if (view.mcpOff) return '**Servers** MCP is off on the worker';
  if (!view.servers) return '**Servers** not reconciled yet';
  if (view.servers.length === 0) return '**Servers** none';
  const shown = view.servers
    .slice(0, SERVERS_SHOWN)
    .map((s) => `${code(s.name)} ${s.state}${s.era ? ` (${s.era})` : ''}`);
  const more = view.servers.length > SERVERS_SHOWN ? ` and ${view.servers.length - SERVERS_SHOWN} more` : '';
  return `**Servers** ${shown.join(', ')}${more}`;
}

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}

function countsLine(view: TurnDetailsView): string {
  const { ok, error, cancelled } = view.counts;
  const waiting = view.open.filter((c) => c.status === 'waiting').length;
  const parts = [`${view.open.length - waiting} running`];
  if (waiting > 0) parts.push(`${waiting} waiting`);
  parts.push(`${view.callsDone} done (${ok} ok, ${error} error, ${cancelled} cancelled)`);
  if (view.callsBefore) parts.push(`${view.callsBefore} in earlier runs`);
  return `**Calls** · ${parts.join(' · ')}`;
}

/**
 * The turn's current details in Markdown: its phase, its servers with state and era, and its calls
 * (open calls first, with what they wait for, then the newest finished ones), at most
 * {@link DETAILS_CALLS_SHOWN} rows with a count of the rest.
 */
export function renderTurnDetails(view: TurnDetailsView): string {
  const phase = view.phase === 'ended' ? `ended${view.endedBy ? ` (${view.endedBy})` : ''}` : view.phase;
  // The UI shows this in a small frame: the turn and its servers on one line, then the calls. Blank
  // lines around the list: the UI's Markdown does not let a list interrupt a paragraph.
  const head = `**Turn** ${phase} · ${serversText(view)}`;
  // Two trailing spaces: a Markdown line break before the summary a continued run carries.
  const lines =
    view.continuedSummary === undefined
      ? [head, '']
      : [`${head}  `, `${view.continuedSummary} · continued from an earlier run`, ''];
  lines.push(countsLine(view));
  const open = view.open.slice(0, DETAILS_CALLS_SHOWN);
  const room = DETAILS_CALLS_SHOWN - open.length;
  const finished = room > 0 ? view.finished.slice(-room) : [];
  const hidden = view.open.length - open.length + view.callsDone - finished.length;
  if (open.length + finished.length + hidden > 0) lines.push('');
  // Newest first: the row a person looks for is the latest.
  lines.push(...open.map(callRow), ...[...finished].reverse().map(finishedRow));
  if (hidden > 0) lines.push(`- … and ${plural(hidden, 'earlier call')} not shown`);
  return lines.join('\n');
}
