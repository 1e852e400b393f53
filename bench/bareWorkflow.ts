/**
 * The "bare Temporal" baseline of the side-by-side benchmark: an Update that runs one no-op
 * activity and returns its result. Same shape as a durable-mcp call (Update -> activity -> Update
 * result), without MCP, tool lists, failover or outcome shaping.
 */
import { condition, defineUpdate, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export interface BareActivities {
  noop(input: {
    id: string;
    arguments: Record<string, unknown>;
  }): Promise<{ content: { type: 'text'; text: string }[]; isError: boolean }>;
  /** The fixture's echo over stdio, through the MCP SDK's own client and transport: no durable-mcp code. */
  mcpEcho(input: {
    id: string;
    arguments: Record<string, unknown>;
  }): Promise<{ content: { type: 'text'; text: string }[]; isError: boolean }>;
}

export const bareCallUpdate = defineUpdate<
  { content: { type: 'text'; text: string }[]; isError: boolean },
  [string, Record<string, unknown>]
>('call');
export const bareEndUpdate = defineUpdate<void>('end');
/** The floor: an Update answered at once, with no activity (one durable acknowledgement). */
export const bareFloorUpdate = defineUpdate<string, [string]>('floor');
/** An Update that runs the same no-op as a local activity, in its workflow task. */
export const bareLocalUpdate = defineUpdate<
  { content: { type: 'text'; text: string }[]; isError: boolean },
  [string, Record<string, unknown>]
>('local');
/** An Update that runs a real MCP call (the echo over stdio, the SDK's client) as a local activity. */
export const bareLocalEchoUpdate = defineUpdate<
  { content: { type: 'text'; text: string }[]; isError: boolean },
  [string, Record<string, unknown>]
>('localEcho');

/**
 * `activityQueue`: run the activity on another task queue (as durable-mcp pins its calls to the
 * worker queue that holds the servers); default: the workflow's own queue.
 */
export async function bareTurn(activityQueue?: string, asDurable?: boolean): Promise<number> {
  // `asDurable`: the options a durable-mcp side-effecting call is scheduled with (timeouts that fail a lost worker over, the UI label, one attempt).
  const durableLike = asDurable
    ? {
        heartbeatTimeout: '10s',
        scheduleToStartTimeout: '10s',
        summary: 'mcp__plain__echo',
        retry: {
          maximumAttempts: 1,
          nonRetryableErrorTypes: ['BadRequest', 'ServerUnavailable', 'TemporalTimeout:Heartbeat'],
        },
      }
    : {};
  const { noop } = proxyActivities<BareActivities>({
    startToCloseTimeout: '1m',
    ...durableLike,
    ...(activityQueue ? { taskQueue: activityQueue } : {}),
  });
  let calls = 0;
  let ended = false;
  setHandler(bareCallUpdate, async (id, args) => {
    const result = await noop({ id, arguments: args });
    calls += 1;
    return result;
  });
  const local = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '5s', retry: { maximumAttempts: 1 } });
  setHandler(bareFloorUpdate, (id) => id);
  setHandler(bareLocalUpdate, async (id, args) => {
    const result = await local.noop({ id, arguments: args });
    calls += 1;
    return result;
  });
  setHandler(bareLocalEchoUpdate, async (id, args) => {
    const result = await local.mcpEcho({ id, arguments: args });
    calls += 1;
    return result;
  });
  setHandler(bareEndUpdate, () => {
    ended = true;
  });
  await condition(() => ended);
  return calls;
}
