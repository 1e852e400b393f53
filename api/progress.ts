/**
 * The latest progress a running call reported. The activity forwards the server's progress
 * notifications as heartbeat details (`{ progress }`); the call's activity is found by the call ID
 * in its scheduled event, newest first. A call that runs as an MCP task has no activity running
 * between polls: its progress is what the newest task activity found (`createTask`, `pollTask`,
 * `taskInput`), read from the same events.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { ActivityName, type CallOutcome, type TaskPoll, type TaskStarted } from '../contract/index.js';
import { decodeHistoryPayloads } from '../payloads/decodeHistory.js';

const PAGE_SIZE = 64;
/** Scheduled events looked at before giving up: progress is a courtesy, not worth a long scan. */
const MAX_EVENTS = 1024;

/** Activities whose heartbeat details carry a call's progress. */
const HEARTBEATING = new Set<string>([ActivityName.callTool, ActivityName.taskInput]);
/** Activities whose result says where a call's task stands. */
const TASK_STATE = new Set<string>([
  ActivityName.createTask,
  ActivityName.takeTask,
  ActivityName.pollTask,
  ActivityName.taskInput,
]);

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/**
 * A task's state as a call's progress: its ID, status, the server's status message, and a line
 * such as `task 8f2c: working, step 3/5`. Undefined for a result that is not a task's state (an
 * outcome: the call is ending).
 */
export function taskProgress(
  result: TaskStarted | TaskPoll | CallOutcome | undefined,
  taskId: string | undefined,
): Record<string, unknown> | undefined {
  if (!result || 'content' in result) return undefined;
  const id = 'taskId' in result ? result.taskId : taskId;
  if (id === undefined) return undefined;
  return {
    taskId: id,
    status: result.status,
    ...(result.statusMessage !== undefined ? { statusMessage: result.statusMessage } : {}),
    message: `task ${id}: ${result.status}${result.statusMessage ? `, ${result.statusMessage}` : ''}`,
  };
}

export async function callProgress(
  client: Client,
  turnId: string,
  callId: string,
): Promise<Record<string, unknown> | undefined> {
  const converter = client.options.loadedDataConverter;
  const decodeOpts = { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage };
  const described = await client.workflow.getHandle(turnId).describe();
  const pending = (described.raw.pendingActivities ?? []).filter(
    (a) => HEARTBEATING.has(a.activityType?.name ?? '') && a.heartbeatDetails?.payloads?.length,
  );
  const wanted = new Set(pending.map((a) => a.activityId));
  const fromPayload = <T>(payload: temporal.api.common.v1.IPayload | undefined): T | undefined =>
    payload ? converter.payloadConverter.fromPayload<T>(payload) : undefined;
  // Completed events seen (newest first) by the event that scheduled them.
  const completed = new Map<string, HistoryEvent>();
  let nextPageToken: Uint8Array | undefined;
  let seen = 0;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistoryReverse({
      namespace: client.options.namespace,
      execution: { workflowId: turnId },
      maximumPageSize: PAGE_SIZE,
      nextPageToken,
    });
    for (const event of page.history?.events ?? []) {
      const done = event.activityTaskCompletedEventAttributes;
      if (done) completed.set(String(done.scheduledEventId), event);
      const scheduled = event.activityTaskScheduledEventAttributes;
      const type = scheduled?.activityType?.name ?? '';
      const heartbeating = wanted.has(scheduled?.activityId ?? '');
      const result = completed.get(String(event.eventId));
      if (!scheduled || !(heartbeating || (TASK_STATE.has(type) && result) || type === ActivityName.callTool)) continue;
      await decodeHistoryPayloads({ events: [event] }, decodeOpts);
      const input = fromPayload<{ callId?: string; taskId?: string }>(scheduled.input?.payloads?.[0]);
      if (input?.callId !== callId) continue;
      if (heartbeating) {
        const beat = await heartbeatOf(
          pending.find((a) => a.activityId === scheduled.activityId)!,
          decodeOpts,
          fromPayload,
        );
        if (beat) return beat;
      }
      if (TASK_STATE.has(type) && result) {
        await decodeHistoryPayloads({ events: [result] }, decodeOpts);
        return taskProgress(
          fromPayload<TaskStarted | TaskPoll | CallOutcome>(
            result.activityTaskCompletedEventAttributes?.result?.payloads?.[0],
          ),
          input.taskId,
        );
      }
      // The call's own activity (no task): nothing older says more.
      if (type === ActivityName.callTool) return undefined;
    }
    seen += page.history?.events?.length ?? 0;
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken && seen < MAX_EVENTS);
  return undefined;
}

/** The `progress` a pending activity last heartbeated, if any. */
async function heartbeatOf(
  activity: temporal.api.workflow.v1.IPendingActivityInfo,
  decodeOpts: Parameters<typeof decodeHistoryPayloads>[1],
  fromPayload: <T>(payload: temporal.api.common.v1.IPayload | undefined) => T | undefined,
): Promise<Record<string, unknown> | undefined> {
  const details = { payloads: activity.heartbeatDetails!.payloads! };
  await decodeHistoryPayloads({ events: [{ activityTaskScheduledEventAttributes: { input: details } }] }, decodeOpts);
  return fromPayload<{ progress?: Record<string, unknown> }>(details.payloads[0])?.progress;
}
