/**
 * Ends a session at once, so no server is left waiting on an idle client: its open turns end
 * (each stops the session's servers once its calls in flight are done), and every worker the
 * session's turns ran on stops the servers it holds for it.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { WorkflowType, endSessionWorkflowId, type SessionEnd } from '../contract/index.js';
import type { AgentTurnWorkflow, EndSessionWorkflow } from '../contract/definitions.js';
import { findCause } from '../contract/failureCauses.js';
import { openTurnsAndWorkers } from './sessions.js';
import { sendEndTurn } from './turn.js';
import { sessionIdKey } from './turnStart.js';

export async function endSession(client: Client, taskQueue: string, sessionId: string): Promise<SessionEnd> {
  const { open, workerQueues } = await openTurnsAndWorkers(client, sessionId);
  const turnsEnded: string[] = [];
  for (const turnId of open) {
    try {
      await sendEndTurn(client.workflow.getHandle<AgentTurnWorkflow>(turnId), { endSession: true });
      turnsEnded.push(turnId);
    } catch (err) {
      // It closed after it was listed: it has nothing more to end.
      if (!findCause(err, (e): e is WorkflowNotFoundError => e instanceof WorkflowNotFoundError)) throw err;
    }
  }
  if (workerQueues.length === 0) return { sessionId, turnsEnded, workers: 0, servers: 0 };
  const handle = await client.workflow.start<EndSessionWorkflow>(WorkflowType.endSession, {
    // A fresh ID each time, never adopted: another caller of Temporal could start a predictable one
    // first, with no queues to end. Two callers ending the session at once each end it; the second finds less.
    workflowId: endSessionWorkflowId(sessionId, randomUUID()),
    taskQueue: taskQueue,
    // Found by the session's status, which then says when its servers were stopped.
    typedSearchAttributes: [{ key: sessionIdKey, value: sessionId }],
    args: [{ sessionId, workerQueues }],
    workflowIdConflictPolicy: 'FAIL',
    // Bounded: without a worker on the shared queue nothing would ever run it.
    workflowExecutionTimeout: '5m',
  });
  return { sessionId, turnsEnded, ...(await handle.result()) };
}
