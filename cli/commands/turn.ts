/** `durable-mcp turn end <turnId>`: ends an interactive turn, optionally without waiting for its MCP tasks. */
import type { Command } from 'commander';
import { outcomeText } from '../../client/transcriptText.js';
import { stripTerminalControls, terminalJson } from '../../text/terminal.js';
import { UsageError } from '../common.js';
import { withCommandSession } from '../commandSession.js';
import { turnIdProblem } from '../turnIds.js';
import { turnListCommand } from './lists.js';

interface EndOptions {
  detach?: boolean;
  endSession?: boolean;
  json?: boolean;
}

async function endTurnCommand(turnId: string, opts: EndOptions): Promise<number> {
  const bad = turnIdProblem(turnId);
  if (bad) throw new UsageError(bad);
  return withCommandSession(async (session) => {
    if (session.mode === 'embedded') {
      process.stderr.write(
        `no worker is running (no durable-mcp dev, no TEMPORAL_ADDRESS): turn "${turnId}" is not open\n`,
      );
      return 1;
    }
    const options = { ...(opts.detach ? { detach: true } : {}), ...(opts.endSession ? { endSession: true } : {}) };
    const result = await session.client.endTurn(turnId, Object.keys(options).length > 0 ? options : undefined);
    if (opts.json) {
      process.stdout.write(`${terminalJson(result, 2)}\n`);
      return 0;
    }
    // Tool output goes to a terminal: it must not be able to drive it.
    for (const call of result.calls)
      process.stdout.write(`[${call.id}] ${call.name}: ${stripTerminalControls(outcomeText(call.outcome))}\n`);
    process.stderr.write(
      `turn ${result.turnId} ended (${result.endedBy}); see it again: durable-mcp transcript ${result.turnId}\n`,
    );
    return 0;
  });
}

/** Adds `durable-mcp turn end` and `turn list` to the program. */
export function registerTurnCommand(program: Command): void {
  const turn = program.command('turn').description('the interactive turns of the workers');
  turn
    .command('end')
    .description('end an interactive turn once its calls are done, and print their outcomes')
    .argument('<turnId>', '<sessionId>/turn-<n>')
    .option(
      '--detach',
      'do not wait for calls that run as MCP tasks: each is answered as detached, its task goes on, and its outcome says how a later turn takes it up (--take-task)',
    )
    .option(
      '--end-session',
      "end the session too: its servers stop once the turn's calls are done (a stdio server's detached task with them)",
    )
    .option('--json', 'print the turn result { turnId, endedBy, calls } as JSON')
    .action(async (turnId: string, opts: EndOptions) => {
      process.exitCode = await endTurnCommand(turnId, opts);
    });
  turn
    .command('list')
    .description("a session's turns in order, each with its state")
    .argument('<sessionId>')
    .option('--json', 'print [{ turnId, status, started, closed? }] as JSON')
    .action(async (sessionId: string, opts: { json?: boolean }) => {
      process.exitCode = await turnListCommand(sessionId, opts);
    });
}
