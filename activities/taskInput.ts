/**
 * A 2025-era task that waits for input (`input_required`): its questions come only over
 * `tasks/result`, so this activity holds that request while a person answers through the turn, as
 * a call's mid-call question is answered (see `legacyInput.ts`). Once the task goes on it lets go,
 * and the turn polls again from durable timers: nothing is held longer than the turn's legacy limit.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { taskId as asTaskId } from '@modelcontextprotocol/ext-tasks/core';
import type { CallOutcome, TaskInputRef, TaskPoll } from '../contract/index.js';
import type { LegacyInputAsker } from '../mcp/legacyInputs.js';
import type { ManagedServer } from '../mcp/managedServer.js';
import { callScrubber, resultOutcome } from './callTool.js';
import { currentTurnId, startHeartbeat } from './context.js';
import type { ActivityKit } from './deps.js';
import { legacyInputAsker } from './legacyInput.js';
import { taskFailure, taskPoll, toolResult, withTaskServer } from './tasks.js';

/** How often, once a question is answered, the activity looks whether the task went on. */
export const RESUME_CHECK_MS = 1000;
/** The `tasks/result` request's own timeout beyond the activity's wait. */
const RESULT_REQUEST_MARGIN_MS = 10_000;

type Poll = (server: ManagedServer, signal: AbortSignal) => Promise<TaskPoll>;

/**
 * `taskInput`: sends `tasks/result` for a task in `input_required` and asks a person each question
 * the server sends over it. Returns the task's result if it ends meanwhile, or what `tasks/get`
 * says once the task is `working` again (the request is then dropped; the task goes on), or,
 * after `waitMs`, its status then (open questions are answered `cancel`).
 */
export function taskInputActivity(kit: ActivityKit): (input: TaskInputRef) => Promise<TaskPoll | CallOutcome> {
  return async function taskInput(input) {
    const ctx = Context.current();
    const startedAt = new Date();
    const scrubber = callScrubber(kit.deps.scrub);
    // As a call's progress, so the API's pending-call `progress` shows it.
    const idle = {
      progress: { taskId: input.taskId, status: 'input_required', message: `task ${input.taskId}: input_required` },
    };
    let latest: unknown = idle;
    const stop = startHeartbeat(ctx, () => latest);
    // Ends the request: the task went on, or the wait's limit passed.
    const done = new AbortController();
    const limit = setTimeout(() => done.abort(), input.waitMs);
    try {
      const turnId = currentTurnId();
      return await withTaskServer(kit, input, scrubber, async (server, signal) => {
        if (input.serverInstance !== undefined && input.serverInstance !== server.instance) return { status: 'lost' };
        const poll: Poll = (s, sig) =>
          s.withTasks(
            async (session, _listed, inner) =>
              taskPoll(
                await session
                  .task(asTaskId(input.taskId), { requestTimeoutMs: input.requestTimeoutMs })
                  .snapshot(inner),
                s,
                scrubber.scrub,
              ),
            sig,
          );
        // A 2026-07-28 task asks in `inputRequests` (answered with `tasks/update`), not over
        // `tasks/result`: where it stands, with its questions, is what the turn needs to ask them.
        if (server.era === 'modern') return await poll(server, signal);
        const asker = legacyInputAsker(kit, ctx, input, turnId, scrubber.scrub, (waiting) => {
          latest = waiting ?? idle;
          ctx.heartbeat(latest);
        });
        const questions = { open: 0 };
        // One at a time: the turn takes a newer question of a call as replacing an open one (left
        // from an earlier try), and a server may send a task's queued questions together.
        let turnTaken: Promise<unknown> = Promise.resolve();
        const ask: LegacyInputAsker = async (request, withdrawn) => {
          questions.open += 1;
          const previous = turnTaken;
          let release = (): void => undefined;
          turnTaken = new Promise<void>((resolve) => (release = resolve));
          try {
            await previous;
            return await asker(request, AbortSignal.any([withdrawn, done.signal]));
          } finally {
            questions.open -= 1;
            release();
          }
        };
        const live = AbortSignal.any([signal, done.signal]);
        const result = server.taskResultWithInput(input.taskId, ask, {
          signal: live,
          timeoutMs: input.waitMs + RESULT_REQUEST_MARGIN_MS,
        });
        result.catch(() => undefined);
        try {
          const first = await Promise.race([
            result.then((r) => ({ result: r })),
            resumed(server, poll, questions, live).then((p) => ({ poll: p })),
          ]);
          if ('result' in first) {
            return resultOutcome(input.name, toolResult(first.result), scrubber.scrub, {
              startedAt: startedAt.toISOString(),
              durationMs: Date.now() - startedAt.getTime(),
              attempts: ctx.info.attempt,
            });
          }
          if (first.poll) return first.poll;
          return await result.then((r) =>
            resultOutcome(input.name, toolResult(r), scrubber.scrub, {
              startedAt: startedAt.toISOString(),
              durationMs: Date.now() - startedAt.getTime(),
              attempts: ctx.info.attempt,
            }),
          );
        } catch (err) {
          if (signal.aborted || !done.signal.aborted) throw err;
          // The limit passed: where the task stands now decides what the turn does next.
          return await poll(server, signal);
        } finally {
          done.abort();
        }
      });
    } catch (err) {
      throw taskFailure(err, input, scrubber.scrub);
    } finally {
      clearTimeout(limit);
      stop();
    }
  };
}

/**
 * Resolves with the task's status once it is `working` again while no question is open (answered,
 * or the server went on without asking here, as after a question lost with a crashed worker); a
 * status that ended is left to `tasks/result`, which returns it. Undefined once `signal` aborts.
 * A failed look is tried again at the next check.
 */
async function resumed(
  server: ManagedServer,
  poll: Poll,
  questions: { open: number },
  signal: AbortSignal,
): Promise<TaskPoll | undefined> {
  while (!signal.aborted) {
    try {
      await delay(RESUME_CHECK_MS, undefined, { signal });
    } catch {
      return undefined;
    }
    if (questions.open > 0) continue;
    try {
      const status = await poll(server, signal);
      if (status.status === 'working') return status;
    } catch {
      // Looked again at the next check; the request itself reports a server that is gone.
    }
  }
  return undefined;
}
