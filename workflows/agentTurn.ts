import {
  CancellationScope,
  isCancellation,
  allHandlersFinished,
  condition,
  continueAsNew,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import {
  RefusalType,
  type CallOutcome,
  type EndTurnOptions,
  type CallRequest,
  type ContinuedTurn,
  type TurnInput,
  type TurnResult,
} from '../contract/index.js';
import { resolveLimits } from './activityOptions.js';
import { batchProblem, callRequestProblem, modelTurnProblem } from './bounds.js';
import { runCall } from './calls.js';
import {
  answerInputUpdate,
  callToolUpdate,
  cancelCallUpdate,
  endTurnUpdate,
  legacyInputAskedUpdate,
  statusQuery,
  turnStartedUpdate,
} from '../contract/definitions.js';
import { checkLegacyReport, legacyInputAsked } from './legacyInputs.js';
import { alreadyRanOutcome, refusal } from './failures.js';
import { waitWhileOpen } from './idle.js';
import { checkAnswer, takeAnswer } from './inputs.js';
import { openServers } from './openServers.js';
import { endTurnSession } from './session.js';
import { detachTasks, takeUpProblem } from './detach.js';
import { runModelLoop } from './modelLoop.js';
import { RECENT_CALLS_KEPT, TurnState, type TurnContext } from './turnState.js';

/** One agent turn: reconcile, freeze the tool list, run the calls. */
export async function agentTurn(input: TurnInput): Promise<TurnResult> {
  const info = workflowInfo();
  // Before any handler: a cron schedule runs the caller's input again and again, each run
  // presented as continuing the one before.
  if (info.cronSchedule !== undefined) {
    throw refusal(
      RefusalType.turnInput,
      `a turn never runs on a cron schedule (this one has ${JSON.stringify(info.cronSchedule)}); start it without one`,
    );
  }
  // Limits out of range are refused before anything runs.
  const limits = resolveLimits(input.limits);
  const ctx: TurnContext = {
    input,
    limits,
    sharedQueue: info.taskQueue,
    firstRunId: info.firstExecutionRunId,
    state: new TurnState(),
  };
  const { state } = ctx;

  refuseInput(input);

  installHandlers(ctx);
  // Without an await, so a continued run's idle timer stays its first command, ahead of any call
  // that an Update delivered with the run starts.
  if (input.continued) resumeTurn(ctx, input.continued);
  else {
    await openServers(ctx, info.workflowId);
    // The next turn of the session reads this to prefer the worker that holds its servers.
    upsertMemo({ workerQueue: state.workerQueue });
  }
  state.details.ready(input);

  try {
    if (input.batch) {
      for (const group of input.batch) {
        await Promise.all(group.map((request) => runCall(ctx, request)));
      }
      state.ended = 'batch';
    } else if (input.model) {
      await runModelLoop(ctx, input.model);
    } else {
      // The loop wakes after a burst of calls only when the run is due to continue as new.
      await waitWhileOpen(
        state,
        ctx.limits.idleMs,
        () => continueIfLong(ctx),
        () => mayContinue(ctx),
      );
    }
  } catch (err) {
    if (isCancellation(err)) {
      // Without this the workflow would close as cancelled while Update handlers still await their
      // activities, which are then abandoned instead of cancelled: cancel them explicitly and wait,
      // so each activity aborts its MCP request (notifications/cancelled) and its outcome is recorded.
      await CancellationScope.nonCancellable(async () => {
        for (const scope of state.running.values()) scope.cancel();
        await condition(() => state.inFlight === 0);
      });
    }
    throw err;
  }
  await condition(allHandlersFinished);
  if (input.endSession === true || state.endSession) await endTurnSession(state.workerQueue, input.sessionId);
  const callsBefore = input.continued?.callsBefore;
  state.details.ended(state.ended!);
  return {
    turnId: info.workflowId,
    sessionId: input.sessionId,
    workerQueue: state.workerQueue,
    endedBy: state.ended!,
    calls: state.calls,
    ...(callsBefore ? { callsBefore } : {}),
    ...(input.model
      ? {
          model: input.model.name,
          answer: state.answer ?? '',
          modelSteps: state.modelSteps,
          ...(state.conversation !== undefined ? { conversation: state.conversation } : {}),
        }
      : {}),
  };
}

/**
 * Refuses a turn input that must not run, before anything runs: a bad batch or model, and a
 * continuation this run was not made for.
 */
function refuseInput(input: TurnInput): void {
  const info = workflowInfo();
  const inputProblem = input.batch ? batchProblem(input.batch) : undefined;
  if (inputProblem) {
    throw refusal(RefusalType.turnInput, `batch refused: ${inputProblem}`, { field: 'calls' });
  }
  const modelProblem = input.model ? modelTurnProblem(input.model, input.batch !== undefined) : undefined;
  if (modelProblem)
    throw refusal(RefusalType.turnInput, `model turn refused: ${modelProblem.message}`, { field: modelProblem.field });

  // A continuation is trusted only when this run was made by the turn continuing itself: anyone who
  // can start a workflow can write one into the input. Temporal also says a run continues another
  // for a workflow retry's later attempt (started again with the caller's input), and the chain a
  // continuation names is one no caller can know before starting its own.
  if (
    input.continued &&
    (info.continuedFromExecutionRunId === undefined ||
      info.attempt > 1 ||
      input.continued.start.turnId !== info.workflowId ||
      input.continued.firstRunId !== info.firstExecutionRunId)
  ) {
    throw refusal(
      RefusalType.turnInput,
      'continuation refused: a turn carries one only into a run of its own made by continue-as-new; start the turn without it',
    );
  }
}

/**
 * The turn's Updates and Query. Installed before the first await: an Update still without a handler
 * when the first activation ends is rejected, and update-with-start delivers turnStarted there.
 */
function installHandlers(ctx: TurnContext): void {
  const { input, state } = ctx;
  // Update IDs de-duplicate within one run only: outcomes carried over answer retries across runs,
  // and the IDs of older calls (outcomes not carried) are refused rather than run twice.
  const carried = new Map((input.continued?.recent ?? []).map((r) => [r.id, r.outcome]));
  const ranBefore = new Set(input.continued?.earlierIds ?? []);

  setHandler(statusQuery, () => state.progress());
  setHandler(turnStartedUpdate, async () => {
    await condition(() => state.start !== undefined);
    // The nonce of this run's own input: a client adopts the run only if it is the one it sent.
    return input.startNonce === undefined ? state.start! : { ...state.start!, startNonce: input.startNonce };
  });
  setHandler(
    callToolUpdate,
    // Not async: the call's own promise is the Update's (one promise fewer per call and layer).
    (request) => {
      const earlier = carried.get(request.id);
      if (earlier) return earlier;
      if (ranBefore.has(request.id)) return alreadyRan(request);
      // A condition that already holds still costs the SDK a stack capture per promise: skip it.
      if (state.start === undefined) {
        return condition(() => state.start !== undefined).then(() => {
          state.touch();
          return runCall(ctx, request);
        });
      }
      state.touch();
      return runCall(ctx, request);
    },
    {
      // A rejected Update leaves no trace in history.
      validator: (request) => {
        if (state.ended) throw refusal(RefusalType.turnEnded, 'the turn has ended');
        const problem = callRequestProblem(request) ?? takeUpProblem(request);
        if (problem) throw refusal(RefusalType.callRequest, problem);
      },
    },
  );
  setHandler(cancelCallUpdate, (id) => {
    const scope = state.running.get(id);
    scope?.cancel();
    return scope !== undefined;
  });
  // A rejected Update leaves no trace in history; an accepted one is the recorded answer.
  setHandler(answerInputUpdate, (requestId, answer) => takeAnswer(state, requestId, answer), {
    validator: (requestId, answer) => checkAnswer(state, requestId, answer),
  });
  // Only a running call's activity sends it; no turn recorded before could have received one.
  setHandler(legacyInputAskedUpdate, (report) => legacyInputAsked(ctx, report), {
    validator: (report) => checkLegacyReport(state, report),
  });
  // An end sent before the argument existed, or without one, carries none.
  setHandler(endTurnUpdate, (options?: EndTurnOptions) => {
    state.ended ??= 'endTurn';
    if (options?.endSession === true) state.endSession = true;
    if (options?.detach === true) detachTasks(state);
  });
}

function alreadyRan(request: CallRequest): CallOutcome {
  return alreadyRanOutcome(request.id);
}

/** A run after continue-as-new keeps the worker, tools and start of the run before. */
function resumeTurn(ctx: TurnContext, continued: ContinuedTurn): void {
  const { state } = ctx;
  state.start = continued.start;
  state.details.servers(continued.start.status);
  state.workerQueue = continued.start.workerQueue;
  state.tools = new Map(continued.start.tools.map((t) => [t.name, t]));
  // Refused tools are not in the list the caller got, but a call to one must still name its rule.
  for (const r of continued.start.refusedTools ?? [])
    state.tools.set(r.name, {
      name: r.name,
      server: '',
      tool: '',
      description: '',
      inputSchema: {},
      refusedBy: r.reason,
    });
}

/** Whether the run is long enough to continue as new, and no call is in flight. */
function mayContinue(ctx: TurnContext): boolean {
  const { limits, state } = ctx;
  if (state.ended || state.inFlight > 0) return false;
  return workflowInfo().continueAsNewSuggested || state.callsDone >= limits.continueAsNewAfterCalls;
}

/**
 * Continues as new when the run is long, once no call is in flight: Temporal caps the Updates and
 * events of one run. The latest outcomes are carried so a retried call is answered, not run again.
 */
async function continueIfLong(ctx: TurnContext): Promise<void> {
  const { input, state } = ctx;
  if (!mayContinue(ctx)) return;
  await condition(allHandlersFinished);
  if (state.ended || state.inFlight > 0) return;
  const all = [...(input.continued?.recent ?? []), ...state.calls];
  const recent = all.slice(-RECENT_CALLS_KEPT);
  const earlierIds = [
    ...(input.continued?.earlierIds ?? []),
    ...state.droppedIds,
    ...all.slice(0, -RECENT_CALLS_KEPT).map((c) => c.id),
  ];
  await continueAsNew<typeof agentTurn>({
    ...input,
    preferredWorkerQueue: undefined,
    continued: {
      start: { ...state.start!, workerQueue: state.workerQueue },
      callsBefore: (input.continued?.callsBefore ?? 0) + state.callsDone,
      recent,
      earlierIds,
      firstRunId: ctx.firstRunId,
    },
  });
}
