/** `durable-mcp session list` and `durable-mcp turn list <sessionId>`: what the workers have run. */
import { SESSION_ID_PATTERN } from '../../contract/index.js';
import { stripTerminalControls, terminalJson } from '../../text/terminal.js';
import { UsageError } from '../common.js';
import { withCommandSession } from '../commandSession.js';

/** Prints a session's turns, one per line: ID, status, started (and closed). */
export async function turnListCommand(sessionId: string, opts: { json?: boolean }): Promise<number> {
  if (!SESSION_ID_PATTERN.test(sessionId))
    throw new UsageError(
      `invalid session ID ${JSON.stringify(sessionId)}: use letters, digits, ".", "_", ":" or "-" (at most 128)`,
    );
  return withCommandSession(async (session) => {
    const turns = await session.client.listTurns(sessionId);
    if (opts.json) process.stdout.write(`${terminalJson(turns, 2)}\n`);
    else if (turns.length === 0)
      process.stderr.write(`no turns for session ${JSON.stringify(sessionId)} on ${session.address}\n`);
    for (const t of opts.json ? [] : turns)
      process.stdout.write(`${t.turnId}  ${t.status}  started ${t.started}${t.closed ? `, closed ${t.closed}` : ''}\n`);
    return 0;
  });
}

/** Prints the sessions that have turns, the most recently active first. */
export async function sessionListCommand(opts: { json?: boolean }): Promise<number> {
  return withCommandSession(async (session) => {
    const sessions = await session.client.listSessions();
    if (opts.json) process.stdout.write(`${terminalJson(sessions, 2)}\n`);
    else if (sessions.length === 0) process.stderr.write(`no sessions on ${session.address}\n`);
    for (const s of opts.json ? [] : sessions)
      process.stdout.write(
        `${stripTerminalControls(s.sessionId)}  ${s.turns} turn(s)  latest ${s.latestTurnId} ${s.latestStatus}, started ${s.lastStarted}\n`,
      );
    return 0;
  });
}
