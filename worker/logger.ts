import pino, { type Logger } from 'pino';

/** pino JSON to stderr; pretty when stderr is a terminal. The CLI passes DMCP_LOG_LEVEL as `level`. */
export function createLogger(
  options: { level?: string; pretty?: boolean; destination?: NodeJS.WritableStream } = {},
): Logger {
  const level = options.level ?? 'info';
  const pretty = options.pretty ?? (process.stderr.isTTY === true && !options.destination);
  if (pretty) {
    return pino({ level, transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } } });
  }
  return pino({ level }, (options.destination as pino.DestinationStream | undefined) ?? pino.destination(2));
}
