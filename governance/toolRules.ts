/**
 * Allowed-tools rules: allow and deny lists of matchers on public tool names. Pure.
 *
 * A matcher is a public tool name in which `*` stands for any run of characters
 * (`mcp__github__*`, `mcp__*`), or a name without `*`, which matches that tool exactly and, as in
 * Claude Code's permission rules, every tool of a server when it names only the server
 * (`mcp__github` matches `mcp__github__search`).
 */

/** Longest matcher accepted: public names are at most 64 characters, so longer is a mistake. */
export const MAX_TOOL_RULE_CHARS = 256;

/** Why `rule` is not a matcher, or undefined when it is. */
export function toolRuleProblem(rule: unknown): string | undefined {
  if (typeof rule !== 'string')
    return `a tool matcher must be a string, got ${rule === null ? 'null' : Array.isArray(rule) ? 'an array' : typeof rule}`;
  if (rule === '') return 'a tool matcher must not be empty (use "mcp__*" for every MCP tool)';
  if (rule.length > MAX_TOOL_RULE_CHARS)
    return `tool matcher is ${rule.length} characters; at most ${MAX_TOOL_RULE_CHARS}`;
  const bad = /[^A-Za-z0-9_*-]/.exec(rule);
  if (bad) {
    const hint = /^[A-Z][A-Za-z]*\(/.test(rule)
      ? "; rules with arguments such as Bash(...) are for an agent's own tools, these rules name MCP tools"
      : '';
    return (
      `tool matcher ${JSON.stringify(rule)} has ${JSON.stringify(bad[0])} at position ${bad.index + 1}: matchers are public tool names ` +
      `(letters, digits, _ and -) with * for any characters, e.g. mcp__github__* or mcp__docs__search${hint}`
    );
  }
  return undefined;
}

function globRegExp(rule: string): RegExp {
  const body = rule
    .split('*')
    .map((part) => part.replace(/[-]/g, '\\-'))
    .join('.*');
  return new RegExp(`^${body}$`, 's');
}

const compiled = new Map<string, RegExp>();

/** Whether matcher `rule` (already valid) matches public tool name `name`. */
export function matchesToolRule(rule: string, name: string): boolean {
  if (!rule.includes('*')) return name === rule || name.startsWith(`${rule}__`);
  let re = compiled.get(rule);
  if (!re) {
    re = globRegExp(rule);
    if (compiled.size > 1000) compiled.clear();
    compiled.set(rule, re);
  }
  return re.test(name);
}

/**
 * One set of rules and where it comes from. A tool must be allowed by every set that has an allow
 * list and denied by none: a later set (an agent's grants, the turn) can only narrow what an
 * earlier one (the operator) allows, never widen it.
 */
export interface ToolRuleSet {
  /** Where the rules are written, for the reason a refusal gives: a file and line, a variable, "the turn". */
  source: string;
  /** Undefined: this set allows everything it does not deny. Empty: it allows nothing. */
  allow?: string[];
  deny?: string[];
  /** Tools that run only once a person approves each call (an allowed tool; a deny still wins). */
  ask?: string[];
  /** Tools whose approval may change the call's arguments (when the call is held for one). */
  approveWithEdits?: string[];
}

/**
 * `ask`: allowed, once a person approves each call; the rule that says so. `edits`: the rule that
 * lets that person approve the call with other arguments.
 */
export type ToolVerdict = { allowed: true; ask?: string; edits?: string } | { allowed: false; reason: string };

/** Whether `name` may be listed and called under `sets`; a refusal names the rule and its source. Deny wins. */
export function decideTool(sets: readonly ToolRuleSet[], name: string): ToolVerdict {
  for (const set of sets) {
    const rule = set.deny?.find((r) => matchesToolRule(r, name));
    if (rule !== undefined)
      return { allowed: false, reason: `denied by rule ${JSON.stringify(rule)} (${set.source}, deny)` };
  }
  for (const set of sets) {
    if (set.allow === undefined || set.allow.some((r) => matchesToolRule(r, name))) continue;
    const listed =
      set.allow.length === 0
        ? 'it allows no tool'
        : `no rule matches it (allow: ${set.allow.map((r) => JSON.stringify(r)).join(', ')})`;
    return { allowed: false, reason: `not in the allow list of ${set.source}: ${listed}` };
  }
  let edits: string | undefined;
  for (const set of sets) {
    const rule = set.approveWithEdits?.find((r) => matchesToolRule(r, name));
    if (rule !== undefined) edits ??= `rule ${JSON.stringify(rule)} (${set.source}, approveWithEdits)`;
  }
  const verdict = { allowed: true as const, ...(edits !== undefined ? { edits } : {}) };
  for (const set of sets) {
    const rule = set.ask?.find((r) => matchesToolRule(r, name));
    if (rule !== undefined) return { ...verdict, ask: `rule ${JSON.stringify(rule)} (${set.source}, ask)` };
  }
  return verdict;
}

/**
 * Checks a list of matchers from a place without lines (a variable, a flag, the turn's input):
 * the first bad one is named by its place and index.
 */
export function listProblem(rules: unknown, where: string): string | undefined {
  if (rules === undefined) return undefined;
  if (!Array.isArray(rules)) return `${where} must be a list of tool matchers`;
  for (const [i, rule] of rules.entries()) {
    const problem = toolRuleProblem(rule);
    if (problem) return `${where}[${i}]: ${problem}`;
  }
  return undefined;
}
