/**
 * A session's events, read from Temporal alone (the API keeps no state): the stream lists the
 * session's turns every poll to find new ones, and follows each turn's history as it grows (a
 * long poll that answers with the events not read yet), so no event is read or decoded twice.
 * Each event has a stable ID (`<turnId>|status`, `<turnId>|<callId>|started`, ...), so a client
 * that reconnects and is sent the newest turn's events again can drop the ones it has.
 */
import type { Client } from '@temporalio/client';
import { inputRequestId } from '../contract/index.js';
import type { TurnClient } from '../client/turnClient.js';
import { transcriptFollower, type Transcript } from '../client/transcript.js';
import { decodeHistoryPayloads } from '../payloads/decodeHistory.js';

export interface SessionEvent {
  id: string;
  event:
    | 'mcp.status'
    | 'model.step'
    | 'call.started'
    | 'call.input_required'
    | 'call.progress'
    | 'call.finished'
    | 'turn.ended';
  data: Record<string, unknown>;
}

/** What a stream has sent of one turn. */
interface TurnSeen {
  status: boolean;
  started: Set<string>;
  /** Input request IDs sent. */
  asked: Set<string>;
  /** Task changes sent, as `<callId>|<poll>`; absent: none sent yet. */
  progress?: Set<string>;
  finished: Set<string>;
  /** Model steps sent; absent: none yet. */
  steps?: Set<number>;
  ended: boolean;
}

/** A model turn's answered steps not sent yet that go before call `calls` (as in the transcript); updates `seen`. */
function stepEvents(t: Transcript, seen: TurnSeen, calls: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (const s of t.modelSteps ?? []) {
    if (s.callsBefore > calls || s.text === undefined || seen.steps?.has(s.step)) continue;
    (seen.steps ??= new Set()).add(s.step);
    out.push({
      id: `${t.turnId}|model|${s.step}`,
      event: 'model.step',
      data: {
        sessionId: t.sessionId,
        turnId: t.turnId,
        step: s.step,
        model: s.model,
        text: s.text,
        toolCalls: s.toolCalls ?? [],
        ...(s.finishReason !== undefined ? { finishReason: s.finishReason } : {}),
        ...(s.usage !== undefined ? { usage: s.usage } : {}),
      },
    });
  }
  return out;
}

/** The events of one turn's transcript not sent yet; updates `seen`. Pure. */
export function newEvents(t: Transcript, seen: TurnSeen): SessionEvent[] {
  const out: SessionEvent[] = [];
  const base = { sessionId: t.sessionId, turnId: t.turnId };
  if (!seen.status && t.status) {
    seen.status = true;
    out.push({
      id: `${t.turnId}|status`,
      event: 'mcp.status',
      data: { ...base, reportedAt: t.status.reportedAt, status: t.status, serversParagraph: t.serversParagraph },
    });
  }
  for (const [index, call] of t.calls.entries()) {
    out.push(...stepEvents(t, seen, index));
    if (!seen.started.has(call.id)) {
      seen.started.add(call.id);
      out.push({
        id: `${t.turnId}|${call.id}|started`,
        event: 'call.started',
        data: { ...base, id: call.id, name: call.name },
      });
    }
    for (const q of call.inputs ?? []) {
      const requestId = inputRequestId(call.id, q.round, q.key);
      if (seen.asked.has(requestId)) continue;
      seen.asked.add(requestId);
      out.push({
        id: `${t.turnId}|${requestId}|input_required`,
        event: 'call.input_required',
        data: {
          ...base,
          id: call.id,
          name: call.name,
          requestId,
          key: q.key,
          round: q.round,
          kind: q.kind,
          message: q.message,
          ...(q.requestedSchema ? { requestedSchema: q.requestedSchema } : {}),
          ...(q.url !== undefined ? { url: q.url } : {}),
          ...(q.elicitationId !== undefined ? { elicitationId: q.elicitationId } : {}),
        },
      });
    }
    for (const change of call.task?.changes ?? []) {
      const key = `${call.id}|${change.poll}`;
      if (seen.progress?.has(key)) continue;
      (seen.progress ??= new Set()).add(key);
      out.push({
        id: `${t.turnId}|${call.id}|task|${change.poll}`,
        event: 'call.progress',
        data: {
          ...base,
          id: call.id,
          name: call.name,
          taskId: call.task!.taskId,
          poll: change.poll,
          status: change.status,
          ...(change.statusMessage !== undefined ? { statusMessage: change.statusMessage } : {}),
        },
      });
    }
    if (call.outcome && !seen.finished.has(call.id)) {
      seen.finished.add(call.id);
      const o = call.outcome;
      out.push({
        id: `${t.turnId}|${call.id}|finished`,
        event: 'call.finished',
        data: {
          ...base,
          id: call.id,
          name: call.name,
          status: o.status,
          isError: o.isError,
          ...(o.errorKind ? { errorKind: o.errorKind } : {}),
          durationMs: o.durationMs,
          attempts: o.attempts,
        },
      });
    }
  }
  out.push(...stepEvents(t, seen, t.calls.length));
  if (!seen.ended && t.state !== 'running' && t.state !== 'continued') {
    seen.ended = true;
    out.push({
      id: `${t.turnId}|ended`,
      event: 'turn.ended',
      data: {
        ...base,
        state: t.state,
        ...(t.endedBy ? { endedBy: t.endedBy } : {}),
        ...(t.answer !== undefined ? { answer: t.answer } : {}),
      },
    });
  }
  return out;
}

export interface SessionEventsOptions {
  /** How often the session's turns are listed, to find a new one. */
  pollMs: number;
  signal: AbortSignal;
}

/**
 * Yields the session's events until `signal` aborts. The newest turn that exists when the stream
 * starts is sent from its beginning (its status first); older turns are not replayed.
 */
export async function* sessionEvents(
  turns: TurnClient,
  sessionId: string,
  options: SessionEventsOptions,
): AsyncGenerator<SessionEvent> {
  const stop = new AbortController();
  const abort = () => stop.abort();
  options.signal.addEventListener('abort', abort, { once: true });
  if (options.signal.aborted) abort();
  const queue: SessionEvent[] = [];
  let failed: { err: unknown } | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  stop.signal.addEventListener('abort', notify, { once: true });
  const emit = (events: SessionEvent[]) => {
    queue.push(...events);
    if (events.length > 0) notify();
  };
  const fail = (err: unknown) => {
    if (!stop.signal.aborted) failed ??= { err };
    notify();
  };
  const watchTurns = async () => {
    const following = new Set<string>();
    let first = true;
    while (!stop.signal.aborted) {
      const ids = await turns.sessionTurns(sessionId);
      if (first) {
        for (const id of ids.slice(0, -1)) following.add(id);
        first = false;
      }
      for (const id of ids) {
        if (following.has(id)) continue;
        following.add(id);
        followTurn(turns.client, id, stop.signal, emit).catch(fail);
      }
      await sleep(options.pollMs, stop.signal);
    }
  };
  watchTurns().catch(fail);
  try {
    for (;;) {
      const next = queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (failed) throw failed.err;
      if (stop.signal.aborted) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    options.signal.removeEventListener('abort', abort);
    stop.abort();
  }
}

/**
 * Follows one turn's history from its first run until it ends, sending its events as they come.
 * With `waitNewEvent`, Temporal answers a running turn's history with a page token even at its
 * end, and the next read with that token waits for events after it.
 */
async function followTurn(
  client: Client,
  turnId: string,
  signal: AbortSignal,
  emit: (events: SessionEvent[]) => void,
): Promise<void> {
  const converter = client.options.loadedDataConverter;
  const transcript = transcriptFollower(turnId, converter.payloadConverter);
  const seen: TurnSeen = { status: false, started: new Set(), asked: new Set(), finished: new Set(), ended: false };
  let runId = await firstRunId(client, turnId);
  let nextPageToken: Uint8Array | undefined;
  while (!signal.aborted) {
    const page = await withOwnSignal(signal, (one) =>
      client.withAbortSignal(one, () =>
        client.workflowService.getWorkflowExecutionHistory({
          namespace: client.options.namespace,
          execution: { workflowId: turnId, runId },
          nextPageToken,
          waitNewEvent: true,
          skipArchival: true,
        }),
      ),
    );
    const events = page.history?.events ?? [];
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    if (events.length > 0) {
      await decodeHistoryPayloads(
        { events },
        { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage },
      );
      emit(newEvents(transcript.add(events), seen));
      if (seen.ended) return;
      const continued = events.find(
        (e) => e.workflowExecutionContinuedAsNewEventAttributes,
      )?.workflowExecutionContinuedAsNewEventAttributes;
      if (continued?.newExecutionRunId) {
        runId = continued.newExecutionRunId;
        nextPageToken = undefined;
        continue;
      }
    }
    // No token: the run is closed and read to its end.
    if (!nextPageToken) return;
  }
}

/**
 * Runs one request with a signal of its own that `signal` aborts: the Temporal connection adds an
 * abort listener to a request's signal and never removes it, so a stream's own signal, shared by
 * every read of a long stream, would collect one per read.
 */
async function withOwnSignal<T>(signal: AbortSignal, run: (one: AbortSignal) => Promise<T>): Promise<T> {
  const one = new AbortController();
  const abort = () => one.abort();
  signal.addEventListener('abort', abort, { once: true });
  try {
    return await run(one.signal);
  } finally {
    signal.removeEventListener('abort', abort);
  }
}

/** The turn's first run, where its status was reported; undefined (the latest run) while visibility has none. */
async function firstRunId(client: Client, turnId: string): Promise<string | undefined> {
  let first: { runId: string; start: number } | undefined;
  for await (const w of client.workflow.list({ query: `WorkflowId = '${turnId.replace(/'/g, "\\'")}'` })) {
    const start = w.startTime.getTime();
    if (!first || start < first.start) first = { runId: w.runId, start };
  }
  return first?.runId;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
