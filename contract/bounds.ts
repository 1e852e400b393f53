import type { TurnLimits } from './turn.js';

/**
 * How deep JSON may nest where it enters history (call arguments, tool schemas, results). JSON
 * nested a few thousand levels deep parses but exhausts the stack when serialized again, which
 * would fail a workflow task or an activity; real data nests a handful of levels.
 */
export const MAX_NESTING_DEPTH = 64;

/** Whether `value` is a JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` nests objects or arrays deeper than `max` levels. Iterative: no stack to exhaust. */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * The range of each turn limit, in whole numbers (milliseconds, or calls). The workflow refuses a
 * turn whose limits fall outside (`TURN_INPUT_FAILURE_TYPE`), so a client that bypasses the API's
 * checks gets the same answer. The heartbeat timeout's floor is what a worker can keep up with:
 * it beats at half the timeout, and the SDK sends beats at most every 80 % of it.
 */
export const TURN_LIMIT_RANGES = {
  toolTimeoutMs: { min: 1, max: 86_400_000 },
  heartbeatTimeoutMs: { min: 1000, max: 3_600_000 },
  scheduleToStartMs: { min: 1, max: 3_600_000 },
  idleMs: { min: 1000, max: 86_400_000 },
  // Temporal allows 2,000 Updates per run; the run continues only once no call is in flight, so
  // the calls that arrive meanwhile need room above the count.
  continueAsNewAfterCalls: { min: 1, max: 1500 },
  inputTimeoutMs: { min: 1000, max: 30 * 86_400_000 },
  // A legacy wait holds a connection and a worker slot: hours at most, never days.
  legacyInputTimeoutMs: { min: 1000, max: 6 * 3_600_000 },
} as const satisfies Record<keyof TurnLimits, { min: number; max: number }>;

/** The heartbeat timeout of a turn whose limits set none. */
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 10_000;

/**
 * The turn's workflow task timeout: its heartbeat timeout, between 2 s and Temporal's default 10 s.
 * A worker that dies while it holds a workflow task (a fast-path call runs inside one) is noticed
 * only when that task times out, so with a short heartbeat timeout the task timeout follows it: the
 * SDK keeps a task with a longer local activity alive by completing it at 80 % of the timeout. The
 * 2 s floor is for replay: a task that replays a long turn on a loaded worker must finish within it.
 * The client sets it when it starts the turn.
 */
export function turnTaskTimeoutMs(limits: Pick<TurnLimits, 'heartbeatTimeoutMs'> | undefined): number {
  return Math.min(10_000, Math.max(2_000, limits?.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS));
}

/**
 * Calls of one parallel batch group. Temporal allows 2,000 pending activities per run; a group is
 * scheduled all at once, and each call may fail over once, so 100 leaves a wide margin and is more
 * parallelism than one session's servers serve well anyway.
 */
export const MAX_BATCH_GROUP_CALLS = 100;
/**
 * Calls of one batch turn. A batch turn never continues as new and its result repeats every
 * outcome, so its calls, history events and result grow together; 1,000 calls of a few events each
 * stay far below Temporal's 51,200-event limit.
 */
export const MAX_BATCH_CALLS = 1000;
/** Length of a call ID (the model's tool-call ID; providers use a few dozen characters). */
export const MAX_CALL_ID_CHARS = 256;
/** Length of a public tool name (`mcp__<server>__<tool>`; providers cap names at 64 to 128). */
export const MAX_TOOL_NAME_CHARS = 256;
/** Worker queues one end of a session asks at most: those of the session's newest turns. */
export const MAX_END_SESSION_QUEUES = 16;
