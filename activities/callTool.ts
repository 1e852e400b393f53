/** The activity that sends one tool call to the session's server. */
import { ApplicationFailure, Context, CancelledFailure } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { FailureType, type LocalCallOutcome } from '../contract/index.js';
import { scrubberFor } from '../config/secrets.js';
import {
  MAX_NESTING_DEPTH,
  isJsonObject,
  nestedDeeperThan,
  type CallOutcome,
  type CallToolInput,
  type ContentBlock,
  type InputRequiredOutcome,
} from '../contract/index.js';
import { UnservedInputRequestError, isNeedsInput, requestStateProblem } from '../mcp/inputRequests.js';
import type { DeclinedInput } from '../mcp/legacyQuestions.js';
import { checkCall } from './callChecks.js';
import { legacyInputAsker } from './legacyInput.js';
import { sharedSession } from './sharedCalls.js';
import { currentTurnChain, currentTurnId, startHeartbeat } from './context.js';
import type { ActivityKit } from './deps.js';
import { scrubResult, toFailure } from './history.js';

/**
 * `callTool`: checks the call against the operator's rules and its sealed PreToolUse decision, then
 * sends it to the server for the turn Temporal names (never one the input names), heartbeating its
 * progress; the result and any failure are scrubbed of the server's secrets too. A call that names
 * the worker holding its servers was sent to the shared queue for eager dispatch: when the server
 * did not hand it straight back to that worker, any worker may take it, and the others refuse it
 * before anything runs. A shared call (see `sharedCalls.ts`) runs on whichever worker takes it.
 */
export function callToolActivity(
  kit: ActivityKit,
): (input: CallToolInput) => Promise<CallOutcome | InputRequiredOutcome> {
  return async function callTool(input) {
    if (input.workerQueue !== undefined && input.workerQueue !== kit.deps.workerQueue) throw notHolder();
    return runCall(kit, input, true, input.shared !== undefined);
  };
}

/**
 * The refusal of a worker that does not hold the session's servers: nothing ran. Whether the holder
 * is presumed lost is the workflow's to say, from its own state.
 */
function notHolder(): ApplicationFailure {
  // Benign: the SDK logs it at debug, not as a warning with a stack; nothing went wrong.
  return ApplicationFailure.create({
    type: FailureType.FastPathMiss,
    message: "this worker does not hold the session's servers",
    nonRetryable: true,
    category: ApplicationFailureCategory.BENIGN,
  });
}

/**
 * `callToolLocal`: the same call as `callTool`, run as a local activity by the worker running the
 * turn's workflow task. Only on the worker the turn names as holding the session's servers: any
 * other refuses at once (`FastPathMiss`), before anything runs, and the workflow takes the regular
 * path. No heartbeats: a local activity has none; its bound is its start-to-close.
 */
export function callToolLocalActivity(kit: ActivityKit): (input: CallToolInput) => Promise<LocalCallOutcome> {
  return async function callToolLocal(input) {
    if (kit.deps.fastPath === false || input.workerQueue !== kit.deps.workerQueue) throw notHolder();
    return { ...(await runCall(kit, input, false)), callId: input.callId };
  };
}

async function runCall(
  kit: ActivityKit,
  input: CallToolInput,
  heartbeats: boolean,
  shared = false,
): Promise<CallOutcome | InputRequiredOutcome> {
  const { pool } = kit.deps;
  const ctx = Context.current();
  const startedAt = new Date();
  let latest: unknown = { pending: true };
  const stop = heartbeats ? startHeartbeat(ctx, () => latest) : () => {};
  const scrubber = callScrubber(kit.deps.scrub);
  const declined: DeclinedInput[] = [];
  let beforeWait: unknown;
  // A local activity cannot wait for a person: a 2025-era question ends its attempt, and the
  // regular activity, which can, runs the call again (it is safe to: only such calls run locally).
  const toRegularPath = new AbortController();
  // One signal for both ends of a local call: cheaper than AbortSignal.any, which the fast path pays on every call.
  const cancelled = () => toRegularPath.abort(ctx.cancellationSignal.reason);
  if (!heartbeats) ctx.cancellationSignal.addEventListener('abort', cancelled, { once: true });
  try {
    const turnId = currentTurnId();
    await checkCall(kit, input, turnId);
    const chain = currentTurnChain(input.firstRunId);
    const sessionId =
      shared && input.shared ? await sharedSession(kit, { ...input, shared: input.shared }, chain) : undefined;
    const result = await pool.callTool(sessionId ?? input.sessionId, input.server, input.tool, input.arguments, {
      turnId: sessionId ?? chain,
      publicName: input.name,
      signal: heartbeats ? ctx.cancellationSignal : toRegularPath.signal,
      timeoutMs: input.requestTimeoutMs,
      onServerSecrets: scrubber.onServerSecrets,
      // Heartbeat details end up in history (the last ones with a timeout): scrub them like results.
      onProgress: (progress) => {
        latest = { progress: scrubResult(progress, scrubber.scrub) };
        if (heartbeats) ctx.heartbeat(latest);
      },
      ...(input.inputReply ? { inputReply: input.inputReply } : {}),
      askPerson: true,
      legacyInputWaits: heartbeats,
      onDeclinedInput: (asked) => declined.push(asked),
      askLegacyInput: heartbeats
        ? legacyInputAsker(kit, ctx, input, turnId, scrubber.scrub, (waiting) => {
            if (waiting) {
              beforeWait ??= latest;
              latest = waiting;
            } else if (beforeWait !== undefined) {
              latest = beforeWait;
              beforeWait = undefined;
            }
            ctx.heartbeat(latest);
          })
        : async () => {
            toRegularPath.abort();
            return { action: 'cancel' };
          },
    });
    // The server asks a person: the call ends here and the turn waits, with nothing running.
    // The questions are scrubbed; the state is echoed byte for byte, so it is recorded as sent or not at all.
    if (isNeedsInput(result)) {
      const stateProblem =
        result.requestState !== undefined ? requestStateProblem(result.requestState, scrubber.scrub) : undefined;
      if (stateProblem !== undefined) throw new UnservedInputRequestError(stateProblem);
      const requests = scrubResult(result.requests, scrubber.scrub);
      const own = result.ownResponses;
      return {
        status: 'input_required',
        requests,
        ...(result.requestState !== undefined ? { requestState: result.requestState } : {}),
        ...(Object.keys(own).length > 0 ? { ownResponses: own } : {}),
      };
    }
    const timing = {
      startedAt: startedAt.toISOString(),
      durationMs: Date.now() - startedAt.getTime(),
      attempts: ctx.info.attempt,
    };
    return resultOutcome(input.name, result, scrubber.scrub, timing, () => declinedNotes(declined, scrubber.scrub));
  } catch (err) {
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure('tool call cancelled');
    if (toRegularPath.signal.aborted)
      throw ApplicationFailure.create({
        type: FailureType.FastPathAsksPerson,
        message: `${input.name} asked a person mid-call: the regular activity runs it again`,
        nonRetryable: true,
      });
    if (err instanceof ApplicationFailure) throw err;
    if (err instanceof UnservedInputRequestError)
      throw ApplicationFailure.create({
        type: FailureType.BadRequest,
        message: `${input.name}: ${scrubber.scrub(err.message)}`,
        nonRetryable: true,
      });
    throw toFailure(err, input, scrubber.scrub);
  } finally {
    stop();
    ctx.cancellationSignal.removeEventListener('abort', cancelled);
  }
}

/**
 * The recorded outcome of a tool's result (a call's, or a finished task's): scrubbed, structured
 * content kept only as a JSON object, `notes` after the server's content.
 */
export function resultOutcome(
  name: string,
  result: { content?: unknown; isError?: unknown; structuredContent?: unknown },
  scrub: (text: string) => string,
  timing: Pick<CallOutcome, 'startedAt' | 'durationMs' | 'attempts'>,
  notes: () => ContentBlock[] = () => [],
): CallOutcome {
  // A result this deep cannot be scrubbed, recorded or serialized; the tool did run, so say so
  // as the tool's own error rather than as a lost call.
  if (nestedDeeperThan(result, MAX_NESTING_DEPTH)) {
    return {
      status: 'ok',
      content: [
        {
          type: 'text',
          text: `${name} ran, but its result is nested deeper than ${MAX_NESTING_DEPTH} levels and was not kept`,
        },
      ],
      isError: true,
      ...timing,
    };
  }
  const clean = scrubResult(result, scrub);
  return {
    status: 'ok',
    content: [...((clean.content ?? []) as ContentBlock[]), ...notes()],
    isError: result.isError === true,
    // History keeps structured content as a JSON object (all a 2025-era server may send); a
    // modern server's other JSON values reach the model through the text content it also sends.
    ...(isJsonObject(clean.structuredContent) ? { structuredContent: clean.structuredContent } : {}),
    ...timing,
  };
}

/**
 * One call's scrubber. A remote server's header values and URL secrets are not in the worker's
 * environment, so the environment scrubber alone would let a server that echoes them put them into
 * history: once the pool names them, they are scrubbed too.
 */
export function callScrubber(scrub: (text: string) => string): {
  scrub: (text: string) => string;
  onServerSecrets: (values: () => readonly string[]) => void;
} {
  let scrubAll = scrub;
  return {
    scrub: (text) => scrubAll(text),
    onServerSecrets: (values) => {
      // Rebuilt only when the list changes (a login refreshed during the call adds a token).
      let built: { key: string; own: (text: string) => string } | undefined;
      scrubAll = (text) => {
        const now = values();
        const key = now.join('\0');
        if (built?.key !== key) built = { key, own: scrubberFor(now) };
        return built.own(scrub(text));
      };
    },
  };
}

/**
 * What the model reads about the 2025-era questions the worker declined: the server's own result
 * may only say "declined", and the model should know no person saw them, and why.
 */
function declinedNotes(declined: DeclinedInput[], scrub: (text: string) => string): ContentBlock[] {
  return declined.map((d) => ({
    type: 'text',
    text: `[durable-mcp] the server asked for ${d.mode === 'url' ? 'a page to be opened' : 'input'} (${JSON.stringify(scrub(d.message).slice(0, 500))}); it was declined without asking a person: ${scrub(d.reason)}`,
  }));
}
