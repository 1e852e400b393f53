/**
 * The operator's PreToolUse / PostToolUse hooks of one call: which apply, running them in
 * parallel, and combining their verdicts into what the call records.
 */
import { stat } from 'node:fs/promises';
import type {
  HookEvent,
  HookRunRecord,
  PostToolHookInput,
  PostToolUseHooksResult,
  PreToolUseHooksResult,
  ToolHookInput,
} from '../contract/index.js';
import { configDirPath } from '../config/load.js';
import { scrubbedEnvironment } from '../config/secrets.js';
import { hookMatches, parsePostToolUse, parsePreToolUse, type HookExit } from './hookOutput.js';
import type { HookRunRequest } from './hookRunner.js';
import type { HookSpec } from './settingsFile.js';

/** What running a call's hooks needs from the governance that owns them. */
export interface CallHooksOptions {
  /** The worker's environment: where the config dir is, and what hooks inherit (minus secrets). */
  env: NodeJS.ProcessEnv;
  /** Runs one hook command. */
  runHook: (request: HookRunRequest) => Promise<HookExit>;
  /** Removes secret values from what is recorded. */
  scrub: (text: string) => string;
}

/** The hooks read for a turn. */
export interface TurnHooks {
  hooks: HookSpec[];
}

/** Runs the PreToolUse and PostToolUse hooks of calls under one governance's options. */
export function createCallHooks(options: CallHooksOptions) {
  return {
    preToolUse: (g: TurnHooks, input: ToolHookInput, signal?: AbortSignal) => preToolUse(options, g, input, signal),
    postToolUse: (g: TurnHooks, input: PostToolHookInput, signal?: AbortSignal) =>
      postToolUse(options, g, input, signal),
  };
}

function hookEnv(env: NodeJS.ProcessEnv, cwd: string): Record<string, string> {
  // Claude Code gives its hooks the project folder under this name; scripts written for it use it.
  return { ...scrubbedEnvironment(env), CLAUDE_PROJECT_DIR: cwd };
}

async function runAll(
  options: CallHooksOptions,
  event: HookEvent,
  g: TurnHooks,
  input: ToolHookInput,
  payload: Record<string, unknown>,
  signal?: AbortSignal,
) {
  const { env, runHook } = options;
  const specs = g.hooks.filter((h) => h.event === event && hookMatches(h.matcher, input.name));
  const stdin = JSON.stringify({
    session_id: input.sessionId,
    hook_event_name: event,
    cwd: input.cwd,
    tool_name: input.name,
    tool_input: input.arguments,
    tool_use_id: input.callId,
    ...payload,
  });
  const envFor = hookEnv(env, input.cwd);
  // A workspace this worker does not have (a client's path on a cluster worker) must not keep the
  // hooks from running: they run in the operator's config dir instead, and still read `cwd`.
  const isDir =
    specs.length > 0 &&
    (await stat(input.cwd).then(
      (s) => s.isDirectory(),
      () => false,
    ));
  const runIn = isDir ? input.cwd : (configDirPath(env) ?? process.cwd());
  return Promise.all(
    specs.map(async (spec) => {
      const started = Date.now();
      const exit = await runHook({
        command: spec.command,
        stdin,
        cwd: runIn,
        env: envFor,
        timeoutMs: spec.timeoutMs,
        ...(signal ? { signal } : {}),
      });
      return { spec, exit, durationMs: Date.now() - started };
    }),
  );
}

function record(
  scrub: (text: string) => string,
  spec: HookSpec,
  exit: HookExit,
  durationMs: number,
  verdict: HookRunRecord['verdict'],
  message?: string,
): HookRunRecord {
  const command = scrub(spec.command);
  return {
    source: spec.source,
    command: command.length > 300 ? `${command.slice(0, 300)}…` : command,
    verdict,
    ...(exit.exitCode !== null ? { exitCode: exit.exitCode } : {}),
    ...(exit.timedOut ? { timedOut: true } : {}),
    ...(spec.failClosed ? { failClosed: true } : {}),
    durationMs,
    ...(message !== undefined ? { message: scrub(message) } : {}),
  };
}

/**
 * Runs the PreToolUse hooks of one call, in parallel, and combines them: a deny (or a failed
 * hook that fails closed) wins, then an allow; the last `updatedInput` in config order wins.
 */
async function preToolUse(
  options: CallHooksOptions,
  g: TurnHooks,
  input: ToolHookInput,
  signal?: AbortSignal,
): Promise<PreToolUseHooksResult> {
  const { scrub } = options;
  const runs = await runAll(options, 'PreToolUse', g, input, {}, signal);
  const records: HookRunRecord[] = [];
  const denials: string[] = [];
  const asks: string[] = [];
  let allowed: string | undefined;
  let anyAllow = false;
  let updatedInput: Record<string, unknown> | undefined;
  for (const { spec, exit, durationMs } of runs) {
    const v = parsePreToolUse(exit, spec.timeoutMs);
    if (v.kind === 'error') {
      records.push(record(scrub, spec, exit, durationMs, 'error', v.message));
      if (spec.failClosed)
        denials.push(
          `the PreToolUse hook at ${spec.source} failed (${scrub(v.message)}) and is configured to fail closed`,
        );
    } else if (v.kind === 'deny') {
      records.push(record(scrub, spec, exit, durationMs, 'deny', v.reason));
      denials.push(scrub(v.reason));
    } else if (v.kind === 'ask') {
      records.push(record(scrub, spec, exit, durationMs, 'ask', v.reason));
      asks.push(scrub(v.reason));
    } else if (v.kind === 'allow') {
      records.push(record(scrub, spec, exit, durationMs, 'allow', v.reason));
      anyAllow = true;
      allowed ??= v.reason;
      if (v.updatedInput) updatedInput = v.updatedInput;
    } else records.push(record(scrub, spec, exit, durationMs, 'continue'));
  }
  if (denials.length > 0) return { decision: 'deny', reason: denials.join('\n'), runs: records };
  return {
    decision: asks.length > 0 ? 'ask' : anyAllow ? 'allow' : 'none',
    ...(asks.length > 0 ? { reason: asks.join('\n') } : {}),
    ...(allowed !== undefined ? { reason: scrub(allowed) } : {}),
    ...(updatedInput ? { updatedInput } : {}),
    runs: records,
  };
}

/** Runs the PostToolUse hooks of a call that ran, in parallel; their notes are joined in config order. */
async function postToolUse(
  options: CallHooksOptions,
  g: TurnHooks,
  input: PostToolHookInput,
  signal?: AbortSignal,
): Promise<PostToolUseHooksResult> {
  const { scrub } = options;
  const runs = await runAll(options, 'PostToolUse', g, input, { tool_response: input.toolResponse }, signal);
  const records: HookRunRecord[] = [];
  const notes: string[] = [];
  const withheld: string[] = [];
  for (const { spec, exit, durationMs } of runs) {
    const v = parsePostToolUse(exit, spec.timeoutMs);
    if (v.kind === 'error') {
      records.push(record(scrub, spec, exit, durationMs, 'error', v.message));
      if (spec.failClosed)
        withheld.push(
          `the PostToolUse hook at ${spec.source} failed (${scrub(v.message)}) and is configured to fail closed`,
        );
    } else if (v.kind === 'note') {
      records.push(record(scrub, spec, exit, durationMs, 'note', v.note));
      notes.push(scrub(v.note));
    } else records.push(record(scrub, spec, exit, durationMs, 'continue'));
  }
  return {
    ...(notes.length ? { note: notes.join('\n') } : {}),
    ...(withheld.length ? { withheld: withheld.join('\n') } : {}),
    runs: records,
  };
}
