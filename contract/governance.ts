/**
 * What allowed-tools rules and the operator's hooks leave in history. Types only: the rules are
 * applied and the hooks run on the worker (`governance/`); the workflow reads their results.
 */

/** The hook events a tool call has, with Claude Code's names. */
export type HookEvent = 'PreToolUse' | 'PostToolUse';

/**
 * The hooks that apply to one tool, as frozen with the tool list: for each event with at least
 * one matching hook, the longest timeout of those hooks (ms). An event that is absent costs the
 * call nothing: no activity is scheduled for it.
 */
export type ToolHooks = Partial<Record<HookEvent, number>>;

/** One hook command's run, as recorded. Never holds the hook's whole output, only what it decided. */
export interface HookRunRecord {
  /** Where the hook is configured: `file:line`. */
  source: string;
  /** The command, scrubbed of secret values and cut to a few hundred characters. */
  command: string;
  /**
   * `continue`: no decision. `allow` / `deny`: a PreToolUse decision. `note`: a PostToolUse hook
   * said something for the model. `error`: it crashed, timed out or answered nonsense.
   */
  verdict: 'continue' | 'allow' | 'deny' | 'ask' | 'note' | 'error';
  exitCode?: number;
  timedOut?: boolean;
  /** Set on a hook configured to fail closed (its error blocks the call). */
  failClosed?: boolean;
  durationMs: number;
  /** The reason, the note, or what went wrong. */
  message?: string;
}

/** What the `preToolUseHooks` activity is given. */
export interface ToolHookInput {
  sessionId: string;
  callId: string;
  /** Public tool name (`tool_name`). */
  name: string;
  /** The turn's workspace: the hook's working directory and `cwd`. */
  cwd: string;
  /** The call's arguments (`tool_input`). */
  arguments: Record<string, unknown>;
}

/** What the `postToolUseHooks` activity is given: also the tool's result (`tool_response`). */
export interface PostToolHookInput extends ToolHookInput {
  toolResponse: { content: unknown[]; isError: boolean; structuredContent?: Record<string, unknown> };
}

/** The PreToolUse hooks of one call, combined: recorded before the call runs, and never re-run. */
export interface PreToolUseHooksResult {
  /** `deny` wins over `ask`, which wins over `allow`; `ask`: a person approves first; `none`: no hook decided, the call goes on. */
  decision: 'allow' | 'deny' | 'ask' | 'none';
  /** Why it was denied (what the model reads), or allowed. */
  reason?: string;
  /** Arguments rewritten by a hook (`updatedInput`): the call runs with these. */
  updatedInput?: Record<string, unknown>;
  runs: HookRunRecord[];
  /**
   * The worker's seal on a decision that lets the call go on: hex HMAC of {@link preToolUseProofText}
   * with the operator's turn key. The call's activity runs only with a seal that matches its turn,
   * call, tool and arguments, so a workflow cannot skip or forge what the hooks decided.
   */
  proof?: string;
}

/** What a PreToolUse seal signs: the turn, the call, the public tool name and the arguments the call runs with. */
export function preToolUseProofText(
  turnId: string,
  callId: string,
  name: string,
  args: Record<string, unknown>,
): string {
  return JSON.stringify(['durable-mcp PreToolUse v1', turnId, callId, name, canonicalJson(args)]);
}

/** JSON with object keys sorted at every level: the same value gives the same text wherever it was serialized. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .flatMap((k) => {
        const v = (value as Record<string, unknown>)[k];
        return v === undefined ? [] : [`${JSON.stringify(k)}:${canonicalJson(v)}`];
      });
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The PostToolUse hooks of one call that ran, combined. */
export interface PostToolUseHooksResult {
  /** What the hooks said for the model (`reason` of a block, `additionalContext`, exit-2 stderr). */
  note?: string;
  /** Set when a hook configured to fail closed failed: the tool's result is withheld from the model. */
  withheld?: string;
  runs: HookRunRecord[];
}

/** What the hooks of one call did, kept on its outcome. */
export interface CallHooks {
  pre?: {
    decision: PreToolUseHooksResult['decision'];
    reason?: string;
    updatedInput?: Record<string, unknown>;
    errors?: string[];
  };
  post?: { note?: string; withheld?: string; errors?: string[] };
}

/** A tool of the turn that its allowed-tools rules refuse, and the rule that refused it. */
export interface RefusedTool {
  name: string;
  reason: string;
}
