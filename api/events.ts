/**
 * A session's events, read from Temporal alone (the API keeps no state): every poll lists the
 * session's turns and reads the history of those still running. Each event has a stable ID
 * (`<turnId>|status`, `<turnId>|<callId>|started`, ...), so a client that reconnects and is sent
 * the newest turn's events again can drop the ones it has.
 */
import { inputRequestId } from '../contract/index.js';
import type { TurnClient } from '../client/turnClient.js';
import type { Transcript } from '../client/transcript.js';

export interface SessionEvent {
  id: string;
  event: 'mcp.status' | 'call.started' | 'call.input_required' | 'call.progress' | 'call.finished' | 'turn.ended';
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
  ended: boolean;
}

/** The events of one turn's transcript not sent yet; updates `seen`. Pure. */
export function newEvents(t: Transcript, seen: TurnSeen): SessionEvent[] {
  const out: SessionEvent[] = [];
  const base = { sessionId: t.sessionId, turnId: t.turnId };
  if (!seen.status && t.status) {
    seen.status = true;
    out.push({ id: `${t.turnId}|status`, event: 'mcp.status', data: { ...base, reportedAt: t.status.reportedAt, status: t.status, serversParagraph: t.serversParagraph } });
  }
  for (const call of t.calls) {
    if (!seen.started.has(call.id)) {
      seen.started.add(call.id);
      out.push({ id: `${t.turnId}|${call.id}|started`, event: 'call.started', data: { ...base, id: call.id, name: call.name } });
    }
    for (const q of call.inputs ?? []) {
      const requestId = inputRequestId(call.id, q.round, q.key);
      if (seen.asked.has(requestId)) continue;
      seen.asked.add(requestId);
      out.push({
        id: `${t.turnId}|${requestId}|input_required`,
        event: 'call.input_required',
        data: {
          ...base, id: call.id, name: call.name, requestId, key: q.key, round: q.round, kind: q.kind, message: q.message,
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
          ...base, id: call.id, name: call.name, taskId: call.task!.taskId, poll: change.poll, status: change.status,
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
        data: { ...base, id: call.id, name: call.name, status: o.status, isError: o.isError, ...(o.errorKind ? { errorKind: o.errorKind } : {}), durationMs: o.durationMs, attempts: o.attempts },
      });
    }
  }
  if (!seen.ended && t.state !== 'running' && t.state !== 'continued') {
    seen.ended = true;
    out.push({ id: `${t.turnId}|ended`, event: 'turn.ended', data: { ...base, state: t.state, ...(t.endedBy ? { endedBy: t.endedBy } : {}) } });
  }
  return out;
}

export interface SessionEventsOptions {
  pollMs: number;
  signal: AbortSignal;
}

/**
 * Yields the session's events until `signal` aborts. The newest turn that exists when the stream
 * starts is sent from its beginning (its status first); older turns are not replayed.
 */
export async function* sessionEvents(turns: TurnClient, sessionId: string, options: SessionEventsOptions): AsyncGenerator<SessionEvent> {
  const seen = new Map<string, TurnSeen>();
  let first = true;
  while (!options.signal.aborted) {
    const ids = await turns.sessionTurns(sessionId);
    if (first) {
      for (const id of ids.slice(0, -1)) seen.set(id, { status: true, started: new Set(), asked: new Set(), finished: new Set(), ended: true });
      first = false;
    }
    for (const id of ids) {
      let s = seen.get(id);
      if (s?.ended) continue;
      if (!s) seen.set(id, (s = { status: false, started: new Set(), asked: new Set(), finished: new Set(), ended: false }));
      const t = await turns.transcript(id);
      for (const e of newEvents(t, s)) yield e;
    }
    await sleep(options.pollMs, options.signal);
  }
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
