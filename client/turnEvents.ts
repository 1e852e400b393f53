/**
 * One turn's events as one ordered stream, read from Temporal and the step text logs alone (a
 * reader keeps no state): what the turn's history reports (its status, each call started, asked,
 * held for approval, progressing and finished, each model step, its end), and between a model
 * step's start and end the text the model produced, as it was produced.
 *
 * Every event's ID is its place in the turn: `<turnId>|<run>.<historyEventId>.<n>` for what history
 * reports, `<turnId>|<run>.<stepEventId>.<attempt>.<n>` for a step's text. Places are totally
 * ordered and the same on every read, so a reader that resumes after an ID is sent exactly the
 * events after it. Text read while a step runs goes before anything history reports after the
 * step began (the stream holds those back until the step ends), as it does on a later read.
 */
import type { Client } from '@temporalio/client';
import { APPROVAL_MEMO_PREFIX, type InputRequest } from '../contract/index.js';
import { decodeHistoryPayloads } from '../payloads/decodeHistory.js';
import type { StepTextStore } from '../payloads/streamLog.js';
import { newEvents, turnSeen, type DerivedEvent } from './derivedEvents.js';
import { pumpEvents } from './eventPump.js';
import { transcriptFollower } from './transcript.js';

/** One event of a turn's stream. */
export interface TurnEvent {
  /** Its place in the turn; pass the last one read as `after` to resume. */
  id: string;
  event: DerivedEvent['event'] | 'model.text' | 'model.reset';
  data: Record<string, unknown>;
}

export interface TurnEventsOptions {
  /** Resume after this event ID (the last one read); absent: from the turn's start. */
  after?: string;
  signal?: AbortSignal;
  /** Where model steps' text is logged as produced; absent: model steps are sent whole, as they end. */
  stepText?: StepTextStore;
  /** How often a running step's text log is read when the store cannot tell when it grows (default: the store's). */
  textPollMs?: number;
}

/** An event ID that is not a place in this turn. */
export class EventIdError extends Error {}

type Place = number[];

/** The place an event ID names in turn `turnId`; throws {@link EventIdError} when it names none. */
export function placeOf(id: string, turnId: string): Place {
  const cut = id.lastIndexOf('|');
  const text = id.slice(cut + 1);
  const place = text.split('.').map(Number);
  if (id.slice(0, cut) !== turnId || !PLACE.test(text) || place.some((n) => !Number.isSafeInteger(n)))
    throw new EventIdError(`${JSON.stringify(id.slice(0, 200))} is not an event ID of turn ${turnId}`);
  return place;
}

const PLACE = /^[0-9]{1,15}(\.[0-9]{1,15}){2,3}$/;

function after(a: Place, b: Place): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! > b[i]!;
  return a.length > b.length;
}

/** The turn's events, in order, from its start or after `options.after`, until it ends or the signal aborts. */
export async function* turnEvents(
  client: Client,
  turnId: string,
  options: TurnEventsOptions = {},
): AsyncGenerator<TurnEvent> {
  const from = options.after === undefined ? undefined : placeOf(options.after, turnId);
  yield* pumpEvents<TurnEvent>(options.signal, (emit, signal) =>
    followTurn(client, turnId, { ...options, signal }, (e) => {
      if (from === undefined || after(placeOf(e.id, turnId), from)) emit(e);
    }),
  );
}

/** A model step whose text is being read: its place, and what history reported since it began. */
interface OpenStep {
  scheduledEventId: string;
  closing: () => void;
  read: Promise<void>;
  held: TurnEvent[];
}

/**
 * Follows the turn's history from its first run until it ends. With `waitNewEvent`, Temporal
 * answers a running turn's history with a page token even at its end, and the next read with that
 * token waits for events after it.
 */
async function followTurn(
  client: Client,
  turnId: string,
  options: TurnEventsOptions & { signal: AbortSignal },
  emit: (e: TurnEvent) => void,
): Promise<void> {
  const { signal } = options;
  const converter = client.options.loadedDataConverter;
  const transcript = transcriptFollower(turnId, converter.payloadConverter);
  const seen = turnSeen();
  let runId = await firstRunId(client, turnId);
  let run = 0;
  let open: OpenStep | undefined;
  let nextPageToken: Uint8Array | undefined;
  try {
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
      await decodeHistoryPayloads(
        { events },
        { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage },
      );
      for (const e of events) {
        const place = `${turnId}|${run}.${String(e.eventId)}`;
        const t = transcript.add([e]);
        const derived: TurnEvent[] = [...approvalsAsked(e, t.sessionId ?? '', turnId), ...newEvents(t, seen)].map(
          ({ event, data }, n) => ({ id: `${place}.${n}`, event, data }),
        );
        const closes = open !== undefined && (closesActivity(e) === open.scheduledEventId || closesRun(e));
        if (open && closes) {
          open.closing();
          await open.read;
          for (const held of open.held) emit(held);
          open = undefined;
        }
        if (open) open.held.push(...derived);
        else for (const d of derived) emit(d);
        const step = modelStepScheduled(e);
        if (step !== undefined && options.stepText) {
          const stepPlace = `${turnId}|${run}.${String(e.eventId)}`;
          open = readStepText(
            options.stepText,
            {
              turnId,
              step,
              place: stepPlace,
              scheduledEventId: String(e.eventId),
              pollMs: options.textPollMs ?? options.stepText.pollMs,
              signal,
            },
            emit,
          );
        }
      }
      if (seen.ended) return;
      const continued = events.find(
        (e) => e.workflowExecutionContinuedAsNewEventAttributes,
      )?.workflowExecutionContinuedAsNewEventAttributes;
      if (continued?.newExecutionRunId) {
        runId = continued.newExecutionRunId;
        run += 1;
        nextPageToken = undefined;
        continue;
      }
      // No token: the run is closed and read to its end.
      if (!nextPageToken) return;
    }
  } finally {
    open?.closing();
  }
}

type HistoryEvent = NonNullable<
  NonNullable<Awaited<ReturnType<Client['workflowService']['getWorkflowExecutionHistory']>>['history']>['events']
>[number];

/** Approvals the turn asked in this event (the memo holds each while it waits). */
function approvalsAsked(e: HistoryEvent, sessionId: string, turnId: string): DerivedEvent[] {
  const fields = e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields ?? {};
  const out: DerivedEvent[] = [];
  for (const [key, payload] of Object.entries(fields)) {
    if (!key.startsWith(APPROVAL_MEMO_PREFIX) || !payload?.data?.length) continue;
    let asked: InputRequest;
    try {
      asked = JSON.parse(new TextDecoder().decode(payload.data)) as InputRequest;
    } catch {
      continue;
    }
    if (asked === null || typeof asked !== 'object') continue;
    out.push({
      key: `${turnId}|${asked.requestId}|approval`,
      event: 'call.approval_required',
      data: {
        sessionId,
        turnId,
        id: asked.callId,
        name: asked.tool,
        requestId: asked.requestId,
        message: asked.message,
        ...(asked.requestedSchema ? { requestedSchema: asked.requestedSchema } : {}),
        ...(asked.approval ? { approval: asked.approval } : {}),
      },
    });
  }
  return out;
}

/** The step a `modelStep` activity scheduled in this event runs; undefined for any other event. */
function modelStepScheduled(e: HistoryEvent): number | undefined {
  const a = e.activityTaskScheduledEventAttributes;
  if (a?.activityType?.name !== 'modelStep') return undefined;
  const input = a.input?.payloads?.[0]?.data;
  if (!input) return undefined;
  try {
    const step = (JSON.parse(new TextDecoder().decode(input)) as { step?: unknown }).step;
    return typeof step === 'number' ? step : undefined;
  } catch {
    return undefined;
  }
}

/** The scheduled event ID of the activity this event ends, if it ends one. */
function closesActivity(e: HistoryEvent): string | undefined {
  const a =
    e.activityTaskCompletedEventAttributes ??
    e.activityTaskFailedEventAttributes ??
    e.activityTaskTimedOutEventAttributes ??
    e.activityTaskCanceledEventAttributes;
  return a?.scheduledEventId == null ? undefined : String(a.scheduledEventId);
}

function closesRun(e: HistoryEvent): boolean {
  return Boolean(
    e.workflowExecutionCompletedEventAttributes ??
      e.workflowExecutionFailedEventAttributes ??
      e.workflowExecutionTerminatedEventAttributes ??
      e.workflowExecutionTimedOutEventAttributes ??
      e.workflowExecutionCanceledEventAttributes ??
      e.workflowExecutionContinuedAsNewEventAttributes,
  );
}

/**
 * Reads a running step's text logs, attempt after attempt, until `closing` is called and the
 * logs are read to their end. A later attempt's log means the step was tried again: a
 * `model.reset` says the text sent of the step so far is void.
 */
function readStepText(
  store: StepTextStore,
  step: { turnId: string; step: number; place: string; scheduledEventId: string; pollMs: number; signal: AbortSignal },
  emit: (e: TurnEvent) => void,
): OpenStep {
  let closed = false;
  // Set by the log's watch (or a close) when there may be more to read; a read clears it first.
  let changed = true;
  let wake: (() => void) | undefined;
  const poke = () => {
    changed = true;
    wake?.();
  };
  const closing = () => {
    closed = true;
    poke();
  };
  const base = { turnId: step.turnId, step: step.step };
  let watching: { close(): void } | undefined;
  const read = (async () => {
    let attempt = 1;
    let cursor = 0;
    let n = 0;
    let reads = 0;
    let quiet = false;
    while (!step.signal.aborted) {
      const last = closed;
      changed = false;
      const got = await store.read({ ...base, attempt }, cursor);
      if (got && watching === undefined && store.watch)
        watching = store.watch({ ...base, attempt }, poke) ?? { close() {} };
      for (const record of got?.records ?? []) {
        const id = `${step.place}.${attempt}.${n++}`;
        if ('begin' in record) {
          if (attempt > 1) emit({ id, event: 'model.reset', data: { ...base, attempt } });
        } else emit({ id, event: 'model.text', data: { ...base, attempt, text: record.text } });
      }
      if (got) cursor = got.cursor;
      // A step is tried again a second or more after its attempt failed: a look after a quiet wait,
      // or every 10 reads while text comes, is enough.
      if (
        (last || quiet || ++reads % 10 === 0) &&
        (await store.read({ ...base, attempt: attempt + 1 }, 0)) !== undefined
      ) {
        attempt += 1;
        cursor = 0;
        n = 0;
        watching?.close();
        watching = undefined;
        continue;
      }
      if (last) return;
      if (changed) continue;
      // Watched, a wait ends when the log grows; the timeout still looks for a next attempt.
      const wait = watching ? step.pollMs * 10 : step.pollMs;
      quiet = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(true), wait);
        wake = () => {
          clearTimeout(timer);
          resolve(false);
        };
      });
      wake = undefined;
    }
  })()
    .catch(() => undefined)
    .finally(() => watching?.close());
  return { scheduledEventId: step.scheduledEventId, closing, read, held: [] };
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
