/** A turn's transcript read from Temporal: the runs of its chain, fetched, decoded and joined. */
import type { Client } from '@temporalio/client';
import { buildTranscript, type Transcript } from './transcript.js';

/** `ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW`: the run was made by the workflow continuing as new (not a retry or cron run). */
const CONTINUED_BY_WORKFLOW = 1;

/** See {@link TurnClient.transcript}. */
export async function turnTranscript(client: Client, turnId: string): Promise<Transcript> {
  const converter = client.options.loadedDataConverter;
  const listed: { runId: string; start: number }[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = '${turnId.replace(/'/g, "\\'")}'` })) {
    listed.push({ runId: w.runId, start: w.startTime.getTime() });
  }
  // Visibility can lag a just-started turn: then the latest run, as the service names it.
  const latest = listed.sort((a, b) => b.start - a.start)[0]?.runId;
  const parts: Transcript[] = [];
  const chain = new Set<string>();
  // Loaded here: only transcripts need it, and it costs one-shot commands their start-up.
  const { decodeHistoryPayloads } = await import('../payloads/decodeHistory.js');
  for (let runId = latest; ; ) {
    const history = await client.workflow.getHandle(turnId, runId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    chain.add(runId ?? started?.originalExecutionRunId ?? '');
    await decodeHistoryPayloads(history, {
      codecs: converter.payloadCodecs,
      externalStorage: converter.externalStorage,
    });
    parts.unshift(buildTranscript(turnId, history, converter.payloadConverter));
    // Only a continue-as-new of the workflow itself links runs of one turn; a cron run or a retry
    // attempt is a new start with its caller's input.
    const previous = started?.continuedExecutionRunId;
    if (!previous || started.initiator !== CONTINUED_BY_WORKFLOW || chain.has(previous)) break;
    runId = previous;
  }
  const [first, last] = [parts[0]!, parts[parts.length - 1]!];
  // A call retried after continue-as-new was answered from the record: it is the same call.
  const seen = new Set<string>();
  const calls = parts.flatMap((p) => p.calls).filter((c) => !seen.has(c.id) && seen.add(c.id));
  const otherRuns = listed.filter((r) => !chain.has(r.runId)).map((r) => r.runId);
  return {
    ...last,
    status: first.status,
    serversParagraph: first.serversParagraph,
    tools: first.tools,
    sessionId: first.sessionId,
    calls,
    ...(otherRuns.length > 0 ? { otherRuns } : {}),
  };
}
