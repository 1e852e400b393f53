/** `durable-mcp status <sessionId>`: the latest server status of a session. */
import type { Command } from 'commander';
import { stripTerminalControls } from '../../text/terminal.js';
import { UsageError } from '../common.js';
import { withCommandSession } from '../commandSession.js';

async function statusCommand(sessionId: string, opts: { json?: boolean }): Promise<number> {
  return withCommandSession(async (session) => {
    const latest = await session.client.getStatus(sessionId);
    if (!latest) throw new UsageError(`no turns for session "${sessionId}"`);
    if (opts.json) process.stdout.write(`${JSON.stringify(latest, null, 2)}\n`);
    else {
      process.stdout.write(
        `session ${sessionId}, latest turn ${latest.turnId}, reported ${latest.status?.reportedAt ?? 'never'}\n`,
      );
      if (latest.sessionEndedAt !== undefined)
        process.stdout.write(
          `  session ended at ${latest.sessionEndedAt}: its servers were stopped; its next turn starts them again\n`,
        );
      for (const s of latest.sessionEndedAt !== undefined ? [] : (latest.status?.servers ?? [])) {
        process.stdout.write(
          `  ${s.name} [${s.state}] ${s.transport}: ${s.tools.length} tools${s.error ? `; ${stripTerminalControls(s.error)}` : ''}\n`,
        );
      }
    }
    return 0;
  });
}

/** Adds `durable-mcp status` to the program. */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('the latest server status of a session')
    .argument('<sessionId>')
    .option('--json', 'print the status as JSON')
    .action(async (sessionId: string, opts: { json?: boolean }) => {
      process.exitCode = await statusCommand(sessionId, opts);
    });
}
