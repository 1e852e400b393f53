/**
 * What the Temporal UI shows for a running turn (Temporal user metadata): its current details in
 * Markdown, kept by the workflow (the static summary and details the client sets at start are in
 * contract/turnMetadata.ts). Pure and free of SDK imports, so the rendering is table-tested. Names and states only: an argument, a result, an error message or
 * an input request's message never reaches this text. It is meant to be read at a glance by anyone
 * who can list workflows (through the codec server where payloads are encrypted), while values stay
 * behind the history's own payloads.
 */
import type { CallErrorKind, CallOutcome, ProtocolEra, ServerState, TurnResult } from '../contract/index.js';
import { inlineCode as code, plural } from '../contract/turnMetadata.js';

/** Rows of calls the current details show; older calls are counted, not listed. */
export const DETAILS_CALLS_SHOWN = 20;
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
  /** A model turn: its model, the steps done, and how many calls the latest one asked for. */
  model?: { name: string; steps: number; lastCalls: number };
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
  if (view.model) {
    const { name, steps, lastCalls } = view.model;
    lines.push(
      `**Model** ${code(name)} · ${plural(steps, 'step')} · the latest asked for ${plural(lastCalls, 'call')}`,
      '',
    );
  }
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
