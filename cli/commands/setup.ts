/** `durable-mcp setup`: makes a Temporal cluster ready (namespace, search attribute). */
import type { Command } from 'commander';
import { UsageError } from '../common.js';
import { findTemporalServer } from '../temporalServer.js';

/** Exit code 0 when ready; 3 when the connected identity may not take a step (the message says who can). */
async function setupCommand(opts: { retention: string; createNamespace: boolean }): Promise<void> {
  // No data dir: a running `dev` sets itself up, so only a configured cluster counts here.
  const server = await findTemporalServer(process.env);
  if (!server)
    throw new UsageError(
      'setup needs a cluster: set TEMPORAL_ADDRESS (or a Temporal config profile); `durable-mcp dev` sets itself up',
    );
  const print = (line: string) => process.stdout.write(`${line}\n`);
  print(`Temporal: ${server.summary}`);
  // Loaded here: the other commands need none of the cluster-admin client.
  const { SetupRefusedError, runSetup } = await import('../setup.js');
  try {
    await runSetup({
      target: { ...server.target, address: server.address },
      retention: opts.retention,
      createNamespace: opts.createNamespace,
      print,
    });
  } catch (err) {
    if (!(err instanceof SetupRefusedError)) throw err;
    process.stderr.write(`error: ${err.message}\n`);
    process.exitCode = 3;
  }
}

/** Adds `durable-mcp setup` to the program. */
export function registerSetupCommand(program: Command): void {
  program
    .command('setup')
    .description(
      'prepare a Temporal cluster: create the namespace if missing, register the DmcpSessionId search attribute',
    )
    .option('--retention <duration>', 'retention of a namespace created here', '72h')
    .option('--no-create-namespace', 'fail instead of creating a missing namespace')
    .action(setupCommand);
}
