/**
 * A turn rebuilt from its history alone: what each event tells of the turn and of its calls. The
 * terminal's rendering is in transcriptText.ts, saving its images in transcriptImages.ts, reading a
 * turn's runs from Temporal in turnTranscript.ts.
 */
import { defaultPayloadConverter, type PayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import {
  ActivityName,
  UpdateName,
  type CallOutcome,
  type CallRequest,
  type CallToolInput,
  type LocalCallOutcome,
  type ModelStepInput,
  type ModelStepResult,
  type ReconcileResult,
  type ToolInfo,
  type TurnInput,
  type TurnResult,
  type TurnStatus,
} from '../contract/index.js';
import {
  LEGACY_INPUT_KEY,
  inputRequestId,
  type DeliverInputAnswerInput,
  type InputAction,
  type InputRequestSpec,
  type InputRequiredOutcome,
  type LegacyInputReport,
  type PostToolUseHooksResult,
  type PreToolUseHooksResult,
  type TaskPoll,
  type TaskRef,
  type TaskStarted,
  type ToolHookInput,
  type UpdateTaskInput,
} from '../contract/index.js';
import * as steps from './transcriptModelSteps.js';

export type { TranscriptModelStep } from './transcriptModelSteps.js';
type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

/** One call as the history shows it. */
export interface TranscriptCall {
  /** The call ID (the model's tool-call ID for interactive calls). */
  id: string;
  /** The tool's public name, `mcp__<server>__<tool>`. */
  name: string;
  /** The arguments the caller sent (a PreToolUse hook's rewrite is in {@link TranscriptCall.preToolUse}). */
  arguments: Record<string, unknown>;
  /** The outcome the caller got (absent while the call is still running). */
  outcome?: CallOutcome;
  /** Each `callTool` activity attempt's failure, in order (a retried or failed call). */
  failures: string[];
  /** The activity's summary as the Temporal UI shows it. */
  summary?: string;
  /** What the operator's PreToolUse hooks decided, as recorded before the call ran. */
  preToolUse?: PreToolUseHooksResult;
  /** What the PostToolUse hooks said after it ran. */
  postToolUse?: PostToolUseHooksResult;
  /** The questions the call asked a person, round by round, with how each was answered (never the content). */
  inputs?: TranscriptInput[];
  /** The MCP task the call ran as, with its last polled state. */
  task?: TranscriptTask;
}

/** A call's MCP task as its polls recorded it. */
export interface TranscriptTask {
  taskId: string;
  status: TaskPoll['status'];
  statusMessage?: string;
  /** Polls so far. */
  polls: number;
  /** Each change of status or message, with the poll that saw it (the first is the task's creation, poll 0); the newest {@link MAX_TASK_CHANGES}. */
  changes: { poll: number; status: TaskPoll['status']; statusMessage?: string }[];
  /** The call took up a task an earlier turn's call left running, instead of creating one. */
  takenUp?: true;
}

/** Task state changes a transcript keeps per call: a task of hours may report thousands. */
export const MAX_TASK_CHANGES = 50;

function observeTask(task: TranscriptTask, poll: TaskPoll | TaskStarted): void {
  const last = task.changes.at(-1);
  task.status = poll.status;
  task.statusMessage = poll.statusMessage;
  if (last && last.status === poll.status && last.statusMessage === poll.statusMessage) return;
  task.changes.push({
    poll: task.polls,
    status: poll.status,
    ...(poll.statusMessage !== undefined ? { statusMessage: poll.statusMessage } : {}),
  });
  if (task.changes.length > MAX_TASK_CHANGES) task.changes.shift();
}

/** Activities of a call that runs as a task whose results the transcript reads. */
const TASK_ACTIVITIES = new Set<string>([
  ActivityName.createTask,
  ActivityName.takeTask,
  ActivityName.pollTask,
  ActivityName.taskResult,
  ActivityName.taskInput,
]);

/**
 * A 2026-07-28 task's questions, read with its status: those with a key the call was not asked
 * under yet are the next round, as the turn numbers them.
 */
function taskQuestionsAsked(call: TranscriptCall, result: TaskStarted | TaskPoll): void {
  if (result.status !== 'input_required' || !result.inputRequests) return;
  const fresh = result.inputRequests.filter((r) => !call.inputs?.some((i) => i.key === r.key));
  if (fresh.length === 0) return;
  const round = (call.inputs?.at(-1)?.round ?? 0) + 1;
  call.inputs = [...(call.inputs ?? []), ...fresh.map((r) => ({ ...r, round }))];
}

/** What a completed task activity tells of its call. */
function taskActivityCompleted(
  type: string,
  call: TranscriptCall,
  result: TaskStarted | TaskPoll | CallOutcome | undefined,
): void {
  if (!result) return;
  if (!('content' in result)) taskQuestionsAsked(call, result);
  if ('content' in result) {
    // createTask answered at once, the task's result, or the result taskInput fetched.
    call.outcome = result;
  } else if ('kind' in result) {
    call.task = {
      taskId: result.taskId,
      status: result.status,
      polls: 0,
      changes: [],
      ...(type === ActivityName.takeTask ? { takenUp: true as const } : {}),
    };
    observeTask(call.task, result);
  } else if (call.task && (type === ActivityName.pollTask || type === ActivityName.taskInput)) {
    // taskInput counts as a poll: it looked with `tasks/get` where the task stood.
    call.task.polls += 1;
    observeTask(call.task, result);
  }
}

/** One question of a call as history records it. */
export interface TranscriptInput extends InputRequestSpec {
  round: number;
  /** How it was answered, once the call's next attempt carried the answer. */
  action?: InputAction;
}

/** A turn rendered from its history alone. */
export interface Transcript {
  /** The turn's workflow ID, `<sessionId>/turn-<n>`. */
  turnId: string;
  /** The session, from the turn's input. */
  sessionId?: string;
  /** The queue of the worker that held the session's servers last (after a failover, the new one). */
  workerQueue?: string;
  /** The servers' status as recorded when they were reconciled. */
  status?: TurnStatus;
  /** What the model was told about its servers. */
  serversParagraph?: string;
  /** The frozen tool list. */
  tools: ToolInfo[];
  /** Every call, in the order they were made, across the turn's runs. */
  calls: TranscriptCall[];
  /** A model turn's steps, in order; each says where it goes among `calls` (absent for other turns). */
  modelSteps?: steps.TranscriptModelStep[];
  /** A model turn's answer once it ended: its last step's text. */
  answer?: string;
  /** How the turn ended (absent while it runs). */
  endedBy?: TurnResult['endedBy'];
  /** Set when the workflow itself failed or is still running. */
  state: 'running' | 'completed' | 'failed' | 'terminated' | 'timed out' | 'cancelled' | 'continued';
  /** Why the workflow failed, or the reason it was terminated with. */
  failure?: string;
  /**
   * Run IDs of other executions at the turn's workflow ID, not of its run chain (a workflow that
   * reused the ID, before the turn or after it): left out of this transcript. Absent when none.
   */
  otherRuns?: string[];
}

function decode<T>(payloads: Payloads, converter: PayloadConverter, index = 0): T | undefined {
  const p = payloads?.payloads?.[index];
  return p ? converter.fromPayload<T>(p) : undefined;
}

function failureMessage(failure: temporal.api.failure.v1.IFailure | null | undefined): string {
  const parts: string[] = [];
  for (let f = failure; f; f = f.cause) {
    if (f.message) parts.push(f.message);
  }
  return parts.join(': ') || 'unknown failure';
}

/** The marker the SDK records for a local activity: its result, but not its input. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/** A local activity marker's metadata (the SDK writes it as JSON; the field spelling is the SDK's). */
interface LocalActivityMarkerData {
  activity_type?: string;
  activityType?: string;
}

/** What reading a history has gathered so far. */
interface TranscriptState {
  t: Transcript;
  /** The run's scheduled activities by event ID. */
  scheduled: Map<string, { type: string; callId?: string; step?: steps.TranscriptModelStep }>;
  calls: Map<string, TranscriptCall>;
  modelCallIds: Set<string>;
  /** 2025-era questions by request ID, until the answer delivered to the waiting call names its action. */
  legacyAsked: Map<string, TranscriptInput>;
  callFor(id: string, name?: string, args?: Record<string, unknown>): TranscriptCall;
}

function transcriptState(turnId: string): TranscriptState {
  const calls = new Map<string, TranscriptCall>();
  const callFor = (id: string, name = '', args: Record<string, unknown> = {}) => {
    let call = calls.get(id);
    if (!call) {
      call = { id, name, arguments: args, failures: [] };
      calls.set(id, call);
    }
    return call;
  };
  return {
    t: { turnId, tools: [], calls: [], state: 'running' },
    scheduled: new Map(),
    calls,
    modelCallIds: new Set(),
    legacyAsked: new Map(),
    callFor,
  };
}

/** Builds a transcript from a turn's history events. Pure. */
export function buildTranscript(
  turnId: string,
  history: History,
  converter: PayloadConverter = defaultPayloadConverter,
): Transcript {
  const state = transcriptState(turnId);
  readEvents(state, history.events ?? [], converter);
  return state.t;
}

/**
 * A transcript built as its turn's history is read, page by page and run after run (a turn that
 * continued as new goes on in the run it names): each event is read once. `add` takes the next
 * events, their payloads decoded, and returns the transcript so far (the same object each time).
 */
export function transcriptFollower(
  turnId: string,
  converter: PayloadConverter = defaultPayloadConverter,
): { add(events: readonly HistoryEvent[]): Transcript } {
  const state = transcriptState(turnId);
  return {
    add(events) {
      readEvents(state, events, converter);
      return state.t;
    },
  };
}

function readEvents(state: TranscriptState, events: readonly HistoryEvent[], converter: PayloadConverter): void {
  const { t } = state;
  for (const e of events) {
    if (e.workflowExecutionStartedEventAttributes) {
      runStarted(state, e.workflowExecutionStartedEventAttributes, converter);
    } else if (e.activityTaskScheduledEventAttributes) {
      activityScheduled(state, e, converter);
    } else if (e.activityTaskStartedEventAttributes) {
      const { scheduledEventId, attempt, lastFailure } = e.activityTaskStartedEventAttributes;
      const step = state.scheduled.get(String(scheduledEventId))?.step;
      if (step) steps.modelStepStarted(step, attempt, lastFailure ? failureMessage(lastFailure) : undefined);
    } else if (e.activityTaskCompletedEventAttributes) {
      activityCompleted(state, e.activityTaskCompletedEventAttributes, converter);
    } else if (e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER) {
      localActivityRecorded(state, e, converter);
    } else if (e.activityTaskFailedEventAttributes || e.activityTaskTimedOutEventAttributes) {
      activityFailed(state, e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes!);
    } else if (e.workflowExecutionUpdateAcceptedEventAttributes) {
      updateAccepted(state, e.workflowExecutionUpdateAcceptedEventAttributes, converter);
    } else if (e.workflowExecutionUpdateCompletedEventAttributes) {
      const a = e.workflowExecutionUpdateCompletedEventAttributes;
      const updateId = a.meta?.updateId;
      if (updateId && state.calls.has(updateId) && a.outcome?.success) {
        state.calls.get(updateId)!.outcome = decode<CallOutcome>(a.outcome.success, converter);
      }
    } else if (e.workflowExecutionCompletedEventAttributes) {
      t.state = 'completed';
      const result = decode<TurnResult>(e.workflowExecutionCompletedEventAttributes.result, converter);
      t.endedBy = result?.endedBy;
      t.workerQueue = result?.workerQueue ?? t.workerQueue;
      for (const record of result?.calls ?? [])
        state.callFor(record.id, record.name, record.arguments).outcome = record.outcome;
      if (result?.model !== undefined) steps.modelTurnEnded(state, result);
    } else if (e.workflowExecutionFailedEventAttributes) {
      t.state = 'failed';
      t.failure = failureMessage(e.workflowExecutionFailedEventAttributes.failure);
    } else if (e.workflowExecutionTerminatedEventAttributes) {
      t.state = 'terminated';
      t.failure = e.workflowExecutionTerminatedEventAttributes.reason ?? undefined;
    } else if (e.workflowExecutionTimedOutEventAttributes) {
      t.state = 'timed out';
    } else if (e.workflowExecutionCanceledEventAttributes) {
      t.state = 'cancelled';
    } else if (e.workflowExecutionContinuedAsNewEventAttributes) {
      t.state = 'continued';
    }
  }
  t.calls = [...state.calls.values()];
}

type EventAttributes<K extends keyof HistoryEvent> = NonNullable<HistoryEvent[K]>;

function runStarted(
  state: TranscriptState,
  started: EventAttributes<'workflowExecutionStartedEventAttributes'>,
  converter: PayloadConverter,
): void {
  // A run after continue-as-new numbers its events from 1 again.
  state.scheduled.clear();
  state.modelCallIds.clear();
  state.t.state = 'running';
  const input = decode<TurnInput>(started.input, converter);
  state.t.sessionId = input?.sessionId;
  for (const request of (input?.batch ?? []).flat()) state.callFor(request.id, request.name, request.arguments ?? {});
}

/** Activities whose input is a {@link TaskRef}: they name the call whose task they look at. */
const TASK_REF_ACTIVITIES = new Set<string>([
  ActivityName.pollTask,
  ActivityName.taskResult,
  ActivityName.cancelTask,
  ActivityName.taskInput,
]);

/** Activities that run a call's tool: a regular call, or one that runs as a task (created or taken up). */
const CALL_ACTIVITIES = new Set<string>([ActivityName.callTool, ActivityName.createTask, ActivityName.takeTask]);

/** The activity's summary as the Temporal UI shows it, if it has one. */
function summaryOf(e: HistoryEvent, converter: PayloadConverter): string | undefined {
  return e.userMetadata?.summary ? converter.fromPayload<string>(e.userMetadata.summary) : undefined;
}

/** A scheduled activity: which call it belongs to, and what its input tells of that call. */
function activityScheduled(state: TranscriptState, e: HistoryEvent, converter: PayloadConverter): void {
  const { callFor, legacyAsked } = state;
  const a = e.activityTaskScheduledEventAttributes!;
  const type = a.activityType?.name ?? '';
  const entry: { type: string; callId?: string; step?: steps.TranscriptModelStep } = { type };
  if (type === ActivityName.modelStep)
    entry.step = steps.modelStepScheduled(state, decode<ModelStepInput>(a.input, converter));
  if (type === ActivityName.preToolUseHooks || type === ActivityName.postToolUseHooks) {
    const input = decode<ToolHookInput>(a.input, converter);
    if (input) entry.callId = callFor(input.callId, input.name).id;
  }
  if (type === ActivityName.deliverInputAnswer) {
    const input = decode<DeliverInputAnswerInput>(a.input, converter);
    const asked = input ? legacyAsked.get(input.requestId) : undefined;
    if (asked && input) asked.action = input.answer.action;
  }
  if (TASK_REF_ACTIVITIES.has(type)) {
    const input = decode<TaskRef>(a.input, converter);
    if (input) entry.callId = callFor(input.callId, input.name).id;
  }
  if (type === ActivityName.updateTask) {
    // A 2026-07-28 task's answers: only how each was answered is shown.
    const input = decode<UpdateTaskInput>(a.input, converter);
    const call = input ? callFor(input.callId, input.name) : undefined;
    for (const asked of call?.inputs ?? []) {
      const answer = input?.inputResponses[asked.key] as { action?: InputAction } | undefined;
      if (asked.action === undefined && answer?.action) asked.action = answer.action;
    }
  }
  if (CALL_ACTIVITIES.has(type)) {
    const input = decode<CallToolInput>(a.input, converter);
    if (input) {
      entry.callId = input.callId;
      const call = callFor(input.callId, input.name, input.arguments);
      // The answers of the latest round: only how each was answered is shown.
      for (const asked of call.inputs ?? []) {
        const answer = input.inputReply?.inputResponses[asked.key];
        if (asked.action === undefined && answer) asked.action = answer.action;
      }
      const summary = summaryOf(e, converter);
      if (summary) call.summary = summary;
    }
  }
  state.scheduled.set(String(e.eventId), entry);
}

/** A call's tool answered: its outcome, or the questions of its next round. */
function toolAnswered(call: TranscriptCall, result: CallOutcome | InputRequiredOutcome | undefined): void {
  if (result?.status === 'input_required') {
    const round = (call.inputs?.at(-1)?.round ?? 0) + 1;
    call.inputs = [...(call.inputs ?? []), ...result.requests.map((r) => ({ ...r, round }))];
  } else call.outcome = result;
}

function activityCompleted(
  state: TranscriptState,
  a: EventAttributes<'activityTaskCompletedEventAttributes'>,
  converter: PayloadConverter,
): void {
  const { t, callFor } = state;
  const entry = state.scheduled.get(String(a.scheduledEventId));
  if (entry?.type === ActivityName.reconcileServers) {
    const r = decode<ReconcileResult>(a.result, converter);
    t.status = r?.status;
    t.serversParagraph = r?.serversParagraph;
    t.workerQueue = r?.workerQueue;
  } else if (entry?.type === ActivityName.listTools) {
    t.tools = decode<ToolInfo[]>(a.result, converter) ?? [];
  } else if (entry?.type === ActivityName.preToolUseHooks && entry.callId) {
    callFor(entry.callId).preToolUse = decode<PreToolUseHooksResult>(a.result, converter);
  } else if (entry?.type === ActivityName.postToolUseHooks && entry.callId) {
    callFor(entry.callId).postToolUse = decode<PostToolUseHooksResult>(a.result, converter);
  } else if (entry?.step) {
    steps.modelStepAnswered(state, entry.step, decode<ModelStepResult>(a.result, converter));
  } else if (entry?.type === ActivityName.callTool && entry.callId) {
    toolAnswered(callFor(entry.callId), decode<CallOutcome | InputRequiredOutcome>(a.result, converter));
  } else if (entry?.callId && TASK_ACTIVITIES.has(entry.type)) {
    taskActivityCompleted(
      entry.type,
      callFor(entry.callId),
      decode<TaskStarted | TaskPoll | CallOutcome>(a.result, converter),
    );
  }
}

/**
 * A fast-path call: its marker carries the result with the call's ID. A failed one (a miss, a
 * timeout) is followed by the regular activity, which the transcript shows as usual.
 */
function localActivityRecorded(state: TranscriptState, e: HistoryEvent, converter: PayloadConverter): void {
  const m = e.markerRecordedEventAttributes!;
  const data = decode<LocalActivityMarkerData>(m.details?.data, converter);
  if ((data?.activity_type ?? data?.activityType) !== ActivityName.callToolLocal) return;
  const local = decode<LocalCallOutcome>(m.details?.result, converter);
  if (!local) return;
  const { callId, ...result } = local;
  const call = state.callFor(callId);
  const summary = summaryOf(e, converter);
  if (summary) call.summary = summary;
  toolAnswered(call, result);
}

/** Activities whose failed attempts a call lists. */
const FAILURE_LISTED_ACTIVITIES = new Set<string>([
  ActivityName.callTool,
  ActivityName.createTask,
  ActivityName.takeTask,
  ActivityName.pollTask,
  ActivityName.taskResult,
  ActivityName.taskInput,
]);

function activityFailed(
  state: TranscriptState,
  a: EventAttributes<'activityTaskFailedEventAttributes'> | EventAttributes<'activityTaskTimedOutEventAttributes'>,
): void {
  const entry = state.scheduled.get(String(a.scheduledEventId));
  entry?.step?.failures.push(failureMessage(a.failure));
  if (entry?.callId && FAILURE_LISTED_ACTIVITIES.has(entry.type)) {
    state.callFor(entry.callId).failures.push(failureMessage(a.failure));
  }
}

/** An accepted Update: a call made (its request), or a 2025-era server's question reported by its call. */
function updateAccepted(
  state: TranscriptState,
  accepted: EventAttributes<'workflowExecutionUpdateAcceptedEventAttributes'>,
  converter: PayloadConverter,
): void {
  const { callFor, legacyAsked } = state;
  const req = accepted.acceptedRequest;
  if (req?.input?.name === UpdateName.callTool) {
    const request = decode<CallRequest>(req.input.args, converter);
    if (request) callFor(request.id, request.name, request.arguments ?? {});
  }
  if (req?.input?.name === UpdateName.legacyInputAsked) {
    const report = decode<LegacyInputReport>(req.input.args, converter);
    if (report) {
      const call = callFor(report.callId, report.tool);
      // Rounds count as the turn counts them: every accepted question of the call.
      const round = (call.inputs?.filter((i) => i.key === LEGACY_INPUT_KEY).length ?? 0) + 1;
      const asked: TranscriptInput = { ...report.request, key: LEGACY_INPUT_KEY, round };
      call.inputs = [...(call.inputs ?? []), asked];
      legacyAsked.set(inputRequestId(report.callId, round, LEGACY_INPUT_KEY), asked);
    }
  }
}
