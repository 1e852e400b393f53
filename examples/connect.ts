/**
 * Where the examples run their turns, in the order `durable-mcp run` uses: TEMPORAL_ADDRESS when
 * set (a worker must poll DMCP_TASK_QUEUE there), else a running `durable-mcp dev`, else an
 * embedded Temporal dev server plus an in-process worker for the example's duration. The
 * adapters themselves need only a `TurnClient` (`TurnClient.connect({ address })`).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { connect, createLogger, type Session } from 'durable-mcp/embedded';
import { loadSettings } from 'durable-mcp/settings';

export function exampleSession(): Promise<Session> {
  const settings = loadSettings(process.env);
  return connect({
    logger: createLogger({ level: process.env.DMCP_LOG_LEVEL ?? 'warn' }),
    withWorker: true,
    settings,
    env: process.env,
  });
}

/** server-everything as an inline `--mcp` spec: the package installed beside this file, run by this Node. */
export const everythingSpec = `everything:${process.execPath} ${serverEverything()} stdio`;

/** The entry script of `@modelcontextprotocol/server-everything`, resolved as this module resolves packages. */
function serverEverything(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve('@modelcontextprotocol/server-everything/package.json');
  const { bin } = require(manifest) as { bin: Record<string, string> };
  return join(dirname(manifest), bin['mcp-server-everything']!);
}

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
