/**
 * Names that workflow history, workers and clients must agree on. Each is a durable contract:
 * renaming one breaks every recorded history and every running turn, so they are spelled here
 * and nowhere else. No imports, so the workflow sandbox may use these values.
 */

/** The workflow type of one agent turn. */
export const WorkflowType = {
  agentTurn: 'agentTurn',
  /** The namespace's one shelf of servers and grants. */
  shelf: 'dmcpShelf',
  /** Ends a session on the workers that may hold its servers (`TurnClient.endSession`). */
  endSession: 'dmcpEndSession',
} as const;

/** Activity types, as recorded in `ActivityTaskScheduled` events. */
export const ActivityName = {
  reconcileServers: 'reconcileServers',
  listTools: 'listTools',
  callTool: 'callTool',
  /**
   * A retry-safe call run as a local activity by the worker running the turn's workflow task, when
   * that worker holds the session's servers (the fast path); recorded as a marker, not as events.
   */
  callToolLocal: 'callToolLocal',
  /**
   * The queue of the worker running a new session's first workflow task, as a local activity: its
   * first reconcile goes there, so the servers are on the worker that runs the turn (the fast path).
   */
  workerInfo: 'workerInfo',
  /** The operator's PreToolUse hooks of one call; scheduled only for a tool that has some. */
  preToolUseHooks: 'preToolUseHooks',
  /** The operator's PostToolUse hooks of one call that ran; scheduled only for a tool that has some. */
  postToolUseHooks: 'postToolUseHooks',
  /** Stops one session's servers on the worker whose queue it runs on; scheduled only to end a session. */
  endSession: 'endSession',
  /**
   * Hands a person's answer to the `callTool` activity that holds a 2025-era server's open
   * `elicitation/create`; scheduled on the worker running that call, only for such a question.
   */
  deliverInputAnswer: 'deliverInputAnswer',
  /** Sends a call as an MCP task and returns the task's ID, TTL and poll interval; scheduled only for tools that run as tasks. */
  createTask: 'createTask',
  /** Reads one MCP task's status (`tasks/get`); one per poll of the turn's durable timer. */
  pollTask: 'pollTask',
  /** Fetches a finished MCP task's result (`tasks/result`), once. */
  taskResult: 'taskResult',
  /** Cancels an MCP task whose call or turn was cancelled (`tasks/cancel`). */
  cancelTask: 'cancelTask',
  /**
   * Holds a 2025-era task's `tasks/result` while the task waits for input: the server's questions
   * come over it and go to a person through the turn; ends once the task goes on (or ends).
   */
  taskInput: 'taskInput',
  /** Sends the answers to a 2026-07-28 task's questions (`tasks/update`); the turn waited for them with nothing running. */
  updateTask: 'updateTask',
  /**
   * Takes up an MCP task that a call of an earlier turn left running (detached): checks the call as
   * `callTool` would and reads the task's status once (`tasks/get`); never creates a task.
   */
  takeTask: 'takeTask',
  /** One step of a model turn: the model asked once, on any worker; the conversation stays in the payload store. */
  modelStep: 'modelStep',
} as const;
export type ActivityName = (typeof ActivityName)[keyof typeof ActivityName];

/** Workflow Updates of a turn. */
export const UpdateName = {
  /** Answered once the servers are reconciled and the tool list is frozen (update-with-start). */
  turnStarted: 'turnStarted',
  /** One tool call; its Update ID is the model's tool-call ID. */
  callTool: 'callTool',
  endTurn: 'endTurn',
  cancelCall: 'cancelCall',
  /** The answer to one input request of a running call; its Update ID is the request ID. */
  answerInput: 'answerInput',
  /**
   * Sent by a running `callTool` activity to its own turn when a 2025-era server asks a person
   * mid-call (`elicitation/create`): records the question and returns its request ID.
   */
  legacyInputAsked: 'legacyInputAsked',
} as const;

/** The Update ID `Turn.end()` uses, so a retried end is de-duplicated; no call may take it. */
export const END_TURN_UPDATE_ID = 'endTurn';
/**
 * The Update ID of `endTurn` with `detach`: its own, so a detach sent while a plain end waits for a
 * task is not taken for a retry of that end. No call may take it either.
 */
export const END_TURN_DETACH_UPDATE_ID = 'endTurn:detach';

/**
 * The workflow ID of one end of a session: no turn ID (`<sessionId>/turn-<n>`) can be it, and
 * `unique` (a random UUID) makes it one no other caller can start first for the client to adopt.
 */
export function endSessionWorkflowId(sessionId: string, unique: string): string {
  return `${sessionId}/end-${unique}`;
}

/** The failure type of a turn that refused its input (a batch past its bounds): never retried. */
export const TURN_INPUT_FAILURE_TYPE = 'InvalidTurnInput';

/**
 * Failure types of what a workflow refuses (`ApplicationFailure.type`, never retried): a turn's
 * input, an Update its validator turns away. Clients, the API and the CLI decide what to say by
 * these types, never by a message's text.
 */
export const RefusalType = {
  /** The turn's input (a batch, limits, a continuation) is refused: the turn fails before anything runs. */
  turnInput: TURN_INPUT_FAILURE_TYPE,
  /** A call or an end sent to a turn that has ended. */
  turnEnded: 'TurnEnded',
  /** A call request out of its bounds (ID, name, arguments). */
  callRequest: 'InvalidCallRequest',
  /** A shelf change the shelf refuses (bad name, missing proof, a name taken by another entry). */
  shelfChange: 'ShelfChangeRefused',
  /** An answer to an input request that is not open, or that does not fit its schema (the field is named). */
  inputAnswer: 'InvalidInputAnswer',
  /** A 2025-era question reported for a call that is not running, or that cannot be asked. */
  inputReport: 'InvalidInputReport',
} as const;
export type RefusalType = (typeof RefusalType)[keyof typeof RefusalType];

/**
 * What a refusal may carry as its first detail (`ApplicationFailure.details[0]`): the input field
 * it refuses (`limits.idleMs`, `calls`), so a caller can point at it without reading the message.
 */
export interface RefusalDetail {
  field: string;
}

/** Workflow Queries of a turn. */
export const QueryName = { status: 'status', shelf: 'shelf' } as const;

/** The shelf workflow's Update: one change of servers or grants. */
export const ShelfUpdateName = { change: 'changeShelf' } as const;

/** The search attribute every turn sets: its session ID (Keyword). */
export const SESSION_ID_SEARCH_ATTRIBUTE = 'DmcpSessionId';

/** Failure types of the activities (`ApplicationFailure.type`). */
export const FailureType = {
  /** Config file or spec refused (explicit layers are fatal). */
  Config: 'ConfigError',
  /** Unknown tool, invalid params, method not found: never retried. */
  BadRequest: 'BadRequest',
  /** The server is not running on this worker: the call never started. */
  ServerUnavailable: 'ServerUnavailable',
  /** The MCP request timed out: the call may have had an effect. */
  ToolTimeout: 'ToolTimeout',
  /** The connection or process was lost during the call. */
  Transport: 'TransportFailure',
  /** A fast-path call reached a worker that does not hold the session's servers: nothing ran, the regular path takes it. */
  FastPathMiss: 'FastPathMiss',
  /** A fast-path call's server asked a person mid-call, which a local activity cannot wait for: the regular path runs it again. */
  FastPathAsksPerson: 'FastPathAsksPerson',
  /** A shared call reached a worker that cannot serve it for the turn: nothing ran, the holder takes it. */
  SharedMiss: 'SharedMiss',
  /** A model's endpoint was rate limited, failed or unreachable: the step is retried, after its `Retry-After` when given. */
  ModelUnavailable: 'ModelUnavailable',
  /** A model's endpoint refused the request (4xx): the same request would be refused again, so the turn ends. */
  ModelRefused: 'ModelRefused',
} as const;
export type FailureType = (typeof FailureType)[keyof typeof FailureType];

// --- the rules of names every process checks (config, the shelf workflow, the API, the client) ---

/** Longest server name outside plugins; keeps public tool names well under 64 characters. */
export const MAX_SERVER_NAME_LENGTH = 32;

/**
 * The shape {@link serverNameProblem} accepts (its length aside), as one pattern without
 * lookaround, so an OpenAPI document can carry it and test generators can produce names from it.
 */
export const SERVER_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*$/;

/**
 * Checks a server name: starts with a letter; letters, digits, single `_` or `-` between
 * them (never `__`, which separates the parts of tool names); at most 32 characters.
 * Returns the problem in words, or undefined when the name is fine.
 */
export function serverNameProblem(name: string, maxLength: number = MAX_SERVER_NAME_LENGTH): string | undefined {
  const shown = JSON.stringify(name);
  if (name === '') return 'server name is empty';
  if (!/^[A-Za-z]/.test(name)) return `server name ${shown} must start with a letter (A-Z or a-z)`;
  const bad = [...name].find((c) => !/[A-Za-z0-9_-]/.test(c));
  if (bad !== undefined) {
    return `server name ${shown} contains ${JSON.stringify(bad)}; use only ASCII letters, digits, "_" or "-"`;
  }
  if (/[_-]{2}/.test(name)) {
    return `server name ${shown} has two separators in a row ("__" separates the parts of tool names); use a single "_" or "-"`;
  }
  if (!SERVER_NAME_PATTERN.test(name)) return `server name ${shown} must end with a letter or digit`;
  if (name.length > maxLength)
    return `server name ${shown} is ${name.length} characters long; at most ${maxLength} are allowed`;
  return undefined;
}

/** A session ID: it is part of workflow IDs and the search attribute, so it stays short and plain. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** How many single-character edits turn `a` into `b` (Levenshtein distance). */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/**
 * The one candidate a mistyped `name` most likely meant, for a "did you mean": the same name in
 * another case, else the only public tool name that ends in `__<name>` (a tool named without its
 * server), else the nearest within `maxEdits` edits (ignoring case) when no other is as near.
 */
export function closestName(name: string, candidates: Iterable<string>, maxEdits = 2): string | undefined {
  const all = [...candidates];
  const lower = name.toLowerCase();
  const sameCase = all.find((c) => c.toLowerCase() === lower);
  if (sameCase !== undefined) return sameCase;
  const bySuffix = all.filter((c) => c.toLowerCase().endsWith(`__${lower}`));
  if (bySuffix.length === 1) return bySuffix[0];
  let best: string | undefined;
  let bestDistance = maxEdits + 1;
  let tied = false;
  for (const c of all) {
    const d = editDistance(c.toLowerCase(), lower);
    if (d < bestDistance) [best, bestDistance, tied] = [c, d, false];
    else if (d === bestDistance) tied = true;
  }
  return tied ? undefined : best;
}

/**
 * An MCP input schema as frameworks expect a tool's parameters: always an object schema with
 * `properties` (some servers send `{ "type": "object" }` alone, which model APIs refuse).
 */
export function objectSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return { ...schema, type: 'object', properties: (schema.properties as Record<string, unknown> | undefined) ?? {} };
}
