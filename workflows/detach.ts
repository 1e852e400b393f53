/**
 * A turn that ends without waiting for its MCP tasks (`endTurn` with `detach`), and what a later
 * turn reads when it takes such a task up. The tasks go on on their servers; the turn's history
 * keeps their IDs, and each detached call's outcome says how to fetch the result.
 */
import {
  END_TURN_DETACH_UPDATE_ID,
  taskIdProblem,
  type CallOutcome,
  type CallRequest,
  type DetachedTask,
  type TaskStarted,
  type ToolInfo,
} from '../contract/index.js';
import { errorOutcome } from './failures.js';
import type { TurnContext, TurnState } from './turnState.js';

/**
 * Detaches every call whose task is being followed now (its scope is cancelled; the task is not),
 * and every task created from here on, at creation. Calls that are not tasks are still waited for.
 */
export function detachTasks(state: TurnState): void {
  state.detachTasks = true;
  for (const id of state.followedTasks.keys()) {
    state.detached.add(id);
    state.running.get(id)?.cancel();
  }
}

/**
 * What the turn's call Update refuses besides {@link callRequestProblem}: a task ID that cannot be
 * one, and the ID that ends the turn with `detach`. A refused Update leaves no trace in history.
 */
export function takeUpProblem(request: Pick<CallRequest, 'id' | 'taskId'>): string | undefined {
  if (request.id === END_TURN_DETACH_UPDATE_ID)
    return `call id "${END_TURN_DETACH_UPDATE_ID}" is reserved for ending the turn; use another id`;
  if (request.taskId === undefined) return undefined;
  const problem = taskIdProblem(request.taskId);
  return problem ? `call ${request.id}: ${problem}` : undefined;
}

/** How the turn reaches `server`, from its latest reconcile (a continued run has only its start's status). */
export function transportOf(ctx: TurnContext, server: string): string | undefined {
  return (ctx.state.lastReconcile?.status ?? ctx.state.start?.status)?.servers.find((s) => s.name === server)
    ?.transport;
}

/** Where a detached task lives and when its server forgets it: the parts of its outcome. */
export function detachedTask(
  ctx: TurnContext,
  tool: Pick<ToolInfo, 'name' | 'server'>,
  task: Pick<TaskStarted, 'taskId' | 'ttlMs'>,
  createdAtMs: number,
): DetachedTask {
  const transport = transportOf(ctx, tool.server);
  return {
    taskId: task.taskId,
    server: tool.server,
    sessionId: ctx.input.sessionId,
    remote: transport !== undefined && transport !== 'stdio',
    ...(typeof task.ttlMs === 'number' ? { expiresAt: new Date(createdAtMs + task.ttlMs).toISOString() } : {}),
    takeUp: { name: tool.name, taskId: task.taskId },
  };
}

/**
 * What the model (and the caller) reads of a call detached from its turn: that the task goes on,
 * until when, and exactly which call takes it up, from where. `sessionEnds`: the turn also ends its
 * session, which stops a stdio server and so its task.
 */
export function detachedMessage(name: string, d: DetachedTask, sessionEnds: boolean): string {
  const kept =
    d.expiresAt !== undefined ? `; the server keeps it until ${d.expiresAt} (its TTL)` : '; the server gave no TTL';
  const call = JSON.stringify({ id: '<a new call ID>', name: d.takeUp.name, taskId: d.takeUp.taskId });
  const head = `${name}: the turn ended without waiting for this call (detached): its task ${d.taskId} goes on on server "${d.server}"${kept}.`;
  if (!d.remote && sessionEnds) {
    return `${head} Its result cannot be fetched: the session "${d.sessionId}" ends with this turn, and a stdio server's task ends with its process.`;
  }
  const where = d.remote
    ? `a later turn of any session whose server entry reaches the same server with the same credentials`
    : `a later turn of session "${d.sessionId}" (a stdio server's task lives only as long as its process: before the session ends or its servers stop when idle)`;
  // The command line only when it can be pasted as it is (a server chooses its task IDs).
  const cli =
    SHELL_SAFE.test(d.takeUp.name) && SHELL_SAFE.test(d.taskId)
      ? ` (CLI: durable-mcp run --session ${d.sessionId} --take-task '${d.takeUp.name} ${d.taskId}' with the same servers)`
      : '';
  return `${head} To fetch its result, send the call ${call} in ${where}; its result becomes that call's outcome${cli}.`;
}

const SHELL_SAFE = /^[A-Za-z0-9._:@/+=-]+$/;

/** The outcome of a call detached from its turn, timed from the call's start. */
export function detachedOutcome(
  name: string,
  d: DetachedTask,
  sessionEnds: boolean,
  startedAtMs: number,
  nowMs: number,
): CallOutcome {
  return {
    ...errorOutcome('detached', detachedMessage(name, d, sessionEnds), nowMs - startedAtMs),
    startedAt: new Date(startedAtMs).toISOString(),
    detached: d,
  };
}

/** What a call that names a task reads when its server does not know it. Nothing ran. */
export function unknownTaskOutcome(
  name: string,
  server: string,
  remote: boolean,
  taskId: string,
  said?: string,
): CallOutcome {
  const why = remote
    ? 'it expired (a server forgets a task after its TTL), or it never existed on this server'
    : "it expired (a server forgets a task after its TTL), it never existed, or it lived in a server process that has stopped since (a stdio server's task ends with its process)";
  return errorOutcome(
    'bad_request',
    `${name}: server "${server}" does not know task ${taskId}: ${why}${said ? ` (the server said: ${said})` : ''}; nothing was taken up`,
  );
}
