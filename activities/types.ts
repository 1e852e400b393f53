import type { ConfigRefs } from '../config/types.js';
import type { CallOutcome, ToolAnnotations, ToolInfo, TurnStatus } from '../mcp/types.js';

export type { CallOutcome, ToolInfo, TurnStatus };

export interface ReconcileInput {
  sessionId: string;
  /** Config references only; the worker reads and resolves them. */
  refs: ConfigRefs;
}

export interface ReconcileResult {
  /** The unique queue of the worker that now holds the session's servers. */
  workerQueue: string;
  status: TurnStatus;
  /** The servers paragraph for the model. */
  serversParagraph: string;
}

export interface ListToolsInput {
  sessionId: string;
}

export interface CallToolInput {
  sessionId: string;
  /** The caller's tool-call ID. */
  callId: string;
  /** Public name, as the model saw it. */
  name: string;
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  annotations?: ToolAnnotations;
  /** MCP request timeout; just under the activity's start-to-close so an MCP timeout is classified. */
  requestTimeoutMs: number;
}

/** Failure types of the activities: the one place that names them. */
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
