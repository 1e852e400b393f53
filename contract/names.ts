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
} as const;

/** Activity types, as recorded in `ActivityTaskScheduled` events. */
export const ActivityName = {
  reconcileServers: 'reconcileServers',
  listTools: 'listTools',
  callTool: 'callTool',
  /** The operator's PreToolUse hooks of one call; scheduled only for a tool that has some. */
  preToolUseHooks: 'preToolUseHooks',
  /** The operator's PostToolUse hooks of one call that ran; scheduled only for a tool that has some. */
  postToolUseHooks: 'postToolUseHooks',
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
} as const;

/** The Update ID `Turn.end()` uses, so a retried end is de-duplicated; no call may take it. */
export const END_TURN_UPDATE_ID = 'endTurn';

/** The failure type of a turn that refused its input (a batch past its bounds): never retried. */
export const TURN_INPUT_FAILURE_TYPE = 'InvalidTurnInput';

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
} as const;
export type FailureType = (typeof FailureType)[keyof typeof FailureType];
