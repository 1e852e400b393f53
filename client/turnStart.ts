/**
 * What starting a turn takes besides the start itself: the session ID's alphabet and search
 * attribute, the turn key that signs references, the UI's metadata, and the turn numbers a start
 * moves past when their IDs are taken.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import {
  DEFAULT_DATA_DIR,
  SESSION_ID_PATTERN,
  SESSION_ID_SEARCH_ATTRIBUTE,
  WorkflowType,
  type CallRequest,
  type ConfigRefs,
  type TurnInput,
} from '../contract/index.js';
import { applicationFailureOf, findCause } from '../contract/failureCauses.js';
import { turnStaticDetails, turnSummary } from '../contract/turnMetadata.js';
import { temporalClient } from './temporalClient.js';

const { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowUpdateFailedError } = temporalClient;

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

/**
 * The workers' data dir as a client finds it: the option, else `./.data` (the workers' default). A
 * library never reads the environment: a caller whose workers set DMCP_DATA_DIR passes it.
 */
export function clientDataDir(dataDir?: string): string {
  return resolve(dataDir ?? DEFAULT_DATA_DIR);
}

/**
 * Why a turn cannot start without the turn key: it names servers (inline specs, config files,
 * plugins, an agent's shelf) that every worker refuses without the key's proof, so it would start
 * with none of their tools. Undefined when it names none of them.
 */
export function missingKeyProblem(refs: ConfigRefs, keyFile: string): string | undefined {
  const named = [
    refs.inlineSpecs.length > 0 && 'inline specs',
    refs.mcpConfigFiles.length > 0 && 'config files',
    (refs.plugins?.length ?? 0) > 0 && 'plugins',
    refs.agent !== undefined && `agent ${JSON.stringify(refs.agent)}`,
  ].filter((n): n is string => typeof n === 'string');
  if (named.length === 0) return undefined;
  return (
    `the turn names ${named.join(', ')}, which workers use only when the operator's turn key signs them, ` +
    `and this client has none (no ${keyFile}): pass \`turnKey\`, or \`dataDir\` naming ` +
    `the workers' data dir (their DMCP_DATA_DIR), or \`unsigned: true\` to send them as any caller's (the workers then refuse them)`
  );
}

/** A turn that ended before its start completed (a config error, a worker-side refusal): says why. */
export class TurnFailedError extends Error {
  override name = 'TurnFailedError';

  constructor(
    readonly turnId: string,
    cause: Error,
  ) {
    super(`turn ${turnId} failed: ${applicationFailureOf(cause)?.message ?? cause.message}`, { cause });
  }
}

/**
 * What a failed start says to its caller. A start Update fails with only "the Workflow completed
 * before the Update completed" when the turn itself failed first: the turn's failure carries the reason.
 */
export async function startFailure(client: Client, workflowId: string, err: unknown): Promise<unknown> {
  if (!(err instanceof WorkflowUpdateFailedError)) return err;
  const handle = client.workflow.getHandle(workflowId);
  try {
    if ((await handle.describe()).status.name === 'RUNNING') return err;
    await handle.result();
  } catch (closed) {
    if (closed instanceof WorkflowFailedError) return new TurnFailedError(workflowId, closed);
  }
  return err;
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
