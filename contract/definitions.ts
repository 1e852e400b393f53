/**
 * The Updates and Queries of the turn and shelf workflows, defined once: the workflows install
 * handlers for these objects and every client (TurnClient, the shelf client, the API) sends them,
 * so a name and its argument and result types cannot drift apart between the two sides.
 */
import type { QueryDefinition, UpdateDefinition } from '@temporalio/common';
import type { InputAnswer, InputAnswerReceipt, LegacyInputReport, LegacyInputTicket } from './inputs.js';
import type { CallOutcome } from './history.js';
import { QueryName, ShelfUpdateName, UpdateName } from './names.js';
import type { ShelfChange, ShelfChangeResult, ShelfState } from './shelf.js';
import type {
  CallRequest,
  EndSessionWorkflowInput,
  EndTurnOptions,
  SessionEnd,
  TurnInput,
  TurnProgress,
  TurnResult,
  TurnStarted,
} from './turn.js';

/**
 * What the SDK's `defineUpdate` returns (a name and its kind), built here: a client would otherwise
 * load `@temporalio/workflow` only to name the Updates it sends.
 */
function defineUpdate<Ret, Args extends unknown[] = []>(name: string): UpdateDefinition<Ret, Args> {
  return { type: 'update', name } as UpdateDefinition<Ret, Args>;
}

/** What the SDK's `defineQuery` returns; see {@link defineUpdate}. */
function defineQuery<Ret, Args extends unknown[] = []>(name: string): QueryDefinition<Ret, Args> {
  return { type: 'query', name } as QueryDefinition<Ret, Args>;
}

/** Answered once the servers are reconciled and the tool list is frozen (update-with-start). */
export const turnStartedUpdate = defineUpdate<TurnStarted>(UpdateName.turnStarted);
/** One tool call; its Update ID is the model's tool-call ID. */
export const callToolUpdate = defineUpdate<CallOutcome, [CallRequest]>(UpdateName.callTool);
/** Ends the turn. */
export const endTurnUpdate = defineUpdate<void>(UpdateName.endTurn);
/**
 * The same Update with its argument: `{ endSession: true }` ends the session too, once the turn's
 * calls are done. One name, one handler; two definitions so a plain end sends no argument at all.
 */
export const endTurnWithOptionsUpdate = defineUpdate<void, [EndTurnOptions]>(UpdateName.endTurn);
/** Cancels one in-flight call by its ID; returns whether such a call was running. */
export const cancelCallUpdate = defineUpdate<boolean, [string]>(UpdateName.cancelCall);
export const statusQuery = defineQuery<TurnProgress>(QueryName.status);
/** The answer to one open input request of a running call; its Update ID is the request ID. */
export const answerInputUpdate = defineUpdate<InputAnswerReceipt, [string, InputAnswer]>(UpdateName.answerInput);
/** Sent by a call's own activity: a 2025-era server asks a person mid-call. */
export const legacyInputAskedUpdate = defineUpdate<LegacyInputTicket, [LegacyInputReport]>(UpdateName.legacyInputAsked);

/** One change of the shelf's servers or grants. */
export const shelfChangeUpdate = defineUpdate<ShelfChangeResult, [ShelfChange]>(ShelfUpdateName.change);
export const shelfQuery = defineQuery<ShelfState>(QueryName.shelf);

/** The `agentTurn` workflow's signature: typed handles for clients, which never load workflow code. */
export type AgentTurnWorkflow = (input: TurnInput) => Promise<TurnResult>;
/** The `dmcpEndSession` workflow's signature; see {@link AgentTurnWorkflow}. */
export type EndSessionWorkflow = (input: EndSessionWorkflowInput) => Promise<Pick<SessionEnd, 'workers' | 'servers'>>;
