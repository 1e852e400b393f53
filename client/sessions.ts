/**
 * What the workers have run, read from Temporal's visibility: a session's turns, and the sessions
 * that have turns. Visibility lags behind a start by up to a second.
 */
import type { Client } from '@temporalio/client';
import { MAX_END_SESSION_QUEUES, SESSION_ID_SEARCH_ATTRIBUTE, WorkflowType } from '../contract/index.js';
import { checkSessionId, sessionIdKey } from './turnStart.js';

/** One turn of a session: its latest run's state. */
export interface TurnListing {
  turnId: string;
  /** The latest run's status, lower case: `running`, `completed`, `failed`, `terminated`, ... */
  status: string;
  /** When the turn's first run started (ISO 8601). */
  started: string;
  /** When its latest run closed, if it did. */
  closed?: string;
}

/** One session: how many turns it has and its newest. */
export interface SessionListing {
  sessionId: string;
  turns: number;
  latestTurnId: string;
  /** The newest turn's status, as in {@link TurnListing.status}. */
  latestStatus: string;
  /** When the newest turn started (ISO 8601). */
  lastStarted: string;
}

/** Runs read for one listing at most: a listing is a look, not an export of visibility. */
export const MAX_LISTED_RUNS = 10_000;

interface Run {
  workflowId: string;
  sessionId?: string;
  status: string;
  start: number;
  close?: number;
}

async function runs(client: Client, query: string): Promise<Run[]> {
  const out: Run[] = [];
  for await (const w of client.workflow.list({ query })) {
    out.push({
      workflowId: w.workflowId,
      sessionId: w.typedSearchAttributes.get(sessionIdKey),
      status: w.status.name.toLowerCase(),
      start: w.startTime.getTime(),
      ...(w.closeTime ? { close: w.closeTime.getTime() } : {}),
    });
    if (out.length >= MAX_LISTED_RUNS) break;
  }
  return out;
}

/** The visibility query for a session's workflows of one type (its turns by default). */
export function sessionQuery(sessionId: string, type: string = WorkflowType.agentTurn): string {
  checkSessionId(sessionId);
  return `${SESSION_ID_SEARCH_ATTRIBUTE} = '${sessionId}' AND WorkflowType = '${type}'`;
}

/** When the session was last ended (`TurnClient.endSession` completed), by its start; undefined if never. */
export async function lastSessionEnd(client: Client, sessionId: string): Promise<Date | undefined> {
  let last: number | undefined;
  for (const run of await runs(client, sessionQuery(sessionId, WorkflowType.endSession)))
    if (run.status === 'completed' && (last === undefined || run.start > last)) last = run.start;
  return last === undefined ? undefined : new Date(last);
}

const turnNumber = (turnId: string) => Number(/\/turn-(\d+)$/.exec(turnId)?.[1] ?? 0);

/** A session's turns in turn order; a turn that continued as new is one entry with its latest run's state. */
export async function listTurns(client: Client, sessionId: string): Promise<TurnListing[]> {
  const byId = new Map<string, { first: number; latest: Run }>();
  for (const run of await runs(client, sessionQuery(sessionId))) {
    const seen = byId.get(run.workflowId);
    if (!seen) byId.set(run.workflowId, { first: run.start, latest: run });
    else {
      seen.first = Math.min(seen.first, run.start);
      if (run.start > seen.latest.start) seen.latest = run;
    }
  }
  return [...byId.entries()]
    .sort((a, b) => turnNumber(a[0]) - turnNumber(b[0]) || a[1].first - b[1].first)
    .map(([turnId, { first, latest }]) => ({
      turnId,
      status: latest.status,
      started: new Date(first).toISOString(),
      ...(latest.close !== undefined ? { closed: new Date(latest.close).toISOString() } : {}),
    }));
}

/** The sessions that have turns, the most recently active first. */
export async function listSessions(client: Client): Promise<SessionListing[]> {
  const bySession = new Map<string, { turns: Set<string>; latest: Run }>();
  for (const run of await runs(client, `WorkflowType = '${WorkflowType.agentTurn}'`)) {
    if (run.sessionId === undefined) continue;
    const seen = bySession.get(run.sessionId);
    if (!seen) bySession.set(run.sessionId, { turns: new Set([run.workflowId]), latest: run });
    else {
      seen.turns.add(run.workflowId);
      if (run.start > seen.latest.start) seen.latest = run;
    }
  }
  return [...bySession.entries()]
    .sort((a, b) => b[1].latest.start - a[1].latest.start)
    .map(([sessionId, { turns, latest }]) => ({
      sessionId,
      turns: turns.size,
      latestTurnId: latest.workflowId,
      latestStatus: latest.status,
      lastStarted: new Date(latest.start).toISOString(),
    }));
}

/**
 * The session's newest run (its memo names the worker holding the servers) and how many turns it
 * has: distinct workflow IDs, since a turn that continued as new has several runs.
 */
export async function sessionSummary(
  client: Client,
  sessionId: string,
): Promise<{ latest?: { workflowId: string; start: number; memo?: Record<string, unknown> }; turns: number }> {
  let latest: { workflowId: string; start: number; memo?: Record<string, unknown> } | undefined;
  const ids = new Set<string>();
  for await (const w of client.workflow.list({ query: sessionQuery(sessionId) })) {
    ids.add(w.workflowId);
    if (!latest || w.startTime.getTime() > latest.start)
      latest = { workflowId: w.workflowId, start: w.startTime.getTime(), memo: w.memo };
  }
  return { latest, turns: ids.size };
}

/** The conversation the session's latest turn ended with, read from its memo by describe (visibility lags). */
export async function latestConversation(client: Client, sessionId: string): Promise<string | undefined> {
  const { latest } = await sessionSummary(client, sessionId);
  if (latest === undefined) return undefined;
  const memo = (await client.workflow.getHandle(latest.workflowId).describe()).memo;
  return typeof memo?.conversation === 'string' ? memo.conversation : undefined;
}

/** Turn IDs of a session, oldest first. */
export async function sessionTurns(client: Client, sessionId: string): Promise<string[]> {
  checkSessionId(sessionId);
  const first = new Map<string, number>();
  for await (const w of client.workflow.list({ query: sessionQuery(sessionId) })) {
    const start = w.startTime.getTime();
    if (!first.has(w.workflowId) || start < first.get(w.workflowId)!) first.set(w.workflowId, start);
  }
  return [...first.entries()].sort((a, b) => a[1] - b[1]).map(([id]) => id);
}

/** A session's open turns, and the worker queues its turns ran on, newest first (at most {@link MAX_END_SESSION_QUEUES}). */
export async function openTurnsAndWorkers(
  client: Client,
  sessionId: string,
): Promise<{ open: Set<string>; workerQueues: string[] }> {
  checkSessionId(sessionId);
  const open = new Set<string>();
  const byQueue = new Map<string, number>();
  for await (const w of client.workflow.list({ query: sessionQuery(sessionId) })) {
    if (w.status.name === 'RUNNING') open.add(w.workflowId);
    const queue = w.memo?.workerQueue;
    if (typeof queue === 'string') byQueue.set(queue, Math.max(byQueue.get(queue) ?? 0, w.startTime.getTime()));
  }
  const workerQueues = [...byQueue.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([q]) => q)
    .slice(0, MAX_END_SESSION_QUEUES);
  return { open, workerQueues };
}
