/** Ending a session: from a turn asked to end it, and the `dmcpEndSession` workflow for a session with no open turn. */
import { isCancellation, log, proxyActivities } from '@temporalio/workflow';
import {
  MAX_END_SESSION_QUEUES,
  RefusalType,
  type EndSessionWorkflowInput,
  type SessionEnd,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { endSessionOptions } from './activityOptions.js';
import { isScheduleToStartTimeout, refusal } from './failures.js';

/**
 * Asks the worker on `queue` to stop the session's servers; how many it stopped, or undefined when
 * no worker took the task (that worker is gone, and its servers with it).
 */
export async function endSessionOn(queue: string, sessionId: string): Promise<number | undefined> {
  try {
    return (await proxyActivities<Activities>(endSessionOptions(queue)).endSession({ sessionId })).servers;
  } catch (err) {
    if (isScheduleToStartTimeout(err)) return undefined;
    throw err;
  }
}

/**
 * Ends the session of a turn on the turn's worker. A failure is logged, not thrown: the turn's
 * calls ran and their outcomes are its result; the servers then stop at the worker's idle stop.
 */
export async function endTurnSession(queue: string, sessionId: string): Promise<void> {
  try {
    await endSessionOn(queue, sessionId);
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.warn('the session could not be ended; its servers stop when idle', {
      sessionId,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

/** Ends a session on every worker its turns ran on (the workers that may hold its servers). */
export async function dmcpEndSession(input: EndSessionWorkflowInput): Promise<Pick<SessionEnd, 'workers' | 'servers'>> {
  const queues = Array.isArray(input.workerQueues) ? input.workerQueues : [];
  if (
    queues.length > MAX_END_SESSION_QUEUES ||
    queues.some((q) => typeof q !== 'string' || q.length === 0 || q.length > 300)
  ) {
    throw refusal(
      RefusalType.turnInput,
      `workerQueues refused: at most ${MAX_END_SESSION_QUEUES} non-empty task queue names`,
      { field: 'workerQueues' },
    );
  }
  const answers = await Promise.all([...new Set(queues)].map((q) => endSessionOn(q, input.sessionId)));
  const answered = answers.filter((n): n is number => n !== undefined);
  return { workers: answered.length, servers: answered.reduce((sum, n) => sum + n, 0) };
}
