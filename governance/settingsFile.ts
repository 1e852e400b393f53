/**
 * The operator's governance file: `settings.json` in the worker's config dir, in the shape of
 * Claude Code's settings (`permissions.allow` / `permissions.deny`, `hooks.PreToolUse` /
 * `hooks.PostToolUse`). Pure: text in, rules and hooks out; a problem throws a ConfigError naming
 * the file, the line and the field, because a rule skipped silently would widen what runs.
 */
import type { ObjectNode, ValueNode } from '@humanwhocodes/momoa';
import type { HookEvent } from '../contract/index.js';
import { jsonTypeOf, keyOf, parseJsonDocument } from '../config/json.js';
import { ConfigError } from '../config/types.js';
import { hookMatcherProblem } from './hookOutput.js';
import { toolRuleProblem, type ToolRuleSet } from './toolRules.js';

/** A hook's timeout when it sets none (Claude Code's is 10 minutes; a tool call's is 60 s here). */
export const DEFAULT_HOOK_TIMEOUT_S = 60;
/** Longest hook timeout accepted. */
export const MAX_HOOK_TIMEOUT_S = 600;

/** One configured hook command. */
export interface HookSpec {
  event: HookEvent;
  /** Claude Code's matcher on the public tool name; absent matches every tool. */
  matcher?: string;
  command: string;
  timeoutMs: number;
  /** When it crashes, times out or answers nonsense, the call is blocked instead of going on. */
  failClosed: boolean;
  /** `file:line` of the hook. */
  source: string;
}

/** What one governance file says. */
export interface GovernanceFile {
  /** The file's allowed-tools rules; undefined when it has no `permissions`. */
  rules?: ToolRuleSet;
  hooks: HookSpec[];
  warnings: string[];
}

const EVENTS: readonly HookEvent[] = ['PreToolUse', 'PostToolUse'];
const HOOK_FIELDS = ['type', 'command', 'timeout', 'failClosed', 'statusMessage'];

type Fail = (message: string, node: ValueNode | { loc: { start: { line: number } } }, field: string) => never;

function members(node: ObjectNode): { key: string; line: number; value: ValueNode }[] {
  return node.members.map((m) => ({ key: keyOf(m), line: m.name.loc.start.line, value: m.value }));
}

function expectObject(node: ValueNode, field: string, fail: Fail): ObjectNode {
  if (node.type !== 'Object') fail(`${field} must be an object, got ${jsonTypeOf(node)}`, node, field);
  return node as ObjectNode;
}

function ruleList(node: ValueNode, field: string, fail: Fail): string[] {
  if (node.type !== 'Array') fail(`${field} must be a list of tool matchers, got ${jsonTypeOf(node)}`, node, field);
  const out: string[] = [];
  for (const [i, el] of (node.type === 'Array' ? node.elements : []).entries()) {
    const v = el.value;
    const problem = toolRuleProblem(v.type === 'String' ? v.value : v.type);
    if (problem || v.type !== 'String') fail(problem ?? `${field}[${i}] must be a string`, v, `${field}[${i}]`);
    out.push((v as { value: string }).value);
  }
  return out;
}

function parseHook(
  node: ValueNode,
  field: string,
  event: HookEvent,
  matcher: string | undefined,
  file: string,
  fail: Fail,
): HookSpec {
  const obj = expectObject(node, field, fail);
  const fields = new Map(members(obj).map((m) => [m.key, m]));
  for (const m of fields.values()) {
    if (!HOOK_FIELDS.includes(m.key))
      fail(
        `${field}: unknown field ${JSON.stringify(m.key)} (a hook has ${HOOK_FIELDS.join(', ')})`,
        m.value,
        `${field}.${m.key}`,
      );
  }
  const type = fields.get('type')?.value;
  if (!type || type.type !== 'String' || type.value !== 'command') {
    fail(`${field}.type must be "command" (the only hook type that runs here)`, type ?? obj, `${field}.type`);
  }
  const command = fields.get('command')?.value;
  if (!command || command.type !== 'String' || command.value.trim() === '')
    fail(`${field}.command must be a non-empty string`, command ?? obj, `${field}.command`);
  const timeout = fields.get('timeout')?.value;
  let timeoutS = DEFAULT_HOOK_TIMEOUT_S;
  if (timeout) {
    if (timeout.type !== 'Number' || !(timeout.value > 0) || timeout.value > MAX_HOOK_TIMEOUT_S) {
      fail(
        `${field}.timeout must be a number of seconds above 0 and at most ${MAX_HOOK_TIMEOUT_S}`,
        timeout,
        `${field}.timeout`,
      );
    }
    timeoutS = (timeout as { value: number }).value;
  }
  const failClosed = fields.get('failClosed')?.value;
  if (failClosed && failClosed.type !== 'Boolean')
    fail(`${field}.failClosed must be true or false`, failClosed, `${field}.failClosed`);
  return {
    event,
    ...(matcher !== undefined ? { matcher } : {}),
    command: (command as { value: string }).value,
    timeoutMs: Math.round(timeoutS * 1000),
    failClosed: failClosed?.type === 'Boolean' && failClosed.value,
    source: `${file}:${obj.loc.start.line}`,
  };
}

function parseHooks(node: ValueNode, file: string, fail: Fail, warnings: string[]): HookSpec[] {
  const out: HookSpec[] = [];
  for (const ev of members(expectObject(node, 'hooks', fail))) {
    if (!EVENTS.includes(ev.key as HookEvent)) {
      warnings.push(
        `${file}:${ev.line}: hooks.${ev.key} ignored: only PreToolUse and PostToolUse hooks run on MCP tool calls`,
      );
      continue;
    }
    const event = ev.key as HookEvent;
    if (ev.value.type !== 'Array')
      fail(
        `hooks.${event} must be a list of { "matcher", "hooks" } groups, got ${jsonTypeOf(ev.value)}`,
        ev.value,
        `hooks.${event}`,
      );
    for (const [g, el] of (ev.value.type === 'Array' ? ev.value.elements : []).entries()) {
      const field = `hooks.${event}[${g}]`;
      const group = expectObject(el.value, field, fail);
      let matcher: string | undefined;
      let hooks: ValueNode | undefined;
      for (const m of members(group)) {
        if (m.key === 'matcher') {
          if (m.value.type !== 'String') fail(`${field}.matcher must be a string`, m.value, `${field}.matcher`);
          matcher = (m.value as { value: string }).value;
          const problem = hookMatcherProblem(matcher);
          if (problem) fail(problem, m.value, `${field}.matcher`);
        } else if (m.key === 'hooks') hooks = m.value;
        else
          fail(
            `${field}: unknown field ${JSON.stringify(m.key)} (a group has "matcher" and "hooks")`,
            m.value,
            `${field}.${m.key}`,
          );
      }
      if (!hooks || hooks.type !== 'Array')
        fail(`${field}.hooks must be a list of hook commands`, hooks ?? group, `${field}.hooks`);
      for (const [h, hook] of (hooks as { elements: { value: ValueNode }[] }).elements.entries()) {
        out.push(parseHook(hook.value, `${field}.hooks[${h}]`, event, matcher, file, fail));
      }
    }
  }
  return out;
}

/** Parses the governance file's text. Throws a ConfigError naming file, line and field. */
export function parseGovernanceText(text: string, file: string): GovernanceFile {
  const doc = parseJsonDocument(text);
  if (!doc.ok) throw new ConfigError(`${file}:${doc.line}: ${doc.problem}`, file, doc.line);
  const fail: Fail = (message, node, field) => {
    const line = node.loc.start.line;
    throw new ConfigError(
      `${file}:${line}: ${field}: ${message.startsWith(field) ? message.slice(field.length).replace(/^:?\s*/, '') : message}`,
      file,
      line,
      field,
    );
  };
  const root = expectObject(doc.root, 'the top level', fail);
  const warnings: string[] = [];
  let rules: ToolRuleSet | undefined;
  let hooks: HookSpec[] = [];
  for (const m of members(root)) {
    if (m.key === 'hooks') hooks = parseHooks(m.value, file, fail, warnings);
    else if (m.key === 'permissions') {
      const perms = expectObject(m.value, 'permissions', fail);
      rules = { source: `${file}:${m.line}` };
      for (const p of members(perms)) {
        if (p.key === 'allow') rules.allow = ruleList(p.value, 'permissions.allow', fail);
        else if (p.key === 'deny') rules.deny = ruleList(p.value, 'permissions.deny', fail);
        else if (p.key === 'ask') rules.ask = ruleList(p.value, 'permissions.ask', fail);
        else if (p.key === 'approveWithEdits')
          rules.approveWithEdits = ruleList(p.value, 'permissions.approveWithEdits', fail);
        else
          warnings.push(
            `${file}:${p.line}: permissions.${p.key} ignored: only allow, deny, ask and approveWithEdits apply to MCP tools here`,
          );
      }
    }
  }
  return { ...(rules ? { rules } : {}), hooks, warnings };
}
