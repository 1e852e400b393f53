/**
 * What starting a turn takes besides the start itself: the session ID's alphabet and search
 * attribute, the turn key that signs references, the UI's metadata, and the turn numbers a start
 * moves past when their IDs are taken.
 */
import { readFile } from 'node:fs/promises';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import {
  SESSION_ID_PATTERN,
  SESSION_ID_SEARCH_ATTRIBUTE,
  WorkflowType,
  type CallRequest,
  type TurnInput,
} from '../contract/index.js';
import { findCause } from '../contract/failureCauses.js';
import { turnStaticDetails, turnSummary } from '../contract/turnMetadata.js';
import { temporalClient } from './temporalClient.js';

const { WorkflowExecutionAlreadyStartedError } = temporalClient;

/** The `DmcpSessionId` search attribute every turn carries: list a session's turns with it. */
export const sessionIdKey = defineSearchAttributeKey(SESSION_ID_SEARCH_ATTRIBUTE, SearchAttributeType.KEYWORD);

/** Session IDs become part of workflow IDs and visibility queries: keep them to a safe alphabet. */
export const SESSION_ID_RE = SESSION_ID_PATTERN;

export /** Refuses a session ID outside {@link SESSION_ID_RE}. */
function checkSessionId(sessionId: string): void {
  if (!SESSION_ID_RE.test(sessionId)) {
    throw new Error(
      `invalid session ID ${JSON.stringify(sessionId)}: use letters, digits, ".", "_", ":" or "-" (at most 128)`,
    );
  }
}

/**
 * A turn start that found its turn's workflow ID taken by a run this client did not start (another
 * caller of Temporal started it first): the client never adopts such a run, whose servers and tool
 * list are not the turn's. Names the session and the IDs; the API answers it as a taken turn (409).
 */
export class TurnIdTakenError extends WorkflowExecutionAlreadyStartedError {
  override name = 'TurnIdTakenError';

  constructor(
    sessionId: string,
    readonly takenIds: string[],
    hint: string,
  ) {
    super(
      `session ${JSON.stringify(sessionId)}: turn ID${takenIds.length > 1 ? 's' : ''} ${takenIds.join(', ')} ${takenIds.length > 1 ? 'are' : 'is'} taken by runs not started by this client (another caller of Temporal started them); ${hint}`,
      takenIds[takenIds.length - 1]!,
      WorkflowType.agentTurn,
    );
  }
}

/**
 * How many turn numbers a start moves past when their IDs are taken (closed turns visibility did
 * not count yet, or runs another caller started) before it gives up.
 */
export const MAX_TURN_NUMBER_MOVES = 5;

/** Whether a start failed because a run already holds its workflow ID. */
export function isAlreadyStarted(err: unknown): boolean {
  return (
    findCause(
      err,
      (e): e is InstanceType<typeof WorkflowExecutionAlreadyStartedError> =>
        e instanceof WorkflowExecutionAlreadyStartedError,
    ) !== undefined
  );
}

/** Reads a turn key file (64 hex digits); undefined when there is none. */
export async function readTurnKeyFile(file: string): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`${file} does not hold a turn key (64 hex digits)`);
  return Buffer.from(text, 'hex');
}

/** What the Temporal UI shows for a turn from its start: names only (see contract/turnMetadata.ts). */
export function turnMetadata(
  input: TurnInput,
  batch?: CallRequest[][],
): { staticSummary: string; staticDetails: string } {
  return {
    staticSummary: turnSummary(input.sessionId, input.refs),
    staticDetails: turnStaticDetails(input.sessionId, input.refs, batch?.flat().length),
  };
}

/** The turn number after the one of `workflowId` (`<sessionId>/turn-<n>`). */
export function nextTurnNumber(workflowId: string): number {
  return Number(/turn-(\d+)$/.exec(workflowId)?.[1] ?? 0) + 1;
}
