/**
 * The turns of a session: start one (interactive, a batch that runs at once, or a model turn that
 * runs in the background), list them, end one. Reading one back is in `turnStateRoutes.ts`.
 */
import { createRoute } from '@hono/zod-openapi';
import type { z } from '@hono/zod-openapi';
import { MAX_BATCH_CALLS, type CallRequest, type TurnResult } from '../contract/index.js';
import type { StartTurnOptions, TurnClient } from '../client/turnClient.js';
import type { ModelTurnOptions } from '../client/modelTurn.js';
import { tokenAllowsAgent, type ApiToken } from './auth.js';
import { admitRefs, type ApiBoundary } from './boundary.js';
import { ApiError } from './errors.js';
import { API, answerWithin, errors, jsonBody, ok, sentToTurn, turnIdOf, turnPath, type ApiApp } from './routing.js';
import { SessionParams, TurnParams } from './paramSchemas.js';
import * as S from './schemas.js';
import { ModelTurnStartedSchema } from './modelSchemas.js';

/** What the turn routes need. */
export interface TurnRoutesDeps {
  turns: TurnClient;
  /** Which turn references callers may name. */
  boundary: ApiBoundary;
  /** How long ending a turn waits for the turn to answer. */
  callWaitMs: number;
}

type StartTurnBody = z.infer<typeof S.StartTurnSchema>;

/** Adds starting, listing and ending turns. */
export function registerTurnRoutes(app: ApiApp, deps: TurnRoutesDeps): void {
  registerStartTurn(app, deps);
  registerListTurns(app, deps.turns);
  registerEndTurn(app, deps);
}

/** Starting a turn: interactive, a batch that runs at once, or a model turn. */
function registerStartTurn(app: ApiApp, deps: TurnRoutesDeps): void {
  const { turns } = deps;
  app.openapi(
    createRoute({
      method: 'post',
      path: `${API}/sessions/{sessionId}/turns`,
      tags: ['turns'],
      summary: 'Start a turn (interactive, or a model turn with `model`), or run one (batch, with `calls`)',
      description:
        'Interactive: answers once the servers are reconciled and the tool list is frozen. Batch: answers with every outcome once the turn has run. ' +
        'Model: answers 202 once the turn has started; it runs its model loop to its answer in the background, and `GET` the turn (`poll`) answers its result.',
      request: { params: SessionParams, ...jsonBody(S.StartTurnSchema) },
      responses: {
        200: ok(S.TurnResultSchema, 'The batch ran; every outcome'),
        201: ok(S.TurnStartedSchema, 'The turn started: status, frozen tool list, servers paragraph'),
        202: ok(ModelTurnStartedSchema, 'The model turn started; poll the turn for its result'),
        ...errors(404, 409, 422),
      },
    }),
    async (c) => {
      const { sessionId } = c.req.valid('param');
      const body = c.req.valid('json');
      // 422: the body fits the schema, which cannot say that the two exclude each other.
      if (body.model && body.calls)
        throw new ApiError(
          'call_refused',
          'body.calls: a model turn runs the calls its model asks for; start it without `calls`',
          'body.calls',
        );
      const start = await admittedStart(deps.boundary, sessionId, body, c.get('token'));
      if (body.model) {
        const started = await startModelTurn(turns, { ...start, model: body.model });
        c.header('Location', started.poll);
        c.header('Retry-After', '1');
        return c.json(started, 202);
      }
      if (body.calls) {
        const calls = body.calls as CallRequest[][];
        // The turn refuses a larger batch too (422); refused here, no workflow starts for it.
        const count = calls.reduce((n, group) => n + group.length, 0);
        if (count > MAX_BATCH_CALLS)
          throw new ApiError(
            'call_refused',
            `the batch has ${count} calls; at most ${MAX_BATCH_CALLS} run in one turn (split it into several turns)`,
            'body.calls',
          );
        return c.json(resultBody(sessionId, await turns.runBatch({ ...start, calls })), 200);
      }
      const t = await turns.startTurn(start);
      const turn = t.turnId.slice(sessionId.length + 1);
      const base = turnPath(sessionId, turn);
      c.header('Location', base);
      const links = { calls: `${base}/calls`, end: `${base}/end`, transcript: `${base}/transcript` };
      return c.json(
        {
          sessionId,
          turnId: t.turnId,
          turn,
          workerQueue: t.workerQueue,
          status: t.status,
          tools: t.tools,
          serversParagraph: t.serversParagraph,
          links,
        },
        201,
      );
    },
  );
}

/** Listing a session's turns. */
function registerListTurns(app: ApiApp, turns: TurnClient): void {
  app.openapi(
    createRoute({
      method: 'get',
      path: `${API}/sessions/{sessionId}/turns`,
      tags: ['turns'],
      summary: "The session's turns, oldest first",
      request: { params: SessionParams },
      responses: { 200: ok(S.TurnListSchema, 'Turns'), ...errors() },
    }),
    async (c) => {
      const { sessionId } = c.req.valid('param');
      const ids = await turns.sessionTurns(sessionId);
      const list = ids.map((turnId) => {
        const turn = turnId.slice(sessionId.length + 1);
        return { turnId, turn, href: turnPath(sessionId, turn) };
      });
      return c.json({ sessionId, turns: list }, 200);
    },
  );
}

/** Ending an interactive turn. */
function registerEndTurn(app: ApiApp, deps: TurnRoutesDeps): void {
  const { turns } = deps;
  app.openapi(
    createRoute({
      method: 'post',
      path: `${API}/sessions/{sessionId}/turns/{turn}/end`,
      tags: ['turns'],
      summary: 'End an interactive turn',
      description:
        'Waits for the calls in flight, MCP tasks included. With `{"detach": true}` calls that run as MCP tasks are answered at once as `detached` (their tasks go on, and a later turn takes one up with a call naming its `taskId`); other calls are still waited for. The body is optional.',
      request: {
        params: TurnParams,
        body: { required: false, content: { 'application/json': { schema: S.EndTurnSchema } } },
      },
      responses: { 200: ok(S.TurnResultSchema, 'The turn ended; its calls'), ...errors(404, 409) },
    }),
    async (c) => {
      const { sessionId, turn } = c.req.valid('param');
      const body = c.req.valid('json');
      const turnId = turnIdOf(sessionId, turn);
      const options = {
        ...(body.detach === true ? { detach: true } : {}),
        ...(body.endSession === true ? { endSession: true } : {}),
      };
      const result = await answerWithin(
        sentToTurn(turns, turnId, turns.endTurn(turnId, Object.keys(options).length > 0 ? options : undefined)),
        deps.callWaitMs,
        'the turn did not end',
      );
      return c.json(resultBody(sessionId, result), 200);
    },
  );
}

/** Adds ending a session at once. */
export function registerSessionRoutes(app: ApiApp, deps: TurnRoutesDeps): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: `${API}/sessions/{sessionId}/end`,
      tags: ['turns'],
      summary: 'End a session now',
      description:
        "Ends the session's open turns and stops its servers on every worker that holds them: stdio processes, Streamable HTTP sessions (DELETE), streams. " +
        'A server with a call in flight stops when that call ends; the next turn starts fresh servers. Ending a session that holds nothing is not an error.',
      request: { params: SessionParams },
      responses: { 200: ok(S.SessionEndedSchema, 'The session ended'), ...errors() },
    }),
    async (c) => {
      const { sessionId } = c.req.valid('param');
      const ended = await answerWithin(deps.turns.endSession(sessionId), deps.callWaitMs, 'the session did not end');
      return c.json(ended, 200);
    },
  );
}

/**
 * Starts a model turn and answers where to read it, before the model's first step: the turn's
 * workflow runs the loop; this process only started it (the run's wait for its result is left
 * to end with the turn, and nothing here reads it: the turn's route does, from Temporal).
 */
async function startModelTurn(turns: TurnClient, options: ModelTurnOptions) {
  const run = await turns.startModelTurn(options);
  const turn = run.turnId.slice(options.sessionId.length + 1);
  const base = turnPath(options.sessionId, turn);
  return {
    sessionId: options.sessionId,
    turnId: run.turnId,
    turn,
    model: options.model.name,
    state: 'running' as const,
    poll: base,
    links: { calls: `${base}/calls`, end: `${base}/end`, transcript: `${base}/transcript` },
  };
}

/** A turn's result as the API answers it: a model turn's model, answer, steps and conversation too. */
export function resultBody(sessionId: string, result: TurnResult) {
  const turn = result.turnId.slice(sessionId.length + 1);
  return {
    sessionId,
    turnId: result.turnId,
    turn,
    endedBy: result.endedBy,
    calls: result.calls,
    ...(result.callsBefore !== undefined ? { callsBefore: result.callsBefore } : {}),
    ...(result.model !== undefined ? { model: result.model } : {}),
    ...(result.answer !== undefined ? { answer: result.answer } : {}),
    ...(result.modelSteps !== undefined ? { modelSteps: result.modelSteps } : {}),
    ...(result.conversation !== undefined ? { conversation: result.conversation } : {}),
  };
}

/**
 * The start of a turn, once its references are admitted: signed when the API's boundary allows
 * them all, refused when the turn names an agent the token may not run as, or one it cannot sign.
 */
async function admittedStart(
  boundary: ApiBoundary,
  sessionId: string,
  body: StartTurnBody,
  token: ApiToken | undefined,
): Promise<StartTurnOptions> {
  const refs = {
    workspace: body.workspace ?? process.cwd(),
    mcpConfigFiles: body.servers?.mcpConfigFiles ?? [],
    inlineSpecs: body.servers?.inlineSpecs ?? [],
    plugins: body.servers?.plugins ?? [],
  };
  const admitted = await admitRefs(boundary, refs);
  if ('refused' in admitted)
    throw new ApiError(
      'forbidden',
      `body.${admitted.refused.field}: ${admitted.refused.message}`,
      `body.${admitted.refused.field}`,
    );
  if (body.agent !== undefined) {
    if (token && !tokenAllowsAgent(token, body.agent))
      throw new ApiError(
        'forbidden',
        `body.agent: the token may not run turns as agent ${JSON.stringify(body.agent)} (none of its prefixes starts the agent ID)`,
        'body.agent',
      );
    // The agent is signed with the other references, the workspace among them.
    if (!admitted.sign)
      throw new ApiError(
        'forbidden',
        `body.workspace: the turn names an agent, so its references are signed as a whole, and the workspace ${JSON.stringify(refs.workspace)} is not under DMCP_WORKSPACE_ROOTS`,
        'body.workspace',
      );
  }
  return {
    sessionId,
    workspace: refs.workspace,
    servers: { mcpConfigFiles: refs.mcpConfigFiles, inlineSpecs: refs.inlineSpecs, plugins: refs.plugins },
    ...(body.limits ? { limits: body.limits } : {}),
    ...(body.turn !== undefined ? { turn: body.turn } : {}),
    ...(body.agent !== undefined ? { agent: body.agent } : {}),
    // Only a workspace the caller named is offered as a root, not the API process's directory.
    offerWorkspaceRoot: body.workspace !== undefined,
    ...(body.endSession === true ? { endSession: true } : {}),
    unsigned: !admitted.sign,
  };
}
