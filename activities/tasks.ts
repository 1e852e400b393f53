/**
 * The activities of a call that runs as an MCP task: each one short request, so nothing is held
 * between them. The workflow waits on durable timers in between; see `workflows/tasks.ts`.
 */
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { ProtocolError } from '@modelcontextprotocol/client';
import {
  DispatchError,
  JsonRpcResponseError,
  TaskCancelledError,
  toolDeclarationFromMcpTool,
  type TaskEnabledSession,
  type TaskView,
} from '@modelcontextprotocol/ext-tasks/client';
import {
  ProtocolDecodeError,
  taskId as asTaskId,
  type JsonValue,
  type RuntimeCodec,
} from '@modelcontextprotocol/ext-tasks/core';
import {
  FailureType,
  taskIdProblem,
  type CallOutcome,
  type CreateTaskInput,
  type TakeTaskInput,
  type TaskPoll,
  type TaskQuestions,
  type TaskRef,
  type TaskStarted,
  type UpdateTaskInput,
} from '../contract/index.js';
import { UnservedInputRequestError } from '../mcp/inputRequests.js';
import type { ManagedServer } from '../mcp/managedServer.js';
import { checkCall } from './callChecks.js';
import { callScrubber, resultOutcome } from './callTool.js';
import { currentTurnChain, currentTurnId, startHeartbeat } from './context.js';
import type { ActivityKit } from './deps.js';
import { scrubResult, toFailure } from './history.js';

/** JSON-RPC "invalid params": what a 2025-11-25 server answers for a task it does not know. */
const INVALID_PARAMS = -32602;

/** Runs `run` with the call's server, under the same checks as a call. */
export async function withTaskServer<T>(
  kit: ActivityKit,
  ref: Pick<TaskRef, 'sessionId' | 'firstRunId' | 'server' | 'tool' | 'name'>,
  scrub: ReturnType<typeof callScrubber>,
  run: (server: ManagedServer, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const { pool } = kit.deps;
  if (!pool.withServer)
    throw ApplicationFailure.create({
      type: FailureType.BadRequest,
      message: `${ref.name}: this worker runs no MCP tasks`,
      nonRetryable: true,
    });
  const signal = Context.current().cancellationSignal;
  return pool.withServer(
    ref.sessionId,
    ref.server,
    ref.tool,
    { turnId: currentTurnChain(ref.firstRunId), publicName: ref.name, signal, onServerSecrets: scrub.onServerSecrets },
    (server) => run(server, signal),
  );
}

/** An error of a task request as the failure the workflow reads (a JSON-RPC error answer as the SDK's own). */
export function taskFailure(
  err: unknown,
  ref: Pick<TaskRef, 'name' | 'server'>,
  scrub: (text: string) => string,
): unknown {
  if (Context.current().cancellationSignal.aborted) return new CancelledFailure('task request cancelled');
  if (err instanceof ApplicationFailure) return err;
  const cause =
    err instanceof JsonRpcResponseError
      ? new ProtocolError(err.code, err.message)
      : err instanceof DispatchError && err.cause instanceof Error
        ? err.cause
        : err;
  return toFailure(cause, ref, scrub);
}

/**
 * A 2026-07-28 task's result as the server stored it: the extension's own example leaves out the
 * `resultType` that ext-tasks' schema requires, and {@link toolResult} shapes what the model reads.
 */
const anyResult: RuntimeCodec<object> = {
  parse: (value) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? { success: true, value }
      : { success: false, error: new ProtocolDecodeError('the task result is not an object', {}) },
};

/** A finished task's result as a tool result; a result of another shape (input_required) has no content the model could read. */
export function toolResult(result: object): { content?: unknown; isError?: unknown; structuredContent?: unknown } {
  return 'content' in result
    ? result
    : { content: [{ type: 'text', text: 'the task ended without a tool result' }], isError: true };
}

/** The task as recorded, under `taskId` (already checked), never the ID the view itself names. */
function started(
  view: TaskView,
  taskId: string,
  serverInstance: string | undefined,
  questions: TaskQuestions,
): TaskStarted {
  return {
    kind: 'task',
    taskId,
    // A 2026-07-28 server's `null` TTL means the task is kept for good.
    ...(typeof view.retentionMs === 'number' ? { ttlMs: view.retentionMs } : {}),
    ...(view.suggestedPollIntervalMs !== undefined ? { pollIntervalMs: view.suggestedPollIntervalMs } : {}),
    status: view.status,
    ...(view.statusMessage !== undefined ? { statusMessage: view.statusMessage } : {}),
    ...(serverInstance !== undefined ? { serverInstance } : {}),
    ...questions,
  };
}

/**
 * A 2026-07-28 task's questions, when it waits for input: they come with its status (the
 * extension's `inputRequests`), scrubbed like a call's, and the turn asks a person and answers with
 * `updateTask`. A 2025-era task has none here: its questions come over `tasks/result` (`taskInput`).
 */
export function taskQuestions(view: TaskView, server: ManagedServer, scrub: (text: string) => string): TaskQuestions {
  if (view.status !== 'input_required' || server.era !== 'modern') return {};
  try {
    const needs = server.readTaskInput(view.raw.inputRequests);
    return {
      inputRequests: scrubResult(needs.requests, scrub),
      ...(Object.keys(needs.ownResponses).length > 0 ? { ownResponses: needs.ownResponses } : {}),
    };
  } catch (err) {
    if (err instanceof UnservedInputRequestError)
      return { inputRequests: [], refused: scrub(err.message).slice(0, 1000) };
    throw err;
  }
}

/** One `tasks/get` as the turn records it: status, message, interval, and a 2026-07-28 task's questions. */
export function taskPoll(view: TaskView, server: ManagedServer, scrub: (text: string) => string): TaskPoll {
  return {
    status: view.status,
    ...(view.statusMessage !== undefined ? { statusMessage: scrub(view.statusMessage).slice(0, 1000) } : {}),
    ...(view.suggestedPollIntervalMs !== undefined ? { pollIntervalMs: view.suggestedPollIntervalMs } : {}),
    ...taskQuestions(view, server, scrub),
  };
}

/**
 * `createTask`: sends the call as a task (`tools/call` with `task`) and returns the task the server
 * made, or the call's outcome when the server answered at once (a tool whose task support is optional).
 * Never retried: a second attempt could create a second task.
 */
export function createTaskActivity(kit: ActivityKit): (input: CreateTaskInput) => Promise<TaskStarted | CallOutcome> {
  return async function createTask(input) {
    const ctx = Context.current();
    const startedAt = new Date();
    const stop = startHeartbeat(ctx);
    const scrubber = callScrubber(kit.deps.scrub);
    try {
      await checkCall(kit, input, currentTurnId());
      return await withTaskServer(kit, input, scrubber, (server, signal) => {
        return server.withTasks(async (session, listed, inner) => {
          const tool = listed(input.tool);
          const execution = await session.callTool(input.tool, input.arguments as Record<string, JsonValue>, {
            // A 2025-era call asks for a task; a 2026-07-28 server decides itself (the call declares
            // the extension), and its answer at once is the outcome.
            task: { preference: server.era === 'modern' ? 'allow' : 'require' },
            signal: inner,
            requestTimeoutMs: input.requestTimeoutMs,
            ...(tool ? { declaration: toolDeclarationFromMcpTool(tool) } : {}),
          });
          const instance = server.remote ? undefined : server.instance;
          if (execution.kind === 'immediate') {
            const outcome = await execution.result();
            if (outcome.status !== 'completed')
              throw new Error(outcome.status === 'failed' ? outcome.error.message : 'the call was cancelled');
            return resultOutcome(input.name, toolResult(outcome.result), scrubber.scrub, {
              startedAt: startedAt.toISOString(),
              durationMs: Date.now() - startedAt.getTime(),
              attempts: ctx.info.attempt,
            });
          }
          const taskId = execution.handle.taskId;
          // Released at once: the turn polls with activities of its own, from any worker.
          await execution.detach();
          const badId = taskIdProblem(taskId);
          if (badId !== undefined) {
            // An ID that cannot be recorded cannot be followed or taken up by any turn: the task
            // would run unwatched, so it is cancelled while its ID is still in hand.
            const cancelled = await session
              .task(taskId, { requestTimeoutMs: input.requestTimeoutMs })
              .cancel(inner)
              .then(
                () => true,
                () => false,
              );
            const after = cancelled
              ? 'the task was cancelled on the server'
              : 'cancelling the task failed, so it may still run';
            throw ApplicationFailure.create({
              type: FailureType.BadRequest,
              message: `${input.name}: the server gave its task an ID that cannot be recorded (${badId}); ${after}, and it may have had an effect`,
              nonRetryable: true,
            });
          }
          let view: TaskView;
          try {
            view = await session.task(taskId).snapshot(inner);
          } catch {
            // The task exists: its ID is what must be recorded, whatever its first status said.
            return {
              kind: 'task',
              taskId,
              status: 'working',
              ...(instance !== undefined ? { serverInstance: instance } : {}),
            };
          }
          return started(view, taskId, instance, taskQuestions(view, server, scrubber.scrub));
        }, signal);
      });
    } catch (err) {
      throw taskFailure(err, input, scrubber.scrub);
    } finally {
      stop();
    }
  };
}

/**
 * `takeTask`: takes up a task an earlier call left running. The call is checked as `callTool`
 * checks it (the operator's rules, the PreToolUse seal), then one `tasks/get` reads the task: what
 * the turn records as its start, with the server's process run for a stdio server, so a restart
 * later is noticed as a lost task. A task the server does not know is `unknown`; nothing is created.
 */
export function takeTaskActivity(kit: ActivityKit): (input: TakeTaskInput) => Promise<TaskStarted | TaskPoll> {
  return async function takeTask(input) {
    const scrubber = callScrubber(kit.deps.scrub);
    try {
      await checkCall(kit, input, currentTurnId());
      return await withTaskServer(kit, input, scrubber, (server, signal) =>
        server.withTasks(async (session, _listed, inner) => {
          try {
            const view = await session
              .task(asTaskId(input.taskId), { requestTimeoutMs: input.requestTimeoutMs })
              .snapshot(inner);
            const task = started(
              view,
              input.taskId,
              server.remote ? undefined : server.instance,
              taskQuestions(view, server, scrubber.scrub),
            );
            // A server's own words: kept only as a time, bounded, since they go into history.
            const createdAt =
              typeof view.createdAt === 'string' &&
              view.createdAt.length <= 64 &&
              Number.isFinite(Date.parse(view.createdAt))
                ? view.createdAt
                : undefined;
            return {
              ...task,
              ...(task.statusMessage !== undefined
                ? { statusMessage: scrubber.scrub(task.statusMessage).slice(0, 1000) }
                : {}),
              ...(createdAt !== undefined ? { createdAt } : {}),
            };
          } catch (err) {
            if (err instanceof JsonRpcResponseError && err.code === INVALID_PARAMS)
              return { status: 'unknown' as const, statusMessage: scrubber.scrub(err.message).slice(0, 1000) };
            throw err;
          }
        }, signal),
      );
    } catch (err) {
      throw taskFailure(err, input, scrubber.scrub);
    }
  };
}

/** `pollTask`: one `tasks/get`. A task the server does not know, or whose stdio process is gone, is reported as such. */
export function pollTaskActivity(kit: ActivityKit): (input: TaskRef) => Promise<TaskPoll> {
  return async function pollTask(input) {
    const scrubber = callScrubber(kit.deps.scrub);
    try {
      return await withTaskServer(kit, input, scrubber, (server, signal) => {
        if (input.serverInstance !== undefined && input.serverInstance !== server.instance)
          return Promise.resolve<TaskPoll>({ status: 'lost' });
        return server.withTasks(async (session, _listed, inner) => {
          try {
            return taskPoll(
              await session.task(asTaskId(input.taskId), { requestTimeoutMs: input.requestTimeoutMs }).snapshot(inner),
              server,
              scrubber.scrub,
            );
          } catch (err) {
            if (err instanceof JsonRpcResponseError && err.code === INVALID_PARAMS)
              return { status: 'unknown', statusMessage: scrubber.scrub(err.message).slice(0, 1000) };
            throw err;
          }
        }, signal);
      });
    } catch (err) {
      throw taskFailure(err, input, scrubber.scrub);
    }
  };
}

/** `taskResult`: the finished task's result (`tasks/result`), as the call's outcome. */
export function taskResultActivity(kit: ActivityKit): (input: TaskRef) => Promise<CallOutcome> {
  return async function taskResult(input) {
    const ctx = Context.current();
    const startedAt = new Date();
    const scrubber = callScrubber(kit.deps.scrub);
    const timing = () => ({
      startedAt: startedAt.toISOString(),
      durationMs: Date.now() - startedAt.getTime(),
      attempts: ctx.info.attempt,
    });
    try {
      return await withTaskServer(kit, input, scrubber, (server, signal) =>
        server.withTasks(async (session, _listed, inner) => {
          const outcome = await session
            .task(asTaskId(input.taskId), { requestTimeoutMs: input.requestTimeoutMs })
            .result({ signal: inner, ...(server.era === 'modern' ? { resultCodec: anyResult } : {}) });
          if (outcome.status === 'completed')
            return resultOutcome(input.name, toolResult(outcome.result), scrubber.scrub, timing());
          if (outcome.status === 'cancelled')
            return {
              status: 'error',
              errorKind: 'cancelled',
              errorMessage: `${input.name}: task ${input.taskId} was cancelled by its server`,
              content: [],
              isError: false,
              ...timing(),
            };
          const text = `${input.name}: task ${input.taskId} failed: ${scrubber.scrub(outcome.error.message).slice(0, 2000)}`;
          return { status: 'ok', content: [{ type: 'text', text }], isError: true, ...timing() };
        }, signal),
      );
    } catch (err) {
      if (err instanceof TaskCancelledError)
        return {
          status: 'error',
          errorKind: 'cancelled',
          errorMessage: `${input.name}: task ${input.taskId} was cancelled by its server`,
          content: [],
          isError: false,
          ...timing(),
        };
      throw taskFailure(err, input, scrubber.scrub);
    }
  };
}

/** `cancelTask`: `tasks/cancel`. A task that already ended or is unknown counts as cancelled. */
export function cancelTaskActivity(kit: ActivityKit): (input: TaskRef) => Promise<void> {
  return async function cancelTask(input) {
    await sendToTask(kit, input, (task, signal) => task.cancel(signal));
  };
}

/**
 * `updateTask`: a 2026-07-28 task's answers (`tasks/update` with `inputResponses` by the server's
 * key). Sent again after a lost answer, it says the same; a task the server no longer knows is
 * left to the next poll, which tells.
 */
export function updateTaskActivity(kit: ActivityKit): (input: UpdateTaskInput) => Promise<void> {
  return async function updateTask(input) {
    await sendToTask(kit, input, async (task, signal) => {
      try {
        await task.updateJson(input.inputResponses, signal);
      } catch (err) {
        if (err instanceof ProtocolDecodeError)
          throw ApplicationFailure.create({
            type: FailureType.BadRequest,
            message: `${input.name}: the answers to task ${input.taskId} cannot be sent: ${err.message}`,
            nonRetryable: true,
          });
        throw err;
      }
    });
  };
}

/**
 * One request about an existing task whose answer is only its acceptance. A task of an earlier
 * process of a stdio server is gone with it, and one the server does not know (`-32602`) has ended
 * or expired: both need nothing sent, and the next poll tells what became of it.
 */
async function sendToTask(
  kit: ActivityKit,
  input: TaskRef,
  send: (task: ReturnType<TaskEnabledSession['task']>, signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  const scrubber = callScrubber(kit.deps.scrub);
  try {
    await withTaskServer(kit, input, scrubber, (server, signal) => {
      if (input.serverInstance !== undefined && input.serverInstance !== server.instance) return Promise.resolve();
      return server.withTasks(async (session, _listed, inner) => {
        try {
          await send(session.task(asTaskId(input.taskId), { requestTimeoutMs: input.requestTimeoutMs }), inner);
        } catch (err) {
          if (err instanceof JsonRpcResponseError && err.code === INVALID_PARAMS) return;
          throw err;
        }
      }, signal);
    });
  } catch (err) {
    throw taskFailure(err, input, scrubber.scrub);
  }
}
