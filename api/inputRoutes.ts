/**
 * The input requests of a turn's running calls: the questions a server asks a person, and their
 * answers. The answer is an Update keyed by the request ID, so sending it again is safe.
 */
import { createRoute } from '@hono/zod-openapi';
import type { InputAnswer } from '../contract/index.js';
import type { TurnClient } from '../client/turnClient.js';
import { API, answerWithin, errors, jsonBody, ok, sentToTurn, turnIdOf, type ApiApp } from './routing.js';
import { InputParams, TurnParams } from './paramSchemas.js';
import * as S from './schemas.js';

/** What the input routes need. */
export interface InputRoutesDeps {
  turns: TurnClient;
  /** How long an answer waits for the turn to take it. */
  callWaitMs: number;
}

/** Adds listing and answering a turn's open input requests. */
export function registerInputRoutes(app: ApiApp, deps: InputRoutesDeps): void {
  const { turns } = deps;
  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/turns/{turn}/inputs`,
      tags: ['inputs'],
      summary: "The open input requests of the turn's running calls (questions only, never answers)",
      request: { params: TurnParams },
      responses: { 200: ok(S.InputListSchema, 'Oldest first; empty when nothing waits'), ...errors(404, 409) },
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const turnId = turnIdOf(sessionId, turn);
      const inputs = await answerWithin(
        sentToTurn(turns, turnId, turns.pendingInputs(turnId)),
        deps.callWaitMs,
        'the turn did not answer',
      );
      return c.json({ inputs }, 200);
    },
  );
  app.openapi(
    createRoute({
      method: 'post',
      path: `${API}/sessions/{sessionId}/turns/{turn}/inputs/{requestId}`,
      tags: ['inputs'],
      summary: 'Answer one input request (accept with content, decline, or cancel)',
      description:
        "The request ID is the Update ID: a second answer to the same request returns the first one's receipt. " +
        'An answer that does not fit the requested schema is 422 naming the field (`body.content.<field>`), and the question stays open.',
      request: { params: InputParams, ...jsonBody(S.InputAnswerSchema) },
      responses: { 200: ok(S.InputReceiptSchema, 'The answer was recorded'), ...errors(404, 409, 422) },
    }),
    async (c) => {
      const { sessionId, turn, requestId } = c.req.valid('param');
      const answer = c.req.valid('json') as InputAnswer;
      const turnId = turnIdOf(sessionId, turn);
      const receipt = await answerWithin(
        sentToTurn(turns, turnId, turns.answerInput(turnId, requestId, answer)),
        deps.callWaitMs,
        'the turn did not take the answer',
      );
      return c.json(receipt, 200);
    },
  );
}
