#!/usr/bin/env node
/**
 * The `durable-mcp` program: its commands (one file each under commands/) and the one place that
 * turns an error into a line on stderr and an exit code: 0, 1 for a failure, 2 for a refusal of
 * the command line or of the settings.
 */
import { Command, CommanderError } from 'commander';
import { ConnectionConfigError } from '../connection/index.js';
import { SettingsError, loadSettings } from '../settings/index.js';
import { UsageError, packageVersion } from './common.js';
import { registerAnswerCommand } from './commands/answer.js';
import { registerApiCommand } from './commands/api.js';
import { registerDevCommand } from './commands/dev.js';
import { registerMcpCommand } from './commands/mcp.js';
import { registerPayloadsCommand } from './commands/payloads.js';
import { registerRunCommand } from './commands/run.js';
import { registerChatCommand } from './commands/modelTurn.js';
import { registerSessionCommand } from './commands/session.js';
import { registerSetupCommand } from './commands/setup.js';
import { registerStatusCommand } from './commands/status.js';
import { registerTranscriptCommand } from './commands/transcript.js';
import { registerTurnCommand } from './commands/turn.js';
import { registerWorkerCommand } from './commands/worker.js';

/** The program with every command; `exitOverride` hands commander's own exits to {@link main}. */
export function buildProgram(): Command {
  const program = new Command('durable-mcp')
    .description('Durable tool executor for AI agents: every MCP tool call is a Temporal activity.')
    .showHelpAfterError('(run with --help for usage)')
    .version(packageVersion())
    .exitOverride();
  registerDevCommand(program);
  registerWorkerCommand(program);
  registerRunCommand(program);
  registerChatCommand(program);
  registerAnswerCommand(program);
  registerTranscriptCommand(program);
  registerStatusCommand(program);
  registerSessionCommand(program);
  registerTurnCommand(program);
  registerApiCommand(program);
  registerMcpCommand(program);
  registerSetupCommand(program);
  registerPayloadsCommand(program);
  return program;
}

/** DMCP_DEBUG as the settings parse it; settings that cannot be read print no stack. */
function debugStacks(): boolean {
  try {
    return loadSettings(process.env).debug;
  } catch {
    return false;
  }
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; usage mistakes exit 2 (commander already printed the message).
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    if (err instanceof UsageError || err instanceof SettingsError || err instanceof ConnectionConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`error: ${(err as Error).message}\n`);
    if (debugStacks()) process.stderr.write(`${(err as Error).stack}\n`);
    process.exitCode = 1;
  }
}

void main(process.argv);
