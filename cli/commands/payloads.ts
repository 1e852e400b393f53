/** `durable-mcp payloads gc | codec-server`: the payload store (large tool results kept outside history). */
import { Option, type Command } from 'commander';
import { collect, commandSettings, givenOnCommandLine } from '../common.js';
import { codecServerCommand, payloadsGcCommand } from '../payloads.js';
import { handleStopSignals } from '../signals.js';

const print = (line: string) => process.stdout.write(`${line}\n`);

/** Adds `durable-mcp payloads ...` to the program. */
export function registerPayloadsCommand(program: Command): void {
  const payloads = program
    .command('payloads')
    .description('the payload store (large tool results kept outside history)');
  payloads
    .command('gc')
    .description(
      'delete filesystem-store payloads last written longer ago than --older-than (the namespace retention plus a margin)',
    )
    .requiredOption(
      '--older-than <duration>',
      'e.g. 30d or 720h: at least the namespace retention plus the longest turn',
    )
    .option('--dry-run', 'only count what would be deleted')
    .action((opts: { olderThan: string; dryRun?: boolean }) => payloadsGcCommand(commandSettings(), opts, print));
  payloads
    .command('codec-server')
    .description(
      'serve /encode and /decode on 127.0.0.1 for the Temporal UI and CLI (reads the configured payload store)',
    )
    // The flag wins over the variable, the variable over the default (both read through the settings).
    .addOption(new Option('--port <port>', 'port (default 8234)').env('DMCP_CODEC_PORT'))
    .option('--allowed-origin <origin>', 'a web origin allowed besides loopback ones (repeatable)', collect, [])
    .action(async (opts: { allowedOrigin: string[] }, command: Command) => {
      const port = givenOnCommandLine<string>(command, 'port');
      const codec = await codecServerCommand(
        commandSettings(),
        { ...(port !== undefined ? { port } : {}), allowedOrigin: opts.allowedOrigin },
        print,
      );
      handleStopSignals({ graceful: () => codec.close(), force: () => undefined }, ['SIGINT', 'SIGTERM']);
      await new Promise<never>(() => undefined);
    });
}
