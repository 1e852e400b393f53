/**
 * The events a turn's transcript reports, each once: what its history says so far that a reader
 * has not been sent yet. Pure; the stream (turnEvents.ts) gives each its place in the turn.
 */
import { inputRequestId } from '../contract/index.js';
import type { Transcript } from './transcript.js';

/** An event of a turn, before the stream gives it its place: `key` names what it reports, once per turn. */
export interface DerivedEvent {
  key: string;
  event:
    | 'mcp.status'
    | 'model.step'
    | 'call.approval_required'
    | 'call.started'
    | 'call.input_required'
    | 'call.progress'
    | 'call.finished'
    | 'turn.ended';
  data: Record<string, unknown>;
}

/** What a stream has sent of one turn. */
export interface TurnSeen {
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
function stepEvents(t: Transcript, seen: TurnSeen, calls: number): DerivedEvent[] {
  const out: DerivedEvent[] = [];
  for (const s of t.modelSteps ?? []) {
    if (s.callsBefore > calls || s.text === undefined || seen.steps?.has(s.step)) continue;
    (seen.steps ??= new Set()).add(s.step);
    out.push({
      key: `${t.turnId}|model|${s.step}`,
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
export function newEvents(t: Transcript, seen: TurnSeen): DerivedEvent[] {
  const out: DerivedEvent[] = [];
  const base = { sessionId: t.sessionId, turnId: t.turnId };
  if (!seen.status && t.status) {
    seen.status = true;
    out.push({
      key: `${t.turnId}|status`,
      event: 'mcp.status',
      data: { ...base, reportedAt: t.status.reportedAt, status: t.status, serversParagraph: t.serversParagraph },
    });
  }
  for (const [index, call] of t.calls.entries()) {
    out.push(...stepEvents(t, seen, index));
    if (!seen.started.has(call.id)) {
      seen.started.add(call.id);
      out.push({
        key: `${t.turnId}|${call.id}|started`,
        event: 'call.started',
        data: { ...base, id: call.id, name: call.name },
      });
    }
    for (const q of call.inputs ?? []) {
      const requestId = inputRequestId(call.id, q.round, q.key);
      if (seen.asked.has(requestId)) continue;
      seen.asked.add(requestId);
      out.push({
        key: `${t.turnId}|${requestId}|input_required`,
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
        key: `${t.turnId}|${call.id}|task|${change.poll}`,
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
        key: `${t.turnId}|${call.id}|finished`,
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
      key: `${t.turnId}|ended`,
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

/** A fresh record of what a stream has sent of a turn. */
export function turnSeen(): TurnSeen {
  return { status: false, started: new Set(), asked: new Set(), finished: new Set(), ended: false };
}
