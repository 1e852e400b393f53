/**
 * The questions of an MCP task: a 2026-07-28 task's come with its status and are answered with
 * `tasks/update`; a 2025-era task's are asked over its `tasks/result`, which `taskInput` holds. Either
 * way each question becomes an input request of the call, answered like any.
 */
import { CancellationScope, isCancellation, proxyActivities, sleep } from '@temporalio/workflow';
import {
  FailureType,
  type CallOutcome,
  type CallRequest,
  type InputAnswer,
  type TaskPoll,
  type TaskRef,
  type TaskStarted,
  type ToolInfo,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { taskInputOptions } from './activityOptions.js';
import { errorOutcome, isFailureType, messageOf } from './failures.js';
import { waitForAnswers, type InputRounds } from './inputs.js';
import { moveOf, moveTurn } from './placement.js';
import { MAX_POLL_MS, MAX_TASK_REQUEST_FAILURES, TASK_RETRY_BASE_MS, lostTrack, taskRequest } from './taskPolling.js';
import type { TurnContext } from './turnState.js';

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
export interface TaskAnswers {
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
export async function answerTask(
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
 * A task waits for input: `taskInput` holds its `tasks/result`, over which the server asks, and
 * the turn records each question as an input request of the call (`<callId>:<n>:elicitation`),
 * answered like any. Returns the task's result, or its status once it went on. A worker lost
 * meanwhile takes the question with it: the turn moves, polls again, and asks again if the task
 * still waits (the server sends its question again, or the task goes on without an answer).
 */
export async function askForTask(
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
