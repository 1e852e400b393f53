/**
 * How every `durable-mcp mcp ...` command that reads or changes the shelf runs: it connects like
 * `run` (TEMPORAL_ADDRESS, a running `dev`, else the embedded dev server with an in-process worker,
 * which then serves the shelf), and a refusal prints one line and exits 2.
 */
import { hostname, userInfo } from 'node:os';
import type { ShelfClient } from '../../../plane/shelfClient.js';
import type { Settings } from '../../../settings/index.js';
import { stripTerminalControls } from '../../../text/terminal.js';
import { cliLogger, commandSettings, notice, progress } from '../../common.js';

/** One line on stdout, without terminal controls. */
export const print = (line: string) => process.stdout.write(`${stripTerminalControls(line)}\n`);

/** One error line on stderr, without terminal controls. */
export const printError = (line: string) => process.stderr.write(`error: ${stripTerminalControls(line)}\n`);

/** Who the shelf's log says made a change from this command line. */
function cliBy(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No user name on this system: the log still says it came from the CLI.
  }
  return `cli ${user}@${hostname()}`;
}

export interface ShelfCommandContext {
  shelf: ShelfClient;
  settings: Settings;
  /** The turn key, read when the command signs (or checks) shelf entries. */
  turnKey?: Buffer;
  close(): Promise<void>;
}

/** Connects like `run` does and builds the shelf client; the turn key is read only when `signing`. */
async function openShelf(signing: boolean): Promise<ShelfCommandContext> {
  const [{ connect, stopOnSignals }, { ShelfClient }, { ensureTurnKey, readTurnKey, turnKeyFile }] = await Promise.all([
    import('../../embedded.js'),
    import('../../../plane/shelfClient.js'),
    import('../../../config/load.js'),
  ]);
  const settings = commandSettings();
  const logger = cliLogger(settings, 'warn');
  // The embedded case needs its in-process worker: the shelf workflow runs on a worker like any other.
  const session = await connect({ logger, withWorker: true, settings, env: process.env, progress, notice });
  stopOnSignals(session);
  try {
    let turnKey: Buffer | undefined;
    if (signing) {
      // A cluster's workers check proofs with their own key file: a key made up here would sign
      // changes no worker honours, so only the local cases create one.
      if (session.mode === 'TEMPORAL_ADDRESS') {
        const file = turnKeyFile(settings.dataDir);
        turnKey = await readTurnKey(file).catch((err: NodeJS.ErrnoException) => {
          throw new ShelfCommandError(
            err.code === 'ENOENT'
              ? `no turn key at ${file}: copy the workers' turn.key there (mode 0600), or set DMCP_DATA_DIR to the folder holding it; the shelf only takes changes signed with it`
              : err.message,
          );
        });
      } else {
        turnKey = await ensureTurnKey(settings.dataDir);
      }
    }
    const shelf = new ShelfClient({
      client: session.client.client,
      taskQueue: session.client.taskQueue,
      turnKey,
      by: cliBy(),
      env: process.env,
    });
    return { shelf, settings, ...(turnKey ? { turnKey } : {}), close: () => session.close() };
  } catch (err) {
    await session.close();
    throw err;
  }
}

/** A refusal: one line on stderr and exit code 2. */
export class ShelfCommandError extends Error {}

/** Runs one shelf command: refusals print one line and exit 2; everything else goes to the CLI's handler. */
export async function shelfCommand(
  signing: boolean,
  body: (ctx: ShelfCommandContext) => Promise<number>,
): Promise<void> {
  const { ShelfInputError } = await import('../../../plane/shelf.js');
  let ctx: ShelfCommandContext | undefined;
  try {
    ctx = await openShelf(signing);
    process.exitCode = await body(ctx);
  } catch (err) {
    if (err instanceof ShelfInputError || err instanceof ShelfCommandError) {
      process.stderr.write(`error: ${stripTerminalControls(err.message)}\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  } finally {
    await ctx?.close();
  }
}

/** Refuses bad arguments before anything connects. */
export async function checked<T>(fn: () => T | Promise<T>): Promise<T | undefined> {
  const { ShelfInputError } = await import('../../../plane/shelf.js');
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ShelfInputError)) throw err;
    process.stderr.write(`error: ${stripTerminalControls(err.message)}\n`);
    process.exitCode = 2;
    return undefined;
  }
}
