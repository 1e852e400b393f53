/**
 * A call that runs as an MCP task: one short activity creates the task, the turn then waits on
 * durable timers and polls with short activities until the task ends, and fetches its result once.
 * Nothing runs and no connection is held between polls, and the task ID is in history from the
 * moment it exists: a worker that dies at any point costs one poll, never a second task.
 */
import { CancellationScope, isCancellation, proxyActivities, sleep } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/common';
import {
  FailureType,
  LEGACY_INPUT_GRACE_MS,
  taskIdProblem,
  type CallOutcome,
  type CallRequest,
  type CallToolInput,
  type InputAnswer,
  type TaskPoll,
  type TaskRef,
  type TaskStarted,
  type ToolInfo,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { callOptions, callTimeoutMs, isSafeToRetry, type Limits } from './activityOptions.js';
import { cancelledCallOutcome, errorOutcome, failureOutcome, isFailureType, messageOf } from './failures.js';
import { detachedOutcome, detachedTask, transportOf, unknownTaskOutcome } from './detach.js';
import { waitForAnswers, type InputRounds } from './inputs.js';
import { moveOf, moveTurn, neverRan } from './placement.js';
import type { TurnContext } from './turnState.js';

/** The shortest wait between polls, whatever the server suggests. */
export const MIN_POLL_MS = 1000;
/** The longest wait between polls: a task that ends is noticed within this. */
export const MAX_POLL_MS = 5 * 60_000;
/** Polls at the server's interval before the waits grow. */
export const STEADY_POLLS = 10;
/** How much each later wait grows, so a task of hours costs tens of polls, not thousands. */
export const POLL_BACKOFF = 1.5;
/** How long past its TTL a task is still polled before it is taken for expired (clocks differ). */
export const TTL_GRACE_MS = 60_000;
/**
 * The start-to-close of a poll, result or cancel: short, so a worker that dies during one is
 * noticed soon (these activities do not heartbeat).
 */
export const TASK_REQUEST_TIMEOUT_MS = 30_000;
/** The durable wait after a poll, result or cancel request failed in place; doubled each time. */
export const TASK_RETRY_BASE_MS = 5000;
/** Poll, result or cancel requests that failed in a row before the turn gives up on the task. */
export const MAX_TASK_REQUEST_FAILURES = 5;

/** Whether a call of `tool` runs as an MCP task: its server requires it, or allows it and the config prefers it. */
export function runsAsTask(tool: Pick<ToolInfo, 'taskSupport' | 'tasks'>): boolean {
  return tool.taskSupport === 'required' || (tool.taskSupport === 'optional' && tool.tasks === 'prefer');
}

/** A task older than this is polled less often: see {@link pollDelayMs}. */
export const LONG_TASK_AFTER_MS = 24 * 60 * 60_000;
/** The share of a long task's age each wait lasts at least, so its polls grow with the log of its age. */
export const LONG_TASK_WAIT_SHARE = 0.01;
/** The longest wait between polls of a long task. */
export const MAX_LONG_TASK_WAIT_MS = 12 * 60 * 60_000;

/**
 * The wait before poll number `polls + 1` (`polls` done so far): the server's suggested interval
 * (1 s if it gave none) kept between {@link MIN_POLL_MS} and {@link MAX_POLL_MS}, growing by
 * {@link POLL_BACKOFF} per poll after {@link STEADY_POLLS}. A task older than
 * {@link LONG_TASK_AFTER_MS} (`ageMs`) waits at least {@link LONG_TASK_WAIT_SHARE} of its age (at
 * most {@link MAX_LONG_TASK_WAIT_MS}, and at most half the TTL it has left), so the turn's history
 * grows with the log of the task's age instead of with its age.
 */
export function pollDelayMs(suggestedMs: number | undefined, polls: number, ageMs = 0, ttlMs?: number | null): number {
  const base = Math.min(Math.max(suggestedMs ?? MIN_POLL_MS, MIN_POLL_MS), MAX_POLL_MS);
  const grown = polls < STEADY_POLLS ? base : base * POLL_BACKOFF ** (polls - STEADY_POLLS + 1);
  const wait = Math.min(grown, MAX_POLL_MS);
  if (ageMs < LONG_TASK_AFTER_MS) return Math.round(wait);
  const ttlLeft = typeof ttlMs === 'number' ? Math.max(ttlMs - ageMs, 0) / 2 : Infinity;
  return Math.round(Math.max(wait, Math.min(ageMs * LONG_TASK_WAIT_SHARE, MAX_LONG_TASK_WAIT_MS, ttlLeft)));
}

/** What the model reads when its task ends without a result. */
export function endedTaskOutcome(
  name: string,
  task: Pick<TaskStarted, 'taskId' | 'ttlMs'>,
  poll: TaskPoll,
): CallOutcome {
  if (poll.status === 'lost') {
    return errorOutcome(
      'unknown_result',
      `${name}: task ${task.taskId} was lost: the server process that ran it is gone (a stdio server's tasks end with its process); it may have had an effect`,
    );
  }
  const ttl = typeof task.ttlMs === 'number' ? ` (it was kept for ${Math.round(task.ttlMs / 1000)} s)` : '';
  return errorOutcome(
    'timeout',
    `${name}: task ${task.taskId} expired before it finished: the server no longer knows it${ttl}${poll.statusMessage ? `: ${poll.statusMessage}` : ''}`,
  );
}

/**
 * What the model read when its task stopped to ask for input and was cancelled: turns recorded
 * before 2025-era task questions reached a person, or before 2026-07-28 ones did (`taskInput`
 * then answered `cannotAsk`). Kept so that those turns replay as they ran.
 */
export function needsInputOutcome(
  name: string,
  task: Pick<TaskStarted, 'taskId'>,
  poll: Pick<TaskPoll, 'statusMessage'>,
): CallOutcome {
  return errorOutcome(
    'unknown_result',
    `${name}: task ${task.taskId} asked for input${poll.statusMessage ? ` (${JSON.stringify(poll.statusMessage.slice(0, 300))})` : ''}, which durable-mcp cannot yet give to a task; the task was cancelled, and it may have had an effect`,
  );
}

/**
 * What the model reads when its task waited for input and no answer reached it in time: within
 * the legacy limit while `taskInput` held a 2025-era task's request, or within the input limit
 * while the turn waited for a 2026-07-28 task's answers.
 */
export function unansweredOutcome(
  name: string,
  task: Pick<TaskStarted, 'taskId'>,
  limitMs: number,
  setting = 'DMCP_LEGACY_INPUT_TIMEOUT',
): CallOutcome {
  return errorOutcome(
    'unknown_result',
    `${name}: task ${task.taskId} asked for input and got no answer within ${Math.round(limitMs / 1000)} s (${setting}); it was cancelled if the server still knew it, and it may have had an effect: check before calling again`,
  );
}

/** What the model reads when its task asked what no person can answer here (sampling). */
export function refusedInputOutcome(name: string, task: Pick<TaskStarted, 'taskId'>, why: string): CallOutcome {
  return errorOutcome(
    'bad_request',
    `${name}: task ${task.taskId} asked for input that cannot be given (${why}); the task was cancelled, and it may have had an effect`,
  );
}

/** Where a 2026-07-28 task is in its questions: the rounds asked, and the keys the server was sent answers for. */
interface TaskAnswers {
  rounds: InputRounds;
  sent: Set<string>;
}

/**
 * A 2026-07-28 task waits for input: its questions came with its status. Each one not answered yet
 * becomes an input request of the call (`<callId>:<round>:<key>`, as a 2026-07-28 call's), and the
 * turn waits for the answers on a durable timer with nothing running: the server holds the task,
 * so a worker lost meanwhile loses nothing. Then one short `updateTask` sends them (`tasks/update`)
 * and the turn goes back to polling. Returns the call's outcome when it ends here instead.
 */
async function answerTask(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  task: TaskStarted,
  ref: TaskRef,
  status: TaskPoll,
  answers: TaskAnswers,
): Promise<CallOutcome | undefined> {
  const { limits } = ctx;
  const cancelTask = () =>
    CancellationScope.nonCancellable(() =>
      taskRequest(ctx, tool, `cancel task of ${tool.name}`, (a) => a.cancelTask(ref)),
    ).catch(() => undefined);
  if (status.refused !== undefined) {
    await cancelTask();
    return refusedInputOutcome(tool.name, task, status.refused);
  }
  // Still waiting after its questions went unanswered (the server was told `cancel`): as for a
  // 2025-era task, it is cancelled.
  if (answers.rounds.timedOut) {
    await cancelTask();
    return unansweredOutcome(tool.name, task, limits.inputTimeoutMs, 'DMCP_INPUT_TIMEOUT');
  }
  const fresh = (status.inputRequests ?? []).filter((r) => !answers.sent.has(r.key));
  const own = Object.entries(status.ownResponses ?? {}).filter(([key]) => !answers.sent.has(key));
  // Answered already: the server has not gone on yet, and the next poll tells.
  if (fresh.length === 0 && own.length === 0) return undefined;
  let given: Record<string, InputAnswer> = {};
  if (fresh.length > 0) {
    const reply = await waitForAnswers(
      ctx,
      request,
      { status: 'input_required', requests: fresh },
      answers.rounds,
      CancellationScope.current(),
    );
    if ('status' in reply) {
      await cancelTask();
      return reply;
    }
    given = reply.inputResponses;
  }
  const inputResponses = { ...Object.fromEntries(own), ...given };
  const sent = await taskRequest(ctx, tool, `answers to the task of ${tool.name}`, (a) =>
    a.updateTask({ ...ref, inputResponses }),
  );
  if (sent !== undefined && 'content' in sent) {
    if (sent.errorKind !== 'bad_request') return lostTrack(ctx, tool, task, ref, sent);
    // The answers cannot be sent: the task would wait for them until its TTL.
    await cancelTask();
    return sent;
  }
  for (const key of Object.keys(inputResponses)) answers.sent.add(key);
  return undefined;
}

/**
 * Options of `taskInput`: it holds `tasks/result` while a person answers, at most the turn's
 * legacy limit, heartbeating so a lost worker is noticed. Run once: the turn decides what a
 * failure means (the task lives on the server, which asks again).
 */
export function taskInputOptions(
  queue: string,
  tool: Pick<ToolInfo, 'name'>,
  limits: Pick<Limits, 'legacyInputTimeoutMs' | 'heartbeatTimeoutMs' | 'scheduleToStartMs'>,
): ActivityOptions {
  return {
    taskQueue: queue,
    summary: `questions of the task of ${tool.name}`,
    startToCloseTimeout: limits.legacyInputTimeoutMs + LEGACY_INPUT_GRACE_MS + TASK_REQUEST_TIMEOUT_MS,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    scheduleToStartTimeout: limits.scheduleToStartMs,
    retry: { maximumAttempts: 1 },
  };
}

/**
 * A task waits for input: `taskInput` holds its `tasks/result`, over which the server asks, and
 * the turn records each question as an input request of the call (`<callId>:<n>:elicitation`),
 * answered like any. Returns the task's result, or its status once it went on. A worker lost
 * meanwhile takes the question with it: the turn moves, polls again, and asks again if the task
 * still waits (the server sends its question again, or the task goes on without an answer).
 */
async function askForTask(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  ref: TaskRef,
): Promise<TaskPoll | CallOutcome> {
  const { state, limits } = ctx;
  for (let failures = 1; ; failures += 1) {
    const queue = state.workerQueue;
    const scope = new CancellationScope();
    state.askingAttempts.set(request.id, { scope, queue, tool: tool.name });
    try {
      return await scope.run(() =>
        proxyActivities<Activities>(taskInputOptions(queue, tool, limits)).taskInput({
          ...ref,
          waitMs: limits.legacyInputTimeoutMs,
        }),
      );
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (isFailureType(err, FailureType.BadRequest)) return errorOutcome('bad_request', messageOf(err));
      if (failures >= MAX_TASK_REQUEST_FAILURES)
        return errorOutcome(
          'transport',
          `asking the questions of the task failed ${failures} times: ${messageOf(err)}`,
        );
      const move = moveOf(err);
      // Moved or not, the poll below says whether the task still waits for its questions.
      if (move) await moveTurn(ctx, queue, move);
      else {
        await sleep(Math.min(TASK_RETRY_BASE_MS * 2 ** (failures - 1), MAX_POLL_MS));
      }
    } finally {
      state.askingAttempts.delete(request.id);
    }
    const polled = await taskRequest(ctx, tool, `poll task of ${tool.name}`, (a) => a.pollTask(ref));
    if ('content' in polled || polled.status !== 'input_required') return polled;
  }
}

/** Options of the short task activities (poll, result, cancel): read-only, so retried. */
function taskRequestOptions(queue: string, tool: ToolInfo, limits: Limits, summary: string): ActivityOptions {
  return {
    taskQueue: queue,
    summary,
    startToCloseTimeout: Math.min(callTimeoutMs(tool, limits), TASK_REQUEST_TIMEOUT_MS),
    scheduleToStartTimeout: limits.scheduleToStartMs,
    retry: {
      maximumAttempts: 3,
      initialInterval: '1s',
      backoffCoefficient: 2,
      nonRetryableErrorTypes: [FailureType.BadRequest, FailureType.ServerUnavailable],
    },
  };
}

/**
 * Runs one call as an MCP task, from creation to result; with `takeUp`, takes up that existing task
 * instead of creating one. Cancelling the call (or the turn) cancels the task on its server before
 * the cancellation is reported; detaching it (`endTurn` with `detach`) leaves the task running.
 */
export async function runTask(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  input: CallToolInput,
  takeUp?: string,
): Promise<CallOutcome> {
  const { state } = ctx;
  const scope = new CancellationScope();
  state.running.set(request.id, scope);
  let task: TaskStarted | undefined;
  const startedAt = Date.now();
  const detached = (t: TaskStarted) =>
    detachedOutcome(
      tool.name,
      detachedTask(ctx, tool, t, state.followedTasks.get(request.id)?.createdAtMs ?? startedAt),
      ctx.input.endSession === true || state.endSession,
      startedAt,
      Date.now(),
    );
  const refOf = (t: TaskStarted): TaskRef => ({
    sessionId: input.sessionId,
    firstRunId: input.firstRunId,
    callId: input.callId,
    name: input.name,
    server: input.server,
    tool: input.tool,
    taskId: t.taskId,
    requestTimeoutMs: Math.min(input.requestTimeoutMs, TASK_REQUEST_TIMEOUT_MS - 1000),
    ...(t.serverInstance !== undefined ? { serverInstance: t.serverInstance } : {}),
  });
  try {
    return await scope.run(async () => {
      const created =
        takeUp === undefined ? await createOnce(ctx, tool, input) : await takeOnce(ctx, tool, input, takeUp);
      if (!('kind' in created)) return created;
      task = created;
      const serverCreatedAt = created.createdAt !== undefined ? Date.parse(created.createdAt) : NaN;
      state.followedTasks.set(request.id, {
        createdAtMs: Number.isFinite(serverCreatedAt) ? serverCreatedAt : Date.now(),
      });
      // Set only behind the detach patch: a turn ended that way answers a task created after the end at once.
      if (state.detachTasks) return detached(task);
      const outcome = await pollUntilDone(ctx, request, tool, task, refOf(task));
      // The call took as long as its task, not as long as the request that fetched the result.
      return outcome.status === 'ok'
        ? { ...outcome, startedAt: new Date(startedAt).toISOString(), durationMs: Date.now() - startedAt }
        : outcome;
    });
  } catch (err) {
    if (!isCancellation(err)) throw err;
    if (task && state.detached.has(request.id) && !CancellationScope.current().consideredCancelled)
      return detached(task);
    if (task) {
      const ref = refOf(task);
      state.details.callWaitsOnTask(request.id, { taskId: task.taskId, status: 'cancelling' });
      // Not cancellable itself: the cancellation that brought us here must reach the server.
      await CancellationScope.nonCancellable(() =>
        taskRequest(ctx, tool, `cancel task of ${tool.name}`, (a) => a.cancelTask(ref)),
      ).catch(() => undefined);
    }
    if (CancellationScope.current().consideredCancelled) throw err;
    return task
      ? errorOutcome(
          'cancelled',
          `${tool.name}: the call was cancelled; its task ${task.taskId} was cancelled on the server (it may have had an effect)`,
        )
      : cancelledCallOutcome();
  } finally {
    state.details.callWaitsOnTask(request.id, undefined);
    state.running.delete(request.id);
    state.followedTasks.delete(request.id);
    state.detached.delete(request.id);
  }
}

/** Creates the task: once, never retried; a pinned worker that never took it may be replaced once. */
async function createOnce(ctx: TurnContext, tool: ToolInfo, input: CallToolInput): Promise<TaskStarted | CallOutcome> {
  const { state, limits } = ctx;
  for (let moved = false; ; moved = true) {
    const queue = state.workerQueue;
    state.details.callAttempt(input.callId);
    try {
      const options = {
        ...callOptions(queue, tool, limits, false),
        summary: `${tool.name} (create task)`,
        retry: { maximumAttempts: 1 },
      };
      return await proxyActivities<Activities>(options).createTask(input);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const move = moveOf(err);
      if (!neverRan(move) || moved) return failureOutcome(err, isSafeToRetry(tool));
      const problem = await moveTurn(ctx, queue, move);
      if (problem)
        return errorOutcome(
          'transport',
          `the servers could not be reconciled again: ${problem} (the call did not run)`,
        );
    }
  }
}

/**
 * Takes up a task an earlier call left running: `takeTask` checks the call as `callTool` would and
 * reads the task once. A task the server does not know is an outcome that says so; nothing is created.
 */
async function takeOnce(
  ctx: TurnContext,
  tool: ToolInfo,
  input: CallToolInput,
  taskId: string,
): Promise<TaskStarted | CallOutcome> {
  const problem = taskIdProblem(taskId);
  if (problem) return errorOutcome('bad_request', `${tool.name}: ${problem}`);
  // A tool this turn found to run only as a task (a refused call) has tasks too.
  if (!runsAsTask(tool) && !ctx.state.taskOnlyTools.has(tool.name)) {
    const why =
      tool.taskSupport === undefined
        ? 'its server lists no task support for it'
        : `its server runs it as a task only when asked, and the entry of server "${tool.server}" does not say "tasks": "prefer"`;
    return errorOutcome(
      'bad_request',
      `${tool.name}: its calls do not run as MCP tasks here (${why}), so it has no task to take up (the call did not run)`,
    );
  }
  ctx.state.details.callAttempt(input.callId);
  const taken = await taskRequest(ctx, tool, `${tool.name} (take up task)`, (a) => a.takeTask({ ...input, taskId }));
  if ('kind' in taken || 'content' in taken) return taken;
  const remote = transportOf(ctx, tool.server) !== 'stdio';
  return unknownTaskOutcome(tool.name, tool.server, remote, taskId, taken.statusMessage);
}

async function pollUntilDone(
  ctx: TurnContext,
  request: CallRequest,
  tool: ToolInfo,
  task: TaskStarted,
  ref: TaskRef,
): Promise<CallOutcome> {
  const { state } = ctx;
  const createdAt = Date.now();
  const {
    kind: _kind,
    taskId: _taskId,
    ttlMs: _ttlMs,
    serverInstance: _instance,
    pollIntervalMs: _interval,
    ...first
  } = task;
  let status: TaskPoll = first;
  let interval = task.pollIntervalMs;
  const answers: TaskAnswers = { rounds: { round: 0, timedOut: false }, sent: new Set() };
  for (let polls = 0; status.status === 'working' || status.status === 'input_required'; polls += 1) {
    state.details.callWaitsOnTask(request.id, { taskId: task.taskId, status: status.status });
    // A task that went on after its questions went unanswered may ask again later, with the full limit.
    if (status.status !== 'input_required') answers.rounds.timedOut = false;
    // A 2026-07-28 task's questions came with its status; after the answers, the turn polls on.
    if (status.status === 'input_required' && status.inputRequests !== undefined) {
      const ended = await answerTask(ctx, request, tool, task, ref, status, answers);
      if (ended) return ended;
    } else if (status.status === 'input_required') {
      const asked = await askForTask(ctx, request, tool, ref);
      if ('content' in asked)
        return asked.status === 'error' && asked.errorKind === 'transport'
          ? lostTrack(ctx, tool, task, ref, asked)
          : asked;
      // A 2026-07-28 task whose questions were not read with its status (a turn that polled it
      // before they were): taskInput read them, and they are asked above.
      if (asked.status === 'input_required' && asked.inputRequests !== undefined) {
        status = asked;
        continue;
      }
      if (asked.status === 'input_required') {
        await CancellationScope.nonCancellable(() =>
          taskRequest(ctx, tool, `cancel task of ${tool.name}`, (a) => a.cancelTask(ref)),
        ).catch(() => undefined);
        return asked.cannotAsk
          ? needsInputOutcome(tool.name, task, status)
          : unansweredOutcome(tool.name, task, ctx.limits.legacyInputTimeoutMs);
      }
      status = asked;
      interval = asked.pollIntervalMs ?? interval;
      continue;
    }
    if (typeof task.ttlMs === 'number' && Date.now() - createdAt > task.ttlMs + TTL_GRACE_MS) {
      await CancellationScope.nonCancellable(() =>
        taskRequest(ctx, tool, `cancel task of ${tool.name}`, (a) => a.cancelTask(ref)),
      ).catch(() => undefined);
      return endedTaskOutcome(tool.name, task, {
        status: 'unknown',
        statusMessage: `its TTL passed while it was still ${status.status}`,
      });
    }
    // Past a day the waits grow with the task's age.
    const ageMs = Date.now() - createdAt;
    const long = ageMs >= LONG_TASK_AFTER_MS;
    await sleep(pollDelayMs(interval, polls, long ? ageMs : 0, task.ttlMs));
    const polled = await taskRequest(ctx, tool, `poll task of ${tool.name}`, (a) => a.pollTask(ref));
    if ('content' in polled) return lostTrack(ctx, tool, task, ref, polled);
    status = polled;
    interval = polled.pollIntervalMs ?? interval;
  }
  if (status.status === 'lost' || status.status === 'unknown') return endedTaskOutcome(tool.name, task, status);
  state.details.callWaitsOnTask(request.id, { taskId: task.taskId, status: status.status });
  const result = await taskRequest(ctx, tool, `${tool.name} (task result)`, (a) => a.taskResult(ref));
  return result.status === 'error' && result.errorKind === 'transport'
    ? lostTrack(ctx, tool, task, ref, result)
    : result;
}

/**
 * The turn could not follow its task any more (polls or the result kept failing): the task may
 * still run, or have had its effect. It is cancelled if the server still knows it, and the model
 * reads that the result is unknown, naming the task, rather than a transport error it might take
 * as "nothing happened" and call again.
 */
async function lostTrack(
  ctx: TurnContext,
  tool: ToolInfo,
  task: TaskStarted,
  ref: TaskRef,
  failed: CallOutcome,
): Promise<CallOutcome> {
  if (failed.errorKind === 'bad_request') return failed;
  await CancellationScope.nonCancellable(() =>
    taskRequest(ctx, tool, `cancel task of ${tool.name}`, (a) => a.cancelTask(ref)),
  ).catch(() => undefined);
  return lostTrackOutcome(tool.name, task, failed.errorMessage ?? 'it failed');
}

/** What the model reads when the turn lost track of its task (see {@link lostTrack}). */
export function lostTrackOutcome(name: string, task: Pick<TaskStarted, 'taskId'>, why: string): CallOutcome {
  return errorOutcome(
    'unknown_result',
    `${name}: task ${task.taskId} could not be followed (${why}); it was cancelled if the server still knew it, and it may have had an effect: check before calling again`,
  );
}

/**
 * One short task activity on the worker holding the session's servers. A worker that is gone
 * (never took it) or servers that are gone move the turn: the servers are reconciled again, on the
 * shared queue or the same worker, and the request is sent from there; a remote server's task is
 * still there. Another failure is waited out on a durable timer and the request sent again.
 * Requests that keep failing end the call with what went wrong.
 */
async function taskRequest<T>(
  ctx: TurnContext,
  tool: ToolInfo,
  summary: string,
  run: (a: Activities) => Promise<T>,
): Promise<T | CallOutcome> {
  const { state, limits } = ctx;
  for (let failures = 1; ; failures += 1) {
    const queue = state.workerQueue;
    try {
      return await run(proxyActivities<Activities>(taskRequestOptions(queue, tool, limits, summary)));
    } catch (err) {
      if (isCancellation(err)) throw err;
      const move = moveOf(err);
      if (isFailureType(err, FailureType.BadRequest)) return errorOutcome('bad_request', messageOf(err));
      if (failures >= MAX_TASK_REQUEST_FAILURES)
        return errorOutcome('transport', `${summary} failed ${failures} times: ${messageOf(err)}`);
      if (!neverRan(move)) {
        // A passing failure (the server's network, a restart): the task is still there, so the
        // turn asks again after a durable wait instead of giving up on a task of hours.
        await sleep(Math.min(TASK_RETRY_BASE_MS * 2 ** (failures - 1), MAX_POLL_MS));
        continue;
      }
      await moveTurn(ctx, queue, move);
    }
  }
}
