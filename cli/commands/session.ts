/** `durable-mcp session end <sessionId>`: ends a session at once, so its servers stop now. */
import type { Command } from 'commander';
import { SESSION_ID_PATTERN } from '../../contract/index.js';
import { UsageError } from '../common.js';
import { withCommandSession } from '../commandSession.js';
import { sessionListCommand } from './lists.js';
import { terminalJson } from '../../text/terminal.js';

async function endSessionCommand(sessionId: string, opts: { json?: boolean }): Promise<number> {
  if (!SESSION_ID_PATTERN.test(sessionId))
    throw new UsageError(
      `invalid session ID ${JSON.stringify(sessionId)}: use letters, digits, ".", "_", ":" or "-" (at most 128)`,
    );
  return withCommandSession(async (session) => {
    // A dev server started for this command alone has no worker: no server runs for any session.
    if (session.mode === 'embedded') {
      process.stderr.write(
        `no worker is running (no durable-mcp dev, no TEMPORAL_ADDRESS): session "${sessionId}" holds no servers\n`,
      );
      return 0;
    }
    const ended = await session.client.endSession(sessionId);
    if (opts.json) process.stdout.write(`${terminalJson(ended, 2)}\n`);
    else {
      const turns = ended.turnsEnded.length > 0 ? `; open turns ended: ${ended.turnsEnded.join(', ')}` : '';
      process.stdout.write(
        `session ${sessionId} ended: ${ended.servers} server(s) stopped on ${ended.workers} worker(s)${turns}\n`,
      );
    }
    return 0;
  });
}

/** Adds `durable-mcp session end` and `session list` to the program. */
export function registerSessionCommand(program: Command): void {
  const session = program.command('session').description('the sessions of the workers');
  session
    .command('end')
    .description(
      'end a session now: its open turns end and its servers stop (processes, remote sessions) on every worker that holds them',
    )
    .argument('<sessionId>')
    .option('--json', 'print { sessionId, turnsEnded, workers, servers } as JSON')
    .action(async (sessionId: string, opts: { json?: boolean }) => {
      process.exitCode = await endSessionCommand(sessionId, opts);
    });
  session
    .command('list')
    .description('the sessions that have turns, the most recently active first')
    .option('--json', 'print [{ sessionId, turns, latestTurnId, latestStatus, lastStarted }] as JSON')
    .action(async (opts: { json?: boolean }) => {
      process.exitCode = await sessionListCommand(opts);
    });
}
