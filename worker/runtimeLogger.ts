import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { scrubDeep, scrubSecrets } from '../config/secrets.js';

let runtimeInstalled = false;

/**
 * Routes the Temporal SDK's own logs through pino, without its startup chatter. The SDK quotes
 * errors and activity details in its messages and meta, so both are scrubbed like every other log
 * line (`scrub`: by default, of this process's secrets, plain and encoded).
 */
export function installRuntimeLogger(
  logger: Logger,
  level: LogLevel = 'WARN',
  scrub: (text: string) => string = (text) => scrubSecrets(text, process.env),
): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({
    // The commands handle their own signals and stop what they started in order.
    shutdownSignals: [],
    logger: new DefaultLogger(level, (entry) => {
      // The pinned worker queue deliberately has no workflows; the SDK warns about that.
      if (entry.message.startsWith('No workflows registered')) return;
      const method = entry.level === 'ERROR' ? 'error' : entry.level === 'WARN' ? 'warn' : 'debug';
      logger[method]({ sdk: scrubDeep(entry.meta, scrub) }, scrub(entry.message));
    }),
  });
}
