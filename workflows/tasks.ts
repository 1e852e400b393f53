/**
 * A call that runs as an MCP task: one short activity creates the task, the turn then waits on
 * durable timers and polls with short activities until the task ends, and fetches its result once.
 * Nothing runs and no connection is held between polls, and the task ID is in history from the
 * moment it exists: a worker that dies at any point costs one poll, never a second task.
 */
import { CancellationScope, isCancellation, proxyActivities, sleep } from '@temporalio/workflow';
import {
  taskIdProblem,
  type CallOutcome,
  type CallRequest,
  type CallToolInput,
  type TaskPoll,
  type TaskRef,
  type TaskStarted,
  type ToolInfo,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { TASK_REQUEST_TIMEOUT_MS, createTaskOptions, isSafeToRetry } from './activityOptions.js';
import { cancelledCallOutcome, errorOutcome, failureOutcome } from './failures.js';
import { detachedOutcome, detachedTask, transportOf, unknownTaskOutcome } from './detach.js';
import { moveOf, moveTurn, neverRan } from './placement.js';
import { answerTask, askForTask, needsInputOutcome, unansweredOutcome, type TaskAnswers } from './taskQuestions.js';
import { LONG_TASK_AFTER_MS, TTL_GRACE_MS, lostTrack, pollDelayMs, taskRequest } from './taskPolling.js';
import type { TurnContext } from './turnState.js';

/** Whether a call of `tool` runs as an MCP task: its server requires it, or allows it and the config prefers it. */
export function runsAsTask(tool: Pick<ToolInfo, 'taskSupport' | 'tasks'>): boolean {
  return tool.taskSupport === 'required' || (tool.taskSupport === 'optional' && tool.tasks === 'prefer');
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
      return await proxyActivities<Activities>(createTaskOptions(queue, tool, limits)).createTask(input);
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
