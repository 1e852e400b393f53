/**
 * The calls of a turn: run one (idempotent by call ID), read one sent earlier, cancel one.
 */
import { createRoute } from '@hono/zod-openapi';
import type { CallOutcome, CallRequest } from '../contract/index.js';
import type { TurnClient } from '../client/turnClient.js';
import { shapeForModel, type ShapeLimits } from '../shaping/index.js';
import { ApiError } from './errors.js';
import { callProgress } from './progress.js';
import { callFingerprint, createCallRecords, type RecordedCall } from './recorded.js';
import {
  API,
  TIMED_OUT,
  answerWithin,
  callPath,
  errors,
  jsonBody,
  ok,
  raceTimeout,
  readTranscript,
  sentToTurn,
  turnIdOf,
  type ApiApp,
} from './routing.js';
import { CallParams, CallQuerySchema, TurnParams } from './paramSchemas.js';
import * as S from './schemas.js';

/** What the call routes need. */
export interface CallRoutesDeps {
  turns: TurnClient;
  /** How long a call request waits for its outcome before answering 202 with where to poll. */
  callWaitMs: number;
  /** What `?render=model` renders. */
  shapeLimits: ShapeLimits;
}

/** Adds running, reading and cancelling calls. */
export function registerCallRoutes(app: ApiApp, deps: CallRoutesDeps): void {
  registerCallRun(app, deps);
  const { turns } = deps;

  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/turns/{turn}/calls/{callId}`,
      tags: ['calls'],
      summary: 'A call sent earlier: its outcome, or 202 while it runs',
      request: { params: CallParams, query: CallQuerySchema.pick({ render: true }) },
      responses: {
        200: ok(S.CallResultSchema, 'The recorded outcome'),
        202: ok(S.CallPendingSchema, 'Still running'),
        ...errors(404),
      },
    }),
    async (c) => {
      const { sessionId, turn, callId } = c.req.valid('param');
      const { render } = c.req.valid('query');
      const turnId = turnIdOf(sessionId, turn);
      const t = await readTranscript(turns, sessionId, turn);
      const call = t.calls.find((x) => x.id === callId);
      if (!call) throw new ApiError('not_found', `no call ${JSON.stringify(callId)} in turn ${turnId}`, 'path.callId');
      if (!call.outcome) {
        const progress = await callProgress(turns.client, turnId, callId).catch(() => undefined);
        c.header('Retry-After', '1');
        return c.json(
          {
            id: callId,
            state: 'running' as const,
            poll: callPath(sessionId, turn, callId),
            ...(progress ? { progress } : {}),
          },
          202,
        );
      }
      return c.json(await callResult(call.id, call.name, call.outcome, render === 'model', deps.shapeLimits), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: `${API}/sessions/{sessionId}/turns/{turn}/calls/{callId}/cancel`,
      tags: ['calls'],
      summary: 'Cancel a running call (the server is sent notifications/cancelled)',
      request: { params: CallParams },
      responses: {
        200: ok(S.CancelResultSchema, '`cancelled` is false when no such call was running'),
        ...errors(404, 409),
      },
    }),
    async (c) => {
      const { sessionId, turn, callId } = c.req.valid('param');
      const turnId = turnIdOf(sessionId, turn);
      const cancelled = await answerWithin(
        sentToTurn(turns, turnId, turns.cancelCall(turnId, callId)),
        deps.callWaitMs,
        'the turn did not answer the cancellation',
      );
      return c.json({ id: callId, cancelled }, 200);
    },
  );
}

function registerCallRun(app: ApiApp, deps: CallRoutesDeps): void {
  const { turns, callWaitMs } = deps;
  const records = createCallRecords(turns.client);
  app.openapi(
    createRoute({
      method: 'post',
      path: `${API}/sessions/{sessionId}/turns/{turn}/calls`,
      tags: ['calls'],
      summary: 'Run one tool call (idempotent by call ID)',
      description:
        'The call ID is the Update ID: the same ID returns the recorded outcome and never runs the tool again; the same ID with other arguments is 409. ' +
        'A call still running after `wait` (default DMCP_API_CALL_WAIT) answers 202 with where to poll; a 202 comes only once the turn has accepted the call, so the poll finds it.',
      request: { params: TurnParams, query: CallQuerySchema, ...jsonBody(S.CallRequestSchema) },
      responses: {
        200: ok(S.CallResultSchema, 'The outcome (the recorded one for a repeated ID)'),
        202: ok(S.CallPendingSchema, 'Still running; poll `poll`'),
        ...errors(404, 409, 422),
      },
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const query = c.req.valid('query');
      const request = c.req.valid('json') as CallRequest;
      const turnId = turnIdOf(sessionId, turn);
      const deadline = Date.now() + Math.min(query.wait !== undefined ? Number(query.wait) : callWaitMs, callWaitMs);
      // Only an accepted call is in history, where a poll finds it: a 202 comes after acceptance.
      const accepted = await answerWithin(
        sentToTurn(turns, turnId, turns.startCall(turnId, request)),
        callWaitMs,
        'the turn did not accept the call',
      );
      // Once accepted, history holds what the ID was first sent with: read it while the tool runs.
      const outcome = accepted.result();
      // A call still running when we answer 202 settles later, unobserved.
      outcome.catch(() => undefined);
      const [recorded, answer]: [RecordedCall | undefined, CallOutcome | typeof TIMED_OUT] = await Promise.all([
        records.recorded(turnId, request.id, accepted.workflowRunId),
        raceTimeout(outcome, Math.max(0, deadline - Date.now())),
      ]);
      refuseConflict(request, recorded);
      const poll = callPath(sessionId, turn, request.id);
      if (answer === TIMED_OUT) {
        const progress = await callProgress(turns.client, turnId, request.id).catch(() => undefined);
        c.header('Location', poll);
        c.header('Retry-After', '1');
        return c.json({ id: request.id, state: 'running' as const, poll, ...(progress ? { progress } : {}) }, 202);
      }
      return c.json(
        await callResult(request.id, request.name, answer, query.render === 'model', deps.shapeLimits),
        200,
      );
    },
  );
}

/** A call ID sent again with another tool or other arguments, or one that ran in an earlier run, is 409. */
function refuseConflict(request: CallRequest, recorded: RecordedCall | undefined): void {
  if (recorded && 'earlier' in recorded) {
    throw new ApiError(
      'call_id_conflict',
      `call ID ${JSON.stringify(request.id)} ran earlier in this turn; its outcome is in the transcript`,
      'body.id',
    );
  }
  if (recorded && recorded.fingerprint !== callFingerprint(request)) {
    throw new ApiError(
      'call_id_conflict',
      `call ID ${JSON.stringify(request.id)} was already sent with another tool or other arguments; a new call needs a new ID`,
      'body.id',
    );
  }
}

async function callResult(id: string, name: string, outcome: CallOutcome, render: boolean, limits: ShapeLimits) {
  return { id, name, outcome, ...(render ? { model: await shapeForModel(outcome, limits) } : {}) };
}
