import { CancellationScope, isCancellation, proxyActivities, workflowInfo } from '@temporalio/workflow';
import {
  type CallHooks,
  type CallOutcome,
  type CallRequest,
  type CallToolInput,
  type HookRunRecord,
  type PostToolUseHooksResult,
  type PreToolUseHooksResult,
  type ToolInfo,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { hookOptions, isSafeToRetry, localCallOptions, requestTimeoutMs } from './activityOptions.js';
import {
  cancelledCallOutcome,
  cancelledInHooksOutcome,
  errorOutcome,
  failureOutcome,
  hookDeniedOutcome,
  isTaskOnlyRefusal,
  messageOf,
  notAllowedOutcome,
  unknownToolOutcome,
} from './failures.js';
import { MAX_LOST_WORKER_MOVES, moveOf, moveTurn, neverRan, type Move } from './placement.js';
import { waitForAnswers, type InputRounds } from './inputs.js';
import { runTask, runsAsTask } from './tasks.js';
import { askApproval } from './approvals.js';
import {
  endsBeforeTaskRenewal,
  firstWay,
  regularWay,
  sendCall,
  withFastAttempt,
  type Attempt,
  type Sent,
  type Way,
} from './sendCall.js';
import type { TurnContext } from './turnState.js';

/**
 * Runs one call and records its outcome; every call of the turn, batch or interactive, goes here.
 * Without async frames of its own: the SDK captures a stack trace for each promise a workflow
 * creates (a visible part of the worker's CPU profile per call).
 */
export function runCall(ctx: TurnContext, request: CallRequest): Promise<CallOutcome> {
  const { state } = ctx;
  state.inFlight += 1;
  state.details.callStarted(request.id, request.name);
  const args = request.arguments ?? {};
  const tool = state.tools.get(request.name);
  const running =
    tool && tool.refusedBy === undefined && tool.hooks === undefined && tool.askedBy === undefined
      ? (unscopedFastCall(ctx, request, tool, args) ?? callActivity(ctx, request, tool, args))
      : executeCall(ctx, request, args);
  return running.then(
    (outcome) => {
      try {
        state.record(
          {
            id: request.id,
            name: request.name,
            arguments: args,
            ...(request.taskId !== undefined ? { taskId: request.taskId } : {}),
            outcome,
          },
          ctx.input.batch !== undefined,
        );
      } finally {
        state.inFlight -= 1;
        state.touch();
        state.details.callEnded(request.id, request.name, outcome);
      }
      return outcome;
    },
    (err: unknown) => {
      state.details.callEnded(request.id, request.name, undefined);
      state.inFlight -= 1;
      state.touch();
      throw err;
    },
  );
}

/**
 * A fast-path call that cannot be cancelled while it runs (see `endsBeforeTaskRenewal`): its local
 * activity, without the call's own cancellation scope and its async frames, whose promises the SDK
 * captures a stack trace for each (a third of the turn's workflow promises per call). Whatever
 * does not end it (a hand-over, a question) goes on through {@link callActivity}. Undefined when the
 * call does not take this way.
 */
function unscopedFastCall(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  args: Record<string, unknown>,
): Promise<CallOutcome> | undefined {
  // Interactive turns only: there each workflow task's local activities all start with the task (one
  // per Update it brings), while a batch's next group may start in the task of the last, later.
  if (
    ctx.input.batch !== undefined ||
    request.taskId !== undefined ||
    runsAsTask(tool) ||
    ctx.state.taskOnlyTools.has(tool.name)
  )
    return undefined;
  const input = callInputFor(ctx, request, tool, args);
  if (firstWay(ctx, tool, input) !== 'local') return undefined;
  if (!endsBeforeTaskRenewal(localCallOptions(tool, ctx.limits), workflowInfo().taskTimeoutMs)) return undefined;
  ctx.state.details.callAttempt(request.id);
  const attempt = { tool, input, queue: ctx.state.workerQueue, way: 'local', fastAttemptRanTool: false } as const;
  return sendCall(ctx, request, attempt).then((sent) =>
    'answered' in sent && sent.answered.status !== 'input_required'
      ? sent.answered
      : callActivity(ctx, request, tool, args, undefined, sent),
  );
}

async function executeCall(
  ctx: TurnContext,
  request: CallRequest,
  args: Record<string, unknown>,
): Promise<CallOutcome> {
  const { state } = ctx;
  const tool = state.tools.get(request.name);
  if (!tool) {
    return unknownToolOutcome(request.name, state.tools.keys());
  }
  if (tool.refusedBy !== undefined) {
    return notAllowedOutcome(tool.name, tool.refusedBy);
  }
  // Tools without hooks (every tool when none are configured) take the path they always took:
  // no activity and no command more than before.
  if (tool.hooks === undefined) {
    const approval =
      tool.askedBy === undefined ? undefined : await approvalOutcome(ctx, request, tool, args, tool.askedBy);
    if (approval && 'status' in approval) return approval;
    const callArgs = approval?.edited ?? args;
    return withApproved(await callActivity(ctx, request, tool, callArgs), approval?.edited);
  }

  let hooks: CallHooks | undefined;
  let callArgs = args;
  let pre: PreToolUseHooksResult | undefined;
  const preBudget = tool.hooks.PreToolUse;
  if (preBudget !== undefined) {
    // Its result is in history before the call is scheduled: after a crash the recorded decision is
    // read back, never taken again, whatever the hooks of the next worker would say.
    const decided = await hookActivity(ctx, request, tool, 'PreToolUse', preBudget, (a) =>
      a.preToolUseHooks({ ...hookInput(ctx, request, tool), arguments: args }),
    );
    if ('status' in decided) return decided;
    pre = decided;
    hooks = { pre: preSummary(pre) };
    if (pre.decision === 'deny') {
      return hookDeniedOutcome(tool.name, pre.reason, hooks);
    }
    if (pre.updatedInput) callArgs = pre.updatedInput;
  }
  const why = pre?.decision === 'ask' ? `a PreToolUse hook (${pre.reason ?? 'no reason given'})` : tool.askedBy;
  const approval = why === undefined ? undefined : await approvalOutcome(ctx, request, tool, callArgs, why);
  if (approval && 'status' in approval) return hooks ? { ...approval, hooks } : approval;
  let proof = pre?.proof;
  if (approval?.edited && preBudget !== undefined) {
    // Other arguments than the hooks saw: they decide again, and only a deny stops the call now
    // (an ask was just answered by the person who wrote these arguments).
    const again = await hookActivity(ctx, request, tool, 'PreToolUse', preBudget, (a) =>
      a.preToolUseHooks({ ...hookInput(ctx, request, tool), arguments: approval.edited! }),
    );
    if ('status' in again) return again;
    hooks = { pre: preSummary(again) };
    if (again.decision === 'deny') return hookDeniedOutcome(tool.name, again.reason, hooks);
    callArgs = again.updatedInput ?? approval.edited;
    proof = again.proof;
  } else if (approval?.edited) callArgs = approval.edited;
  const outcome = withApproved(await callActivity(ctx, request, tool, callArgs, proof), approval?.edited);
  const postBudget = tool.hooks.PostToolUse;
  // Like Claude Code's PostToolUse: only after the tool ran (an isError result did run).
  if (postBudget !== undefined && outcome.status === 'ok') {
    const toolResponse = {
      content: outcome.content,
      isError: outcome.isError,
      ...(outcome.structuredContent ? { structuredContent: outcome.structuredContent } : {}),
    };
    const post = await hookActivity(ctx, request, tool, 'PostToolUse', postBudget, (a) =>
      a.postToolUseHooks({ ...hookInput(ctx, request, tool), arguments: callArgs, toolResponse }),
    );
    if ('status' in post)
      return {
        ...outcome,
        hooks: { ...hooks, post: { errors: [post.errorMessage ?? 'the PostToolUse hooks could not run'] } },
      };
    hooks = { ...hooks, post: postSummary(post) };
    return withPostHooks(outcome, post, hooks);
  }
  return hooks ? { ...outcome, hooks } : outcome;
}

/**
 * Once a person approved the call: the arguments they gave instead, if any. Else the outcome it
 * ends with (it never ran).
 */
async function approvalOutcome(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  args: Record<string, unknown>,
  why: string,
): Promise<CallOutcome | { edited?: Record<string, unknown> }> {
  const approval = await askApproval(ctx, request, tool, args, why);
  if ('cancelled' in approval)
    return errorOutcome('cancelled', 'the call was cancelled while it waited for approval (it did not run)');
  if (!approval.approved) return errorOutcome('bad_request', approval.reason);
  return approval.arguments ? { edited: approval.arguments } : {};
}

/** The outcome, saying which arguments a person approved instead of the call's own. */
function withApproved(outcome: CallOutcome, edited: Record<string, unknown> | undefined): CallOutcome {
  return edited ? { ...outcome, approvedArguments: edited } : outcome;
}

function hookInput(ctx: TurnContext, request: CallRequest, tool: ToolInfo) {
  return { sessionId: ctx.input.sessionId, callId: request.id, name: tool.name, cwd: ctx.input.refs.workspace };
}

function errorsOf(runs: HookRunRecord[]): { errors?: string[] } {
  const errors = runs.filter((r) => r.verdict === 'error').map((r) => `${r.source}: ${r.message ?? 'failed'}`);
  return errors.length > 0 ? { errors } : {};
}

function preSummary(pre: PreToolUseHooksResult): NonNullable<CallHooks['pre']> {
  return {
    decision: pre.decision,
    ...(pre.reason !== undefined ? { reason: pre.reason } : {}),
    ...(pre.updatedInput ? { updatedInput: pre.updatedInput } : {}),
    ...errorsOf(pre.runs),
  };
}

function postSummary(post: PostToolUseHooksResult): NonNullable<CallHooks['post']> {
  return {
    ...(post.note !== undefined ? { note: post.note } : {}),
    ...(post.withheld !== undefined ? { withheld: post.withheld } : {}),
    ...errorsOf(post.runs),
  };
}

/** The outcome the model reads after PostToolUse: the hooks' note after the result, or the result withheld. */
function withPostHooks(outcome: CallOutcome, post: PostToolUseHooksResult, hooks: CallHooks): CallOutcome {
  if (post.withheld !== undefined) {
    const text = `the call ran, but its result is withheld: ${post.withheld}`;
    return { ...outcome, content: [{ type: 'text', text }], isError: true, structuredContent: undefined, hooks };
  }
  if (post.note === undefined) return { ...outcome, hooks };
  return { ...outcome, content: [...outcome.content, { type: 'text', text: `PostToolUse hook: ${post.note}` }], hooks };
}

/**
 * Runs one hook activity on the worker holding the session's servers. If that worker is gone (the
 * activity never started, or stopped heartbeating) the turn moves to another worker once and runs
 * the hooks there: no decision was recorded, so none is taken twice. Returns an error outcome when
 * they cannot run: the call does not run without its hooks.
 */
async function hookActivity<T>(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  event: 'PreToolUse' | 'PostToolUse',
  budgetMs: number,
  run: (a: Activities) => Promise<T>,
): Promise<T | CallOutcome> {
  const { state, limits } = ctx;
  for (let moved = false; ; moved = true) {
    const queue = state.workerQueue;
    const scope = new CancellationScope();
    state.running.set(request.id, scope);
    try {
      return await scope.run(() => run(proxyActivities<Activities>(hookOptions(queue, event, tool, budgetMs, limits))));
    } catch (err) {
      if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
      if (isCancellation(err)) return cancelledInHooksOutcome(event);
      const move = moveOf(err);
      const what = `the ${event} hooks could not run: ${messageOf(err)}${event === 'PreToolUse' ? ' (the call did not run)' : ''}`;
      // No decision was recorded, so hooks whose worker was lost may run again, once, elsewhere.
      if ((move !== 'not-taken' && move !== 'lost') || moved) return errorOutcome('transport', what);
      const problem = await moveTurn(ctx, queue, move);
      if (problem)
        return errorOutcome('transport', `${what}; the servers could not be reconciled on another worker: ${problem}`);
    } finally {
      state.running.delete(request.id);
    }
  }
}

/** The `callTool` input of a call. */
function callInputFor(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  args: Record<string, unknown>,
  hookProof?: string,
): CallToolInput {
  return {
    sessionId: ctx.input.sessionId,
    firstRunId: ctx.firstRunId,
    callId: request.id,
    name: tool.name,
    server: tool.server,
    tool: tool.tool,
    arguments: args,
    annotations: tool.annotations,
    requestTimeoutMs: requestTimeoutMs(tool, ctx.limits),
    ...(hookProof !== undefined ? { hookProof } : {}),
  };
}

/**
 * Runs the call's `callTool` activity, with its one failover. `tried`: how a fast-path attempt made
 * before (by {@link unscopedFastCall}) ended, taken as this call's first.
 */
async function callActivity(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  args: Record<string, unknown>,
  hookProof?: string,
  tried?: Sent,
): Promise<CallOutcome> {
  const { state } = ctx;
  const callInput = callInputFor(ctx, request, tool, args, hookProof);
  if (request.taskId !== undefined) return runTask(ctx, request, tool, callInput, request.taskId);
  if (runsAsTask(tool) || state.taskOnlyTools.has(tool.name)) return runTask(ctx, request, tool, callInput);
  const tries = { failedOverUnstarted: false, lostWorkerMoves: 0 };
  let input = callInput;
  const rounds: InputRounds = { round: 0, timedOut: false };
  let earlier = tried;
  let way: Way = earlier !== undefined ? 'local' : firstWay(ctx, tool, callInput);
  let fastAttemptRanTool = false;
  for (;;) {
    const queue = state.workerQueue;
    const attemptWay = { way: earlier !== undefined ? 'local' : way };
    const scope = new CancellationScope();
    state.running.set(request.id, scope);
    // The attempt made before counted itself.
    if (earlier === undefined) state.details.callAttempt(request.id);
    const attempt: Omit<Attempt, 'way'> = { tool, input, queue, fastAttemptRanTool };
    try {
      let sent: Sent = earlier ?? (await scope.run(() => sendCall(ctx, request, { ...attempt, way })));
      earlier = undefined;
      way = regularWay(ctx, tool);
      if ('handedOver' in sent) {
        fastAttemptRanTool ||= sent.handedOver.ranTool;
        // A refused eager or shared attempt was an activity of its own; a local one runs in the turn's task.
        if (attemptWay.way !== 'local') state.details.callAttempt(request.id);
        // Its queue would hold the call until a schedule-to-start timeout: move first. A shared
        // call needs no holder, so a lost one is no reason to move.
        if (sent.handedOver.ownerLost && regularWay(ctx, tool) === 'pinned') {
          const failed = await moveOrFail(
            ctx,
            queue,
            'lost',
            (problem) =>
              `the worker holding the servers was lost, and they could not be reconciled on another: ${problem} (the call did not run)`,
          );
          if (failed) return failed;
          continue;
        }
        sent = await sendHandedOver(ctx, request, { ...attempt, fastAttemptRanTool }, scope, attemptWay);
      }
      if ('settled' in sent) {
        if (sent.taskOnly) break;
        return sent.settled;
      }
      const result = sent.answered;
      if (result.status !== 'input_required') return withFastAttempt(result, fastAttemptRanTool);
      const next = await waitForAnswers(ctx, request, result, rounds, scope);
      if ('status' in next) return next;
      input = { ...callInput, inputReply: next };
      // Each round may fail over once more: the wait may have outlived the worker.
      tries.failedOverUnstarted = false;
    } catch (err) {
      const next = await afterFailure(ctx, err, { queue, tool, way: attemptWay.way }, tries);
      if (next === 'task') break;
      if (next === 'to-holder') way = 'pinned';
      else if (next !== 'again') return next;
    } finally {
      state.running.delete(request.id);
    }
  }
  // After the loop, so the attempt's scope is gone before the task's takes its place.
  return taskAfterRefusal(ctx, request, tool, callInput);
}

/**
 * What a failed attempt of a call leads to: another attempt (`again`, after a move where the
 * failure calls for one; `to-holder`, a shared call that never started), a task (`task`: refused
 * unrun because the server runs the tool only as one), or the call's outcome. A cancellation of
 * the whole turn is thrown.
 */
async function afterFailure(
  ctx: TurnContext,
  err: unknown,
  attempt: { queue: string; tool: ToolInfo; way: Way },
  tries: { failedOverUnstarted: boolean; lostWorkerMoves: number },
): Promise<'again' | 'to-holder' | 'task' | CallOutcome> {
  const { queue } = attempt;
  const safeToRetry = isSafeToRetry(attempt.tool);
  if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
  if (isCancellation(err)) return cancelledCallOutcome();
  const move = moveOf(err);
  // A shared call that never started goes to the holder; one that did follows the tool's retry
  // rule, which Temporal applied on the shared queue: no move would change what it did.
  if (attempt.way === 'shared' && !isTaskOnlyRefusal(err)) {
    if (!neverRan(move)) return failureOutcome(err, safeToRetry);
    ctx.state.sharedMissedOn = ctx.state.lastReconcile;
    return 'to-holder';
  }
  // The call never started, so it is always safe to try once more.
  if (neverRan(move) && !tries.failedOverUnstarted) {
    tries.failedOverUnstarted = true;
    const failed = await moveOrFail(
      ctx,
      queue,
      move,
      (problem) => `the servers could not be reconciled again: ${problem} (the call did not run)`,
    );
    return failed ?? 'again';
  }
  // The worker running the call is presumed gone. A call that is safe to run again follows the
  // servers to another worker; one that may have had an effect ends as unknown_result at once,
  // without waiting for a reconcile that may find no worker for a while.
  if (safeToRetry && move === 'lost' && tries.lostWorkerMoves < MAX_LOST_WORKER_MOVES) {
    tries.lostWorkerMoves += 1;
    const failed = await moveOrFail(
      ctx,
      queue,
      move,
      (problem) =>
        `the worker running the call was lost, and the servers could not be reconciled on another: ${problem}`,
    );
    return failed ?? 'again';
  }
  // Refused unrun because the server runs the tool only as a task: sent again as one.
  if (isTaskOnlyRefusal(err)) return 'task';
  return failureOutcome(err, safeToRetry);
}

/**
 * The attempts after a hand-over: the regular way (shared or pinned), then pinned when a shared
 * one is refused unrun too. `attemptWay.way` follows the attempt sent, for the caller's failure rules.
 */
async function sendHandedOver(
  ctx: TurnContext,
  request: CallRequest,
  attempt: Omit<Attempt, 'way'>,
  scope: CancellationScope,
  attemptWay: { way: Way },
): Promise<Exclude<Sent, { handedOver: unknown }>> {
  const way = regularWay(ctx, attempt.tool);
  attemptWay.way = way;
  const sent = await scope.run(() => sendCall(ctx, request, { ...attempt, way }));
  if (!('handedOver' in sent)) return sent;
  ctx.state.details.callAttempt(request.id);
  attemptWay.way = 'pinned';
  return scope.run(() => sendCall(ctx, request, { ...attempt, way: 'pinned' }));
}

/** Moves the turn off `queue`; the call's outcome when that fails (`why` says what that means for the call). */
async function moveOrFail(
  ctx: TurnContext,
  queue: string,
  move: Move,
  why: (problem: string) => string,
): Promise<CallOutcome | undefined> {
  const problem = await moveTurn(ctx, queue, move);
  return problem === undefined ? undefined : errorOutcome('transport', why(problem));
}

/**
 * A call its 2026-07-28 server refused because it runs the tool only as an MCP task: nothing ran,
 * so the call is sent again as a task, its second attempt, and the turn's later calls of the tool
 * go straight to one.
 */
function taskAfterRefusal(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  input: CallToolInput,
): Promise<CallOutcome> {
  ctx.state.taskOnlyTools.add(tool.name);
  return runTask(ctx, request, tool, input).then((outcome) =>
    outcome.status === 'ok' ? { ...outcome, attempts: outcome.attempts + 1 } : outcome,
  );
}
