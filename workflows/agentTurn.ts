import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  TimeoutFailure,
  isCancellation,
  patched,
  sleep,
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  proxyActivities,
  setHandler,
  upsertMemo,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import { FailureType, QueryName, UpdateName, type CallOutcome, type CallRecord, type CallRequest, type CallToolInput, type ReconcileResult, type ToolInfo, type TurnInput, type TurnProgress, type TurnResult, type TurnStart } from '../contract/index.js';
import type { Activities } from '../activities/index.js';

export const turnStartedUpdate = defineUpdate<TurnStart>(UpdateName.turnStarted);
export const callToolUpdate = defineUpdate<CallOutcome, [CallRequest]>(UpdateName.callTool);
export const endTurnUpdate = defineUpdate<void>(UpdateName.endTurn);
/** Cancels one in-flight call by its ID; returns whether such a call was running. */
export const cancelCallUpdate = defineUpdate<boolean, [string]>(UpdateName.cancelCall);
export const statusQuery = defineQuery<TurnProgress>(QueryName.status);

const DEFAULTS = {
  continueAsNewAfterCalls: 500,
  toolTimeoutMs: 60_000,
  heartbeatTimeoutMs: 10_000,
  scheduleToStartMs: 10_000,
  idleMs: 30 * 60_000,
};


/** One agent turn: reconcile, freeze the tool list, run the calls. */
export async function agentTurn(input: TurnInput): Promise<TurnResult> {
  const info = workflowInfo();
  const sharedQueue = info.taskQueue;
  const limits = { ...DEFAULTS, ...input.limits };
  const calls: CallRecord[] = [];
  let inFlight = 0;
  let lastActivity = 0;
  let lastActivityAt = Date.now();
  let ended: TurnResult['endedBy'] | undefined;
  let start: TurnStart | undefined;
  let tools = new Map<string, ToolInfo>();
  let lastReconcile: ReconcileResult | undefined;
  const running = new Map<string, CancellationScope>();
  // Update IDs de-duplicate within one run only: outcomes carried over answer retries across runs,
  // and the IDs of older calls (outcomes not carried) are refused rather than run twice.
  const carried = new Map((input.continued?.recent ?? []).map((r) => [r.id, r.outcome]));
  const ranBefore = new Set(input.continued?.earlierIds ?? []);

  const progress = (): TurnProgress => ({
    phase: ended ? 'ended' : start ? 'ready' : 'starting',
    workerQueue: start?.workerQueue,
    status: start?.status,
    callsDone: calls.length,
    callsInFlight: inFlight,
  });

  setHandler(statusQuery, progress);
  setHandler(turnStartedUpdate, async () => {
    await condition(() => start !== undefined);
    return start!;
  });
  setHandler(
    callToolUpdate,
    async (request) => {
      const earlier = carried.get(request.id);
      if (earlier) return earlier;
      if (ranBefore.has(request.id)) {
        return errorOutcome('bad_request', `call ${request.id} already ran earlier in this turn; its outcome is in the transcript, not repeated here`);
      }
      // A condition that already holds still costs the SDK a stack capture per promise: skip it.
      if (start === undefined) await condition(() => start !== undefined);
      lastActivity += 1;
      lastActivityAt = Date.now();
      return runCall(request);
    },
    {
      validator: (request) => {
        if (ended) throw new Error('the turn has ended');
        if (!request || typeof request.id !== 'string' || typeof request.name !== 'string') {
          throw new Error('callTool needs { id: string, name: string, arguments?: object }');
        }
      },
    },
  );
  setHandler(cancelCallUpdate, (id) => {
    const scope = running.get(id);
    scope?.cancel();
    return scope !== undefined;
  });
  setHandler(endTurnUpdate, () => {
    ended ??= 'endTurn';
  });

  let workerQueue: string;
  if (input.continued) {
    start = input.continued.start;
    workerQueue = start.workerQueue;
    tools = new Map(start.tools.map((t) => [t.name, t]));
  } else {
    workerQueue = await reconcile(input.preferredWorkerQueue);
    const frozen = await pinned(workerQueue).listTools({ sessionId: input.sessionId });
    tools = new Map(frozen.map((t) => [t.name, t]));
    // The next turn of the session reads this to prefer the worker that holds its servers.
    upsertMemo({ workerQueue });
    start = {
      turnId: info.workflowId,
      workerQueue,
      status: lastReconcile!.status,
      tools: frozen,
      serversParagraph: lastReconcile!.serversParagraph,
    };
  }

  try {
    if (input.batch) {
      for (const group of input.batch) {
        await Promise.all(group.map((request) => runCall(request)));
      }
      ended = 'batch';
    } else if (patched('one-idle-timer')) {
      // One idle timer per idle period rather than a condition-with-timeout per wake-up, which
      // started and cancelled a timer for every call: two history events and measurable workflow
      // CPU per call. Turns recorded before this change replay the loop below.
      let idleFired = false;
      const armIdle = () => {
        const wait = inFlight > 0 ? limits.idleMs : Math.max(lastActivityAt + limits.idleMs - Date.now(), 1);
        void sleep(wait).then(
          () => void (idleFired = true),
          () => undefined,
        );
      };
      armIdle();
      while (!ended) {
        const seen = lastActivity;
        // Wakes once per finished burst of calls, not at each call's start and end.
        await condition(() => ended !== undefined || idleFired || (lastActivity !== seen && inFlight === 0));
        if (idleFired) {
          idleFired = false;
          if (inFlight === 0 && lastActivity === seen && lastActivityAt + limits.idleMs <= Date.now()) {
            ended = 'idle';
            break;
          }
          armIdle();
        }
        await continueIfLong();
      }
    } else {
      while (!ended) {
        const seen = lastActivity;
        const woke = await condition(() => ended !== undefined || lastActivity !== seen || inFlight > 0, limits.idleMs);
        if (!woke) ended = 'idle';
        else if (inFlight > 0) await condition(() => inFlight === 0 || ended !== undefined);
        await continueIfLong();
      }
    }
  } catch (err) {
    if (isCancellation(err)) {
      // Without this the workflow would close as cancelled while Update handlers still await their
      // activities, which are then abandoned instead of cancelled: cancel them explicitly and wait,
      // so each activity aborts its MCP request (notifications/cancelled) and its outcome is recorded.
      await CancellationScope.nonCancellable(async () => {
        for (const scope of running.values()) scope.cancel();
        await condition(() => inFlight === 0);
      });
    }
    throw err;
  }
  await condition(allHandlersFinished);
  const callsBefore = input.continued?.callsBefore;
  return { turnId: info.workflowId, sessionId: input.sessionId, workerQueue, endedBy: ended, calls, ...(callsBefore ? { callsBefore } : {}) };

  // --- helpers (closures over the turn's state) ---

  /** Continues as new when the run is long, once no call is in flight. */
  async function continueIfLong(): Promise<void> {
    if (ended || inFlight > 0) return;
    if (!workflowInfo().continueAsNewSuggested && calls.length < limits.continueAsNewAfterCalls) return;
    await condition(allHandlersFinished);
    if (ended || inFlight > 0) return;
    const all = [...(input.continued?.recent ?? []), ...calls];
    const recent = all.slice(-100);
    const earlierIds = [...(input.continued?.earlierIds ?? []), ...all.slice(0, -100).map((c) => c.id)];
    await continueAsNew<typeof agentTurn>({
      ...input,
      preferredWorkerQueue: undefined,
      continued: { start: { ...start!, workerQueue }, callsBefore: (input.continued?.callsBefore ?? 0) + calls.length, recent, earlierIds },
    });
  }

  async function reconcile(preferred?: string): Promise<string> {
    const input2 = { sessionId: input.sessionId, refs: input.refs };
    if (preferred) {
      try {
        lastReconcile = await activitiesOn(preferred, { scheduleToStartTimeout: '5s' }).reconcileServers(input2);
        return lastReconcile.workerQueue;
      } catch (err) {
        if (!isScheduleToStartTimeout(err)) throw err;
      }
    }
    lastReconcile = await activitiesOn(sharedQueue, {}).reconcileServers(input2);
    return lastReconcile.workerQueue;
  }

  async function runCall(request: CallRequest): Promise<CallOutcome> {
    inFlight += 1;
    const args = request.arguments ?? {};
    try {
      const outcome = await executeCall(request, args);
      calls.push({ id: request.id, name: request.name, arguments: args, outcome });
      return outcome;
    } finally {
      inFlight -= 1;
      lastActivity += 1;
      lastActivityAt = Date.now();
    }
  }

  async function executeCall(request: CallRequest, args: Record<string, unknown>): Promise<CallOutcome> {
    const tool = tools.get(request.name);
    if (!tool) {
      return errorOutcome('bad_request', `unknown tool "${request.name}": it is not in this turn's tool list`);
    }
    const safeToRetry = tool.annotations?.readOnlyHint === true || tool.annotations?.idempotentHint === true;
    const callInput: CallToolInput = {
      sessionId: input.sessionId,
      callId: request.id,
      name: tool.name,
      server: tool.server,
      tool: tool.tool,
      arguments: args,
      annotations: tool.annotations,
      // Just under the activity's start-to-close, so the MCP timeout is the one that is classified.
      requestTimeoutMs: Math.max(1000, (tool.timeoutMs ?? limits.toolTimeoutMs) - 1000),
    };
    for (let failover = 0; ; failover += 1) {
      const scope = new CancellationScope();
      running.set(request.id, scope);
      try {
        return await scope.run(() => callActivity(workerQueue, tool, safeToRetry).callTool(callInput));
      } catch (err) {
        // The whole turn was cancelled: let the cancellation end the workflow.
        if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
        if (isCancellation(err)) return errorOutcome('cancelled', 'the call was cancelled before it finished; it may have had an effect');
        // The call never started, so it is always safe to try once more: either the
        // pinned worker is gone (schedule-to-start), or its servers are (stopped idle, crashed).
        const neverStarted = isScheduleToStartTimeout(err) || isFailureType(err, FailureType.ServerUnavailable);
        if (neverStarted && failover === 0) {
          try {
            // A gone worker: the shared queue. Gone servers: the same worker, if it still answers.
            workerQueue = await reconcile(isScheduleToStartTimeout(err) ? undefined : workerQueue);
          } catch (reconcileErr) {
            return errorOutcome('transport', `the servers could not be reconciled again: ${messageOf(reconcileErr)} (the call did not run)`);
          }
          continue;
        }
        return failureOutcome(err, safeToRetry);
      } finally {
        running.delete(request.id);
      }
    }
  }

  function callActivity(queue: string, tool: ToolInfo, safeToRetry: boolean) {
    const options: ActivityOptions = {
      taskQueue: queue,
      summary: tool.name,
      startToCloseTimeout: tool.timeoutMs ?? limits.toolTimeoutMs,
      heartbeatTimeout: limits.heartbeatTimeoutMs,
      scheduleToStartTimeout: limits.scheduleToStartMs,
      retry: {
        // Never run a side-effecting call twice behind the model's back.
        maximumAttempts: safeToRetry ? 3 : 1,
        initialInterval: '1s',
        backoffCoefficient: 2,
        nonRetryableErrorTypes: [FailureType.BadRequest, FailureType.ServerUnavailable],
      },
    };
    return proxyActivities<Activities>(options);
  }

  function pinned(queue: string) {
    return activitiesOn(queue, { scheduleToStartTimeout: limits.scheduleToStartMs });
  }

  function activitiesOn(queue: string, extra: ActivityOptions | Record<string, never>) {
    return proxyActivities<Activities>({
      taskQueue: queue,
      startToCloseTimeout: '2m',
      retry: { maximumAttempts: 3, initialInterval: '1s', nonRetryableErrorTypes: [FailureType.Config] },
      ...extra,
    });
  }
}

function isFailureType(err: unknown, type: string): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === type;
}

function messageOf(err: unknown): string {
  const cause = err instanceof ActivityFailure && err.cause ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

function isScheduleToStartTimeout(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START
  );
}

function errorOutcome(kind: NonNullable<CallOutcome['errorKind']>, message: string, durationMs = 0, attempts = 0): CallOutcome {
  return { status: 'error', content: [], isError: true, errorKind: kind, errorMessage: message, startedAt: '', durationMs, attempts };
}

/** Turns a failed call into what the model reads. */
function failureOutcome(err: unknown, safeToRetry: boolean): CallOutcome {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const message = cause instanceof Error ? cause.message : String(cause);
  if (cause instanceof ApplicationFailure) {
    if (cause.type === FailureType.BadRequest) return errorOutcome('bad_request', message);
    if (cause.type === FailureType.ServerUnavailable) return errorOutcome('transport', `${message} (the call did not run)`);
  }
  if (!safeToRetry) {
    return errorOutcome(
      'unknown_result',
      `the result is unknown: ${message}. The call may have had an effect; check before repeating it.`,
    );
  }
  if (cause instanceof TimeoutFailure) return errorOutcome('timeout', `the call timed out (${cause.timeoutType})`);
  return errorOutcome('transport', message);
}
