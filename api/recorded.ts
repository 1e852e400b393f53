/**
 * What a call ID was first sent with, read back from the turn's history. A call sent again with
 * the same ID is de-duplicated by Temporal (the Update ID is the call ID) before the turn's
 * validator sees it, so only history can tell a retry from a different call that reused the ID.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { UpdateName, type CallRequest, type TurnInput } from '../contract/index.js';
import { decodeHistoryPayloads } from '../payloads/decodeHistory.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What history says a call ID was sent with: its fingerprint, or that it ran in an earlier run whose arguments are not carried. */
export type RecordedCall = { fingerprint: string } | { earlier: true };

/** Reads newest first, a page at a time: the call just accepted sits near the end. */
const PAGE_SIZE = 32;

/** JSON with object keys sorted, so two requests compare by value. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/**
 * A call's identity besides its ID: its tool and arguments (absent arguments are `{}`), whatever the
 * key order, and the task it takes up, if any (a call without one hashes as it always did).
 */
export function callFingerprint(request: Pick<CallRequest, 'name' | 'arguments' | 'taskId'>): string {
  const parts: unknown[] = [request.name, request.arguments ?? {}];
  if (request.taskId !== undefined) parts.push(request.taskId);
  return createHash('sha256').update(canonicalJson(parts)).digest('hex');
}

/** What a run carried over from the runs before it (continue-as-new). */
interface Carried {
  calls: Map<string, string>;
  earlier: Set<string>;
}

export interface CallRecords {
  /**
   * What a call ID was first sent with in the turn's run `runId` (default: the latest): carried
   * into the run by continue-as-new (the run's input), else the one Update the run accepted under
   * that ID (the end of history, read newest first, at the same time). Undefined when neither.
   */
  recorded(turnId: string, callId: string, runId?: string): Promise<RecordedCall | undefined>;
}

/**
 * Reads call records from history. What a run carried over never changes, so it is kept per run ID
 * (a bounded map, up to `maxRuns`): only a run's first call pays for reading its input.
 */
export function createCallRecords(client: Client, options: { maxRuns?: number } = {}): CallRecords {
  const maxRuns = options.maxRuns ?? 256;
  const carriedByRun = new Map<string, Promise<Carried | undefined>>();
  const decode = async <T>(
    event: HistoryEvent,
    pick: (e: HistoryEvent) => temporal.api.common.v1.IPayload | null | undefined,
  ): Promise<T | undefined> => {
    const converter = client.options.loadedDataConverter;
    await decodeHistoryPayloads(
      { events: [event] },
      { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage },
    );
    const payload = pick(event);
    return payload ? converter.payloadConverter.fromPayload<T>(payload) : undefined;
  };
  const readCarried = async (turnId: string, runId: string | undefined): Promise<Carried | undefined> => {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId: turnId, runId },
      maximumPageSize: 1,
    });
    const first = page.history?.events?.[0];
    // Only a run that continued from another carries earlier calls: skip decoding the others' input.
    if (!first?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId) return undefined;
    const input = await decode<TurnInput>(
      first,
      (e) => e.workflowExecutionStartedEventAttributes?.input?.payloads?.[0],
    );
    return {
      calls: new Map((input?.continued?.recent ?? []).map((r) => [r.id, callFingerprint(r)])),
      earlier: new Set(input?.continued?.earlierIds ?? []),
    };
  };
  const carriedOf = (turnId: string, runId: string | undefined): Promise<Carried | undefined> => {
    if (!runId) return readCarried(turnId, runId);
    let entry = carriedByRun.get(runId);
    if (!entry) {
      entry = readCarried(turnId, runId);
      carriedByRun.set(runId, entry);
      entry.catch(() => carriedByRun.delete(runId));
      if (carriedByRun.size > maxRuns) carriedByRun.delete(carriedByRun.keys().next().value!);
    }
    return entry;
  };
  const accepted = async (
    turnId: string,
    callId: string,
    runId: string | undefined,
  ): Promise<RecordedCall | undefined> => {
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await client.workflowService.getWorkflowExecutionHistoryReverse({
        namespace: client.options.namespace,
        execution: { workflowId: turnId, runId },
        maximumPageSize: PAGE_SIZE,
        nextPageToken,
      });
      for (const event of page.history?.events ?? []) {
        const request = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
        if (request?.meta?.updateId === callId && request.input?.name === UpdateName.callTool) {
          const sent = await decode<CallRequest>(
            event,
            (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0],
          );
          return sent ? { fingerprint: callFingerprint(sent) } : undefined;
        }
        if (event.workflowExecutionStartedEventAttributes) {
          const input = await decode<TurnInput>(
            event,
            (e) => e.workflowExecutionStartedEventAttributes?.input?.payloads?.[0],
          );
          const batch = input?.batch?.flat().find((r) => r.id === callId);
          return batch ? { fingerprint: callFingerprint(batch) } : undefined;
        }
      }
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    return undefined;
  };
  return {
    async recorded(turnId, callId, runId) {
      const [carried, inRun] = await Promise.all([carriedOf(turnId, runId), accepted(turnId, callId, runId)]);
      const fingerprint = carried?.calls.get(callId);
      if (fingerprint) return { fingerprint };
      if (carried?.earlier.has(callId)) return { earlier: true };
      return inRun;
    },
  };
}
