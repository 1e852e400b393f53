/** The connection a command that only reads or signals turns makes, and closes whatever happens. */
import { cliLogger, commandSettings, notice, progress } from './common.js';
import { connect, type Session } from './embedded.js';

/**
 * Runs `use` on a connection with no worker of its own (TEMPORAL_ADDRESS, a running `dev`, or a dev
 * server for this command alone, which it says so), then closes it.
 */
export async function withCommandSession<T>(use: (session: Session) => Promise<T>): Promise<T> {
  const settings = commandSettings();
  const session = await connect({
    logger: cliLogger(settings, 'warn'),
    withWorker: false,
    settings,
    env: process.env,
    progress,
    notice,
  });
  try {
    return await use(session);
  } finally {
    await session.close();
  }
}
