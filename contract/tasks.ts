/** What the MCP task activities take and return: recorded in history, so a durable contract. */
import type { InputRequestSpec } from './inputs.js';
import type { CallToolInput } from './turn.js';

/** An MCP task's status as its server reports it (2025-11-25 `tasks/get`). */
export type TaskState = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/**
 * A 2026-07-28 task's questions, read with its status when it is `input_required` (the extension's
 * `inputRequests`, answered with `tasks/update`). Absent for a 2025-era task, whose questions come
 * over `tasks/result` instead (see `taskInput`).
 */
export interface TaskQuestions {
  /** What a person must answer, by the server's key (elicitations; scrubbed). */
  inputRequests?: InputRequestSpec[];
  /** Answers the worker gave itself (roots), sent along with the person's, by key. */
  ownResponses?: Record<string, unknown>;
  /** Set instead when the task asks what no person can answer here (sampling), saying what. */
  refused?: string;
}

/**
 * The details of a `BadRequest` failure (`ApplicationFailure.details[0]`) that says more than its
 * type. The type stays `BadRequest`, so workflow code that does not read the details still ends the
 * call as a bad request.
 */
export interface BadRequestDetails {
  /**
   * A 2026-07-28 server runs the tool only as an MCP task, and refused an ordinary call (`-32021`
   * naming the tasks extension): the call did not run, so it may be sent again as a task.
   */
  taskOnly?: boolean;
}

/** `createTask`: the task the server created for a call, as recorded. */
export interface TaskStarted extends TaskQuestions {
  kind: 'task';
  taskId: string;
  /** How long the server keeps the task after it was created (ms); null: unlimited; absent: not said. */
  ttlMs?: number | null;
  /** The server's suggested poll interval (ms), when it gave one. */
  pollIntervalMs?: number;
  status: TaskState;
  statusMessage?: string;
  /**
   * A stdio server's process run that holds the task: a task lives only as long as that process,
   * so a poll that finds another process reports the task lost. Absent for remote servers.
   */
  serverInstance?: string;
  /** When the server created the task (its own clock, ISO), when it said; set only by `takeTask`. */
  createdAt?: string;
}

/** `pollTask`, `taskResult`, `cancelTask`: one task of one call. */
export interface TaskRef {
  sessionId: string;
  /** See `ReconcileInput.firstRunId`. */
  firstRunId: string;
  callId: string;
  /** Public name, as the model saw it. */
  name: string;
  server: string;
  tool: string;
  taskId: string;
  serverInstance?: string;
  /** MCP request timeout of each task request. */
  requestTimeoutMs: number;
}

/**
 * `pollTask`: what one poll found. `lost`: the stdio process that ran the task is gone; `unknown`:
 * the server no longer knows the task (its TTL ran out, or it was dropped).
 */
export interface TaskPoll extends TaskQuestions {
  status: TaskState | 'lost' | 'unknown';
  statusMessage?: string;
  pollIntervalMs?: number;
  /**
   * Set by `taskInput` of workers that did not yet route a 2026-07-28 task's questions (which come
   * in `inputRequests`, not over `tasks/result`); read only so that turns recorded then replay.
   */
  cannotAsk?: true;
}

/** `createTask` takes what `callTool` takes. */
export type CreateTaskInput = CallToolInput;

/** `taskInput`: the task whose questions to ask, and the longest the activity may hold its `tasks/result`. */
export interface TaskInputRef extends TaskRef {
  waitMs: number;
}

/** `updateTask`: the answers to a 2026-07-28 task's questions (`tasks/update`), by the server's key. */
export interface UpdateTaskInput extends TaskRef {
  inputResponses: Record<string, unknown>;
}

/** `takeTask`: the call that takes the task up (checked like any call) and the task's ID. */
export interface TakeTaskInput extends CallToolInput {
  taskId: string;
}

/** Length of a task ID a call may name (servers use UUIDs or hex of a few dozen characters). */
export const MAX_TASK_ID_CHARS = 256;

/**
 * Why `taskId` cannot name a task, or undefined when it can. Visible ASCII only: a task ID travels in
 * JSON-RPC and, to a 2026-07-28 server over HTTP, in the `Mcp-Name` header.
 */
export function taskIdProblem(taskId: unknown): string | undefined {
  if (typeof taskId !== 'string' || taskId === '') return 'taskId must be a non-empty string';
  if (taskId.length > MAX_TASK_ID_CHARS) return `taskId is ${taskId.length} characters; at most ${MAX_TASK_ID_CHARS}`;
  if (!/^[\x21-\x7e]+$/.test(taskId))
    return 'taskId may hold only visible ASCII characters (no spaces or control characters)';
  return undefined;
}
