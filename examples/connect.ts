/**
 * Where the examples run their turns, in the order `durable-mcp run` uses: TEMPORAL_ADDRESS when
 * set (a worker must poll DMCP_TASK_QUEUE there), else a running `durable-mcp dev`, else an
 * embedded Temporal dev server plus an in-process worker for the example's duration. The
 * adapters themselves need only a `TurnClient` (`TurnClient.connect({ address })`).
 */
import { fileURLToPath } from 'node:url';
import { connect, type Session } from '../cli/embedded.js';
import { loadSettings } from '../settings/index.js';
import { createLogger } from '../worker/logger.js';

export function exampleSession(): Promise<Session> {
  const settings = loadSettings(process.env);
  return connect({
    logger: createLogger({ level: process.env.DMCP_LOG_LEVEL ?? 'warn' }),
    withWorker: true,
    settings,
    env: process.env,
  });
}

/** server-everything as an inline `--mcp` spec: the installed package, run by this Node. */
export const everythingSpec = `everything:${process.execPath} ${fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url))} stdio`;

/** One line per tool result the model read: its call ID, tool, text and images. */
export function describeResult(
  id: string,
  name: string,
  text: string,
  images: { mediaType: string; data: string }[],
): string {
  const shown = images.map((i) => `${i.mediaType}, ${Buffer.from(i.data, 'base64').length} bytes`);
  return `  ${id} ${name}: ${text.replace(/\s*\n\s*/g, ' ')}${shown.length ? ` + image (${shown.join('; ')})` : ''}`;
}
