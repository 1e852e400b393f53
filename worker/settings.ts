/** Parses `10s`, `500ms`, `10m`, `1h` or a plain number of milliseconds. */
export function parseDuration(value: string, variable: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value);
  if (!match) throw new Error(`${variable}: expected a duration such as 10s, 500ms or 10m, got "${value}"`);
  const n = Number(match[1]);
  const unit = match[2] ?? 'ms';
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h']);
}

export function durationFromEnv(env: NodeJS.ProcessEnv, variable: string, fallback: string): number {
  return parseDuration(env[variable] || fallback, variable);
}

/** The shared task queue (DMCP_TASK_QUEUE). */
export function sharedTaskQueue(env: NodeJS.ProcessEnv): string {
  return env.DMCP_TASK_QUEUE || 'durable-mcp';
}
