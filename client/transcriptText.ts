/** A transcript as a person reads it in a terminal: the turn, its servers, tools and calls. */
// Not shaping/index.js: that would load the tokenizer on every CLI start, and transcripts need none.
import { describeContent } from '../shaping/content.js';
import type { CallOutcome } from '../contract/index.js';
import { stripTerminalControls } from '../text/terminal.js';
import type { Transcript, TranscriptCall, TranscriptModelStep, TranscriptTask } from './transcript.js';

/** The transcript's line for a task's last known state: `task <id>: working, step 3/5 (7 polls)`. */
export function taskLine(task: TranscriptTask, detached = false): string {
  const line = `task ${task.taskId}${task.takenUp ? ' (taken up)' : ''}: ${task.status}${task.statusMessage ? `, ${task.statusMessage}` : ''} (${task.polls} poll${task.polls === 1 ? '' : 's'})`;
  return detached ? `${line}; detached: the turn ended without it, and the task goes on on its server` : line;
}

/**
 * The text a person reads of one outcome. Blocks read as shaping describes them for the model
 * (describeContent), so the transcript and the model's view never disagree about a block: text as
 * it is, every other block as one bracketed line (an image by type and size, audio, a binary
 * resource and malformed blocks as the note the model got).
 */
export function outcomeText(outcome: CallOutcome): string {
  // Not a failure: the call's task goes on, and the message says how to take it up.
  if (outcome.errorKind === 'detached') return `detached: ${outcome.errorMessage}`;
  if (outcome.status === 'error') return `error (${outcome.errorKind}): ${outcome.errorMessage}`;
  const blocks = describeContent(outcome.content);
  const lines = blocks.map((view) =>
    view.kind === 'text' ? view.text : `[${view.kind === 'note' ? view.note : view.label}]`,
  );
  if (outcome.structuredContent && blocks.length === 0) lines.push(JSON.stringify(outcome.structuredContent));
  return (outcome.isError ? 'tool reported an error: ' : '') + lines.join('\n');
}

/** Renders a transcript for a terminal. */
export function renderTranscript(t: Transcript): string {
  const out: string[] = [];
  out.push(
    `Turn ${t.turnId}${t.sessionId ? ` (session ${t.sessionId})` : ''}: ${t.state}${t.endedBy ? `, ended by ${t.endedBy}` : ''}`,
  );
  if (t.failure) out.push(`  failure: ${t.failure}`);
  if (t.otherRuns)
    out.push(
      `  left out: ${t.otherRuns.length} other execution${t.otherRuns.length === 1 ? '' : 's'} at this workflow ID, not this turn's run chain (${t.otherRuns.join(', ')})`,
    );
  out.push('', 'Servers:');
  if (!t.status) out.push('  (not reconciled yet)');
  else if (t.status.mcp === 'off') out.push('  MCP is off');
  else if (t.status.servers.length === 0) out.push('  none configured');
  for (const s of t.status?.servers ?? []) {
    out.push(
      `  ${s.name} [${s.state}] ${s.transport}${s.era ? ` (${s.era === 'modern' ? 'MCP 2026-07-28' : 'legacy MCP'})` : ''} from ${s.layer} (${s.source})${s.tools.length ? `: ${s.tools.length} tools` : ''}`,
    );
    if (s.error) out.push(`    error: ${s.error}`);
    for (const w of s.warnings) out.push(`    warning: ${w}`);
  }
  out.push('', `Tools (${t.tools.length}):`);
  for (const tool of t.tools)
    out.push(`  ${tool.name}${tool.refusedBy ? ` (not listed to the model: ${tool.refusedBy})` : ''}`);
  const steps = t.modelSteps ?? [];
  out.push('', `Calls (${t.calls.length})${steps.length ? ` and model steps (${steps.length})` : ''}:`);
  // Each model step goes before the first call made after it was asked.
  let next = 0;
  const stepsBefore = (calls: number) => {
    for (; next < steps.length && steps[next]!.callsBefore <= calls; next++) out.push(...modelStepLines(steps[next]!));
  };
  t.calls.forEach((call, i) => {
    stepsBefore(i);
    out.push(...callLines(call));
  });
  stepsBefore(Infinity);
  if (t.answer !== undefined) out.push('', `Answer: ${t.answer ? t.answer.split('\n').join('\n  ') : '(no text)'}`);
  // Everything here can come from a server or a tool: it must not drive the reader's terminal.
  return stripTerminalControls(out.join('\n'));
}

/** One call as lines: what was asked, its attempts, hooks, questions, task and outcome. */
function callLines(call: TranscriptCall): string[] {
  const out: string[] = [];
  const o = call.outcome;
  const timing = o ? ` ${o.durationMs} ms${o.attempts > 1 ? `, ${o.attempts} attempts` : ''}` : '';
  out.push(`  [${call.id}] ${call.name} ${JSON.stringify(call.arguments)}${timing}`);
  for (const f of call.failures) out.push(`    attempt failed: ${f}`);
  out.push(...hookLines(call));
  for (const asked of call.inputs ?? []) {
    out.push(
      `    asked (round ${asked.round}, ${asked.kind}): ${asked.message}${asked.url ? ` <${asked.url}>` : ''} -> ${asked.action ?? 'not answered yet'}`,
    );
  }
  if (call.task) out.push(`    ${taskLine(call.task, o?.errorKind === 'detached')}`);
  const text = o ? outcomeText(o) : '(no outcome yet)';
  for (const line of text.split('\n')) out.push(`    ${line}`);
  return out;
}

/** A step's tokens as a person reads them: `84 in / 12 out tokens` (what the provider reported). */
export function usageText(usage: TranscriptModelStep['usage']): string | undefined {
  const { inputTokens: input, outputTokens: output, totalTokens: total } = usage ?? {};
  if (input === undefined && output === undefined) return total === undefined ? undefined : `${total} tokens`;
  return `${input ?? '?'} in / ${output ?? '?'} out tokens`;
}

/**
 * One model step as lines: `Model step 1 (scripted, 84 in / 12 out tokens, tool-calls): <text>`,
 * the calls it asked for, and its failed attempts.
 */
export function modelStepLines(step: TranscriptModelStep): string[] {
  const about = [
    step.model,
    usageText(step.usage),
    step.finishReason,
    step.attempts > 1 ? `${step.attempts} attempts` : undefined,
  ].filter((part) => part);
  const failed = step.failures.length > 0 ? ' (no answer)' : ' (no answer yet)';
  const text = step.text === undefined ? failed : step.text ? `: ${step.text}` : '';
  const [first, ...rest] = `  Model step ${step.step} (${about.join(', ')})${text}`.split('\n');
  const out = [first!, ...rest.map((line) => `    ${line}`)];
  for (const f of step.failures) out.push(`    attempt failed: ${f}`);
  if (step.toolCalls?.length) out.push(`    asks: ${step.toolCalls.map((c) => `${c.name} [${c.id}]`).join(', ')}`);
  return out;
}

/** What the operator's hooks decided and said about one call, as lines under it. */
export function hookLines(call: Pick<TranscriptCall, 'preToolUse' | 'postToolUse'>): string[] {
  const out: string[] = [];
  const pre = call.preToolUse;
  if (pre) {
    const verdict = pre.decision === 'deny' ? 'denied' : pre.decision === 'allow' ? 'allowed' : 'no decision';
    out.push(`    PreToolUse: ${verdict}${pre.reason ? `: ${pre.reason.replace(/\n/g, ' / ')}` : ''}`);
    if (pre.updatedInput) out.push(`    arguments rewritten by a hook: ${JSON.stringify(pre.updatedInput)}`);
  }
  const post = call.postToolUse;
  if (post?.note) out.push(`    PostToolUse note: ${post.note.replace(/\n/g, ' / ')}`);
  if (post?.withheld) out.push(`    PostToolUse: result withheld: ${post.withheld.replace(/\n/g, ' / ')}`);
  for (const [event, runs] of [
    ['PreToolUse', pre?.runs ?? []],
    ['PostToolUse', post?.runs ?? []],
  ] as const) {
    for (const r of runs) {
      if (r.verdict === 'error')
        out.push(
          `    ${event} hook error (${r.source}${r.failClosed ? ', fails closed' : ''}): ${r.message ?? 'failed'}`,
        );
    }
  }
  return out;
}
