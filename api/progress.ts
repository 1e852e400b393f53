/**
 * The latest progress a running call reported. The activity forwards the server's progress
 * notifications as heartbeat details (`{ progress }`); the call's activity is found by the call ID
 * in its scheduled event, newest first.
 */
import type { Client } from '@temporalio/client';
import { ActivityName, type CallToolInput } from '../contract/index.js';
import { decodeHistoryPayloads } from '../payloads/decodeHistory.js';

const PAGE_SIZE = 64;
/** Scheduled events looked at before giving up: progress is a courtesy, not worth a long scan. */
const MAX_EVENTS = 1024;

export async function callProgress(client: Client, turnId: string, callId: string): Promise<Record<string, unknown> | undefined> {
  const converter = client.options.loadedDataConverter;
  const decodeOpts = { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage };
  const described = await client.workflow.getHandle(turnId).describe();
  const pending = (described.raw.pendingActivities ?? []).filter((a) => a.activityType?.name === ActivityName.callTool && a.heartbeatDetails?.payloads?.length);
  if (pending.length === 0) return undefined;
  const wanted = new Set(pending.map((a) => a.activityId));
  let activityId: string | undefined;
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
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (!scheduled || !wanted.has(scheduled.activityId ?? '')) continue;
      await decodeHistoryPayloads({ events: [event] }, decodeOpts);
      const payload = scheduled.input?.payloads?.[0];
      const input = payload ? converter.payloadConverter.fromPayload<CallToolInput>(payload) : undefined;
      if (input?.callId === callId) {
        activityId = scheduled.activityId ?? undefined;
        break;
      }
    }
    seen += page.history?.events?.length ?? 0;
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (!activityId && nextPageToken && seen < MAX_EVENTS);
  const activity = pending.find((a) => a.activityId === activityId);
  if (!activity) return undefined;
  const details = { payloads: activity.heartbeatDetails!.payloads! };
  await decodeHistoryPayloads({ events: [{ activityTaskScheduledEventAttributes: { input: details } }] }, decodeOpts);
  const beat = converter.payloadConverter.fromPayload<{ progress?: Record<string, unknown> }>(details.payloads[0]!);
  return beat?.progress;
}
