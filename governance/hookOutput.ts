/**
 * What a Claude-Code-style command hook's exit means. Pure: exit code, stdout and stderr in, a
 * verdict out, so the rules can be read and tested in one place.
 *
 * Exit 0: success; stdout is read as JSON when it is a JSON object, plain text is ignored. Exit 2:
 * a blocking error; stderr is the reason the model reads, stdout is ignored. Any other exit, a
 * crash or a timeout: a non-blocking error (the call goes on), unless the hook fails closed.
 */
import { MAX_NESTING_DEPTH, nestedDeeperThan } from '../contract/index.js';

/** How one hook process ended. */
export interface HookExit {
  /** Null when it was killed or never started. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** It could not be started (or its stdin failed): the error. */
  spawnError?: string;
}

/** Longest reason or note kept from one hook: the model reads it, history records it. */
export const MAX_HOOK_MESSAGE_CHARS = 4000;
/** Largest `updatedInput` accepted, as JSON: the same bound as a call's own arguments. */
export const MAX_UPDATED_INPUT_CHARS = 1024 * 1024;

export type PreHookVerdict =
  | { kind: 'continue' }
  | { kind: 'allow'; reason?: string; updatedInput?: Record<string, unknown> }
  | { kind: 'deny'; reason: string }
  | { kind: 'ask'; reason: string }
  | { kind: 'error'; message: string };

export type PostHookVerdict =
  | { kind: 'continue' }
  | { kind: 'note'; note: string }
  | { kind: 'error'; message: string };

function clip(text: string): string {
  const t = text.trim();
  return t.length > MAX_HOOK_MESSAGE_CHARS
    ? `${t.slice(0, MAX_HOOK_MESSAGE_CHARS)}… (${t.length - MAX_HOOK_MESSAGE_CHARS} more characters cut)`
    : t;
}

function tail(text: string, max = 300): string {
  const t = text.trim();
  return t.length > max ? `…${t.slice(-max)}` : t;
}

/** Why the process did not end with exit 0 or 2, or undefined when it did. */
function failure(exit: HookExit, timeoutMs: number): string | undefined {
  if (exit.spawnError !== undefined) return `could not run: ${exit.spawnError}`;
  if (exit.timedOut) return `timed out after ${timeoutMs / 1000} s`;
  if (exit.exitCode === null) return 'was killed by a signal';
  if (exit.exitCode === 0 || exit.exitCode === 2) return undefined;
  const err = tail(exit.stderr);
  return `exited with ${exit.exitCode}${err ? `: ${err}` : ''}`;
}

type Json = Record<string, unknown>;

/** The JSON object on stdout; undefined for plain text (ignored), an error for broken JSON. */
function stdoutJson(stdout: string): { json?: Json; error?: string } {
  const text = stdout.trim();
  if (!text.startsWith('{')) return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      return { error: 'stdout is not a JSON object' };
    return { json: value as Json };
  } catch (err) {
    return { error: `stdout looks like JSON but does not parse (${(err as Error).message})` };
  }
}

function optionalString(json: Json, key: string): string | undefined {
  const v = json[key];
  return typeof v === 'string' && v.trim() !== '' ? clip(v) : undefined;
}

function specificOutput(json: Json, event: string): { value?: Json; error?: string } {
  const h = json.hookSpecificOutput;
  if (h === undefined) return {};
  if (h === null || typeof h !== 'object' || Array.isArray(h)) return { error: 'hookSpecificOutput must be an object' };
  const named = (h as Json).hookEventName;
  if (named !== undefined && named !== event)
    return { error: `hookSpecificOutput.hookEventName is ${JSON.stringify(named)}, expected "${event}"` };
  return { value: h as Json };
}

/** What one PreToolUse hook decided. */
export function parsePreToolUse(exit: HookExit, timeoutMs: number): PreHookVerdict {
  const failed = failure(exit, timeoutMs);
  if (failed) return { kind: 'error', message: failed };
  if (exit.exitCode === 2)
    return { kind: 'deny', reason: clip(exit.stderr) || 'blocked by a PreToolUse hook (exit 2, nothing on stderr)' };
  const { json, error } = stdoutJson(exit.stdout);
  if (error) return { kind: 'error', message: error };
  if (!json) return { kind: 'continue' };
  // `continue: false` stops Claude Code's whole agent; here it stops the call it was asked about.
  if (json.continue === false)
    return {
      kind: 'deny',
      reason: optionalString(json, 'stopReason') ?? 'a PreToolUse hook stopped the call (continue: false)',
    };
  const specific = specificOutput(json, 'PreToolUse');
  if (specific.error) return { kind: 'error', message: specific.error };
  const h = specific.value ?? {};
  let decision = h.permissionDecision;
  let reason = optionalString(h, 'permissionDecisionReason');
  // The older top-level form: `decision` approve/block with `reason`.
  if (decision === undefined && json.decision !== undefined) {
    decision = json.decision === 'approve' ? 'allow' : json.decision === 'block' ? 'deny' : json.decision;
    reason = optionalString(json, 'reason');
  }
  const updated = h.updatedInput;
  if (updated !== undefined) {
    if (updated === null || typeof updated !== 'object' || Array.isArray(updated))
      return { kind: 'error', message: 'updatedInput must be a JSON object of arguments' };
    if (nestedDeeperThan(updated, MAX_NESTING_DEPTH))
      return { kind: 'error', message: `updatedInput nests deeper than ${MAX_NESTING_DEPTH} levels` };
    const size = JSON.stringify(updated).length;
    if (size > MAX_UPDATED_INPUT_CHARS)
      return {
        kind: 'error',
        message: `updatedInput is ${size} characters of JSON; at most ${MAX_UPDATED_INPUT_CHARS}`,
      };
  }
  const updatedInput = updated as Json | undefined;
  switch (decision) {
    case 'deny':
      return { kind: 'deny', reason: reason ?? 'denied by a PreToolUse hook (no reason given)' };
    case 'ask':
      return { kind: 'ask', reason: reason ?? 'a PreToolUse hook asks for approval (no reason given)' };
    case 'allow':
      return { kind: 'allow', ...(reason ? { reason } : {}), ...(updatedInput ? { updatedInput } : {}) };
    case undefined:
    case 'defer':
      return updatedInput ? { kind: 'allow', updatedInput } : { kind: 'continue' };
    default:
      return {
        kind: 'error',
        message: `permissionDecision ${JSON.stringify(decision)} is not allow, deny, ask or defer`,
      };
  }
}

/** What one PostToolUse hook said. The call already ran: a hook cannot undo it, only tell the model. */
export function parsePostToolUse(exit: HookExit, timeoutMs: number): PostHookVerdict {
  const failed = failure(exit, timeoutMs);
  if (failed) return { kind: 'error', message: failed };
  if (exit.exitCode === 2) {
    const text = clip(exit.stderr);
    return text ? { kind: 'note', note: text } : { kind: 'continue' };
  }
  const { json, error } = stdoutJson(exit.stdout);
  if (error) return { kind: 'error', message: error };
  if (!json) return { kind: 'continue' };
  const specific = specificOutput(json, 'PostToolUse');
  if (specific.error) return { kind: 'error', message: specific.error };
  const notes: string[] = [];
  if (json.decision === 'block')
    notes.push(optionalString(json, 'reason') ?? 'a PostToolUse hook flagged this result (no reason given)');
  if (json.continue === false)
    notes.push(optionalString(json, 'stopReason') ?? 'a PostToolUse hook asked to stop (continue: false)');
  const context = specific.value && optionalString(specific.value, 'additionalContext');
  if (context) notes.push(context);
  if (specific.value?.updatedMCPToolOutput !== undefined) {
    return {
      kind: 'error',
      message: 'updatedMCPToolOutput is not supported here: the recorded result is what the tool returned',
    };
  }
  return notes.length > 0 ? { kind: 'note', note: notes.join('\n') } : { kind: 'continue' };
}

/**
 * Whether Claude Code's hook matcher selects `toolName`: absent, `""` or `*` match every tool;
 * letters, digits, `_` and `|` only name tools exactly (`a|b`); anything else is a regular
 * expression tested anywhere in the name (anchor it with `^...$` to match whole names).
 */
export function hookMatches(matcher: string | undefined, toolName: string): boolean {
  if (matcher === undefined || matcher === '' || matcher === '*') return true;
  if (/^[A-Za-z0-9_|]+$/.test(matcher)) return matcher.split('|').includes(toolName);
  return new RegExp(matcher).test(toolName);
}

/** Why `matcher` cannot select tools, or undefined. */
export function hookMatcherProblem(matcher: string): string | undefined {
  if (matcher.length > 1000) return `matcher is ${matcher.length} characters; at most 1000`;
  if (matcher === '' || matcher === '*' || /^[A-Za-z0-9_|]+$/.test(matcher)) return undefined;
  try {
    new RegExp(matcher);
    return undefined;
  } catch (err) {
    return `matcher ${JSON.stringify(matcher)} is not a valid regular expression (${(err as Error).message})`;
  }
}
