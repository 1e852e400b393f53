/**
 * A turn read back while it runs and once it has ended: its progress (a model turn's steps so far)
 * from the turn's status query, then its result. What a model turn started over HTTP is polled with.
 */
import { createRoute } from '@hono/zod-openapi';
import { WorkflowFailedError } from '@temporalio/client';
import { statusQuery, type AgentTurnWorkflow } from '../contract/definitions.js';
import { WorkflowType, type TurnProgress } from '../contract/index.js';
import type { TurnClient } from '../client/turnClient.js';
import { ApiError } from './errors.js';
import { TurnRunningSchema } from './modelSchemas.js';
import { TurnParams } from './paramSchemas.js';
import { API, TIMED_OUT, errors, ok, raceTimeout, turnIdOf, turnPath, type ApiApp } from './routing.js';
import * as S from './schemas.js';
import { resultBody } from './turnRoutes.js';

/** How long the status query may take: a turn whose worker is gone answers without its progress. */
const PROGRESS_WAIT_MS = 5_000;
/** Longest failure text answered: the cause chain of a failed turn, joined. */
const MAX_FAILURE_CHARS = 2_000;

/** What a closed run without a result was, in the transcript's words. */
const CLOSED: Record<string, string> = {
  FAILED: 'failed',
  TERMINATED: 'was terminated',
  CANCELLED: 'was cancelled',
  TIMED_OUT: 'timed out',
};

/** Adds reading a turn: 202 with its progress while it runs, 200 with its result once it has ended. */
export function registerTurnStateRoutes(app: ApiApp, turns: TurnClient): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/turns/{turn}`,
      tags: ['turns'],
      summary: 'A turn: its result once it has ended, or 202 with its progress while it runs',
      description:
        "While the turn runs: 202 with its calls so far and, for a model turn, the model's steps as they finish. " +
        "Once it has ended: 200 with its result (a model turn's `answer`, `modelSteps`, `conversation`). " +
        'A turn that ended without a result (it failed, was terminated, cancelled or timed out) is `409 turn_failed`, saying why.',
      request: { params: TurnParams },
      responses: {
        200: ok(S.TurnResultSchema, 'The turn has ended; its result'),
        202: ok(TurnRunningSchema, 'The turn is running; its progress'),
        ...errors(404, 409),
      },
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const turnId = turnIdOf(sessionId, turn);
      const handle = turns.client.workflow.getHandle<AgentTurnWorkflow>(turnId);
      const described = await handle.describe();
      if (described.type !== WorkflowType.agentTurn) throw new ApiError('not_found', `no turn ${turnId}`, 'path.turn');
      const status = described.status.name;
      if (status === 'RUNNING') {
        const progress = await raceTimeout(handle.query(statusQuery), PROGRESS_WAIT_MS).catch(() => undefined);
        c.header('Retry-After', '1');
        return c.json(runningBody(sessionId, turn, progress === TIMED_OUT ? undefined : progress), 202);
      }
      const result = await handle.result().catch((err: unknown) => {
        throw new ApiError(
          'turn_failed',
          `the turn ${CLOSED[status] ?? 'ended'} without a result: ${failureText(err)}`,
        );
      });
      return c.json(resultBody(sessionId, result), 200);
    },
  );
}

/** A running turn as the API answers it: its progress, when the turn answered the status query. */
function runningBody(sessionId: string, turn: string, progress: TurnProgress | undefined) {
  return {
    sessionId,
    turnId: turnIdOf(sessionId, turn),
    turn,
    state: 'running' as const,
    ...(progress
      ? { phase: progress.phase, callsDone: progress.callsDone, callsInFlight: progress.callsInFlight }
      : {}),
    ...(progress?.modelSteps ? { modelSteps: progress.modelSteps } : {}),
    poll: turnPath(sessionId, turn),
  };
}

/** Why a turn's run closed: the messages of its failure's causes, outermost first, without repeats. */
function failureText(err: unknown): string {
  const messages: string[] = [];
  let e: unknown = err instanceof WorkflowFailedError ? err.cause : err;
  for (let depth = 0; e instanceof Error && depth < 8; depth += 1) {
    const message = e.message;
    if (message && !messages.some((m) => m.includes(message))) messages.push(message);
    e = e.cause;
  }
  const text = messages.join(': ') || 'no reason recorded';
  return text.length > MAX_FAILURE_CHARS ? `${text.slice(0, MAX_FAILURE_CHARS)}...` : text;
}
