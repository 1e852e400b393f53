/**
 * The workflow's patch IDs (`patched()` / `deprecatePatch()`). Each is recorded as a marker in the
 * history of every turn that took the new path, and replay matches it by this exact string: a
 * misspelling in one file would silently send recorded turns down the old path. So they are
 * spelled here and nowhere else. When each one is deprecated and then deleted is in
 * docs/decisions.md ("Patches and their retirement").
 */
export const PatchId = {
  /** A batch past its bounds is refused before anything runs. */
  boundedBatch: 'bounded-batch',
  /** A turn whose limits are out of range is refused before anything runs. */
  boundedLimits: 'bounded-limits',
  /** A turn whose worker is lost between reconciling and listing its tools reconciles again. */
  listToolsFailover: 'list-tools-failover',
  /** A call whose worker stops heartbeating moves to another worker instead of being retried on the lost one's queue. */
  lostWorkerFailover: 'lost-worker-failover',
  /** One idle timer per idle period instead of a timer per wake-up of the idle loop. */
  oneIdleTimer: 'one-idle-timer',
  /** Calls run without async frames of their own; the idle loop wakes only when a continue-as-new is due. */
  leanCallPath: 'lean-call-path',
  /** An interactive turn keeps only its newest call records in memory and in its result. */
  leanCallRecords: 'lean-call-records',
  /** A turn asked to end its session stops the session's servers on its worker once its calls are done. */
  endSession: 'end-session',
  /** A tool that runs as an MCP task is created once and polled from durable timers, instead of called. */
  mcpTasks: 'mcp-tasks',
  /** A 2025-era task that waits for input gets its questions asked of a person (`taskInput`), instead of being cancelled. */
  mcpTaskInput: 'mcp-task-input',
  /** A 2026-07-28 task's questions (`inputRequests`) go to a person and its answers to the server (`updateTask`), instead of the task being cancelled. */
  mcpTaskUpdates: 'mcp-task-updates',
  /** The polls of a task older than a day wait a share of its age (up to 12 h) instead of at most 5 min. */
  longTaskPolls: 'long-task-polls',
  /** A retry-safe call runs first as a local activity on the worker running the turn, when it holds the session's servers. */
  fastPath: 'fast-path',
  /** A new session's first reconcile prefers the worker running the turn's workflow task. */
  fastPathAffinity: 'fast-path-affinity',
  /** A call whose queue timed out after another call had moved the turn follows it, without reconciling again. */
  followMovedTurn: 'follow-moved-turn',
  /** `endTurn` with `detach` ends the turn without waiting for calls that run as MCP tasks; each is answered as detached. */
  detachTasks: 'detach-tasks',
  /** A call that names a `taskId` takes up that existing MCP task (poll and result) instead of calling the tool. */
  takeTask: 'take-task',
  /** A side-effecting call is sent to the shared queue for eager dispatch to the worker running the turn, when it holds the session's servers. */
  eagerCalls: 'eager-calls',
  /** A call a 2026-07-28 server refused because it runs the tool only as a task is sent again as a task, and the turn's later calls of that tool go straight to one. */
  taskOnRefusal: 'task-on-refusal',
  /** A fast call that ends before anything could cancel it runs without a cancellation scope of its own (fewer workflow promises per call). */
  unscopedFastCall: 'unscoped-fast-call',
} as const;
export type PatchId = (typeof PatchId)[keyof typeof PatchId];
