/**
 * How deep JSON may nest where it enters history (call arguments, tool schemas, results). JSON
 * nested a few thousand levels deep parses but exhausts the stack when serialized again, which
 * would fail a workflow task or an activity; real data nests a handful of levels.
 */
export const MAX_NESTING_DEPTH = 64;

/** Whether `value` nests objects or arrays deeper than `max` levels. Iterative: no stack to exhaust. */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(v as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}
