/**
 * A model turn's loop: ask the model (one activity per step), run the tool calls it asks for
 * through the turn's call path, hand their outcomes to the next step; until a final answer, the
 * step limit, the deadline, `endTurn` or a cancel. The conversation itself stays in the payload
 * store: a step's input and result carry its head, so history grows by one step's worth per step.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  sleep,
  upsertMemo,
} from '@temporalio/workflow';
import {
  DEFAULT_MAX_MODEL_STEPS,
  DEFAULT_MODEL_DEADLINE_MS,
  MODEL_STEP_PARALLEL_CALLS,
  objectSchema,
  type CallOutcome,
  type ModelStepInput,
  type ModelStepResult,
  type ModelTool,
  type ModelToolCall,
  type ModelTurnInput,
  type ToolResultInput,
} from '../contract/index.js';
import type { Activities } from '../activities/index.js';
import { modelStepOptions } from './activityOptions.js';
import { runCall } from './calls.js';
import type { TurnContext } from './turnState.js';

/** Runs the model loop of `model` in the turn; sets how the turn ended. */
export async function runModelLoop(ctx: TurnContext, model: ModelTurnInput): Promise<void> {
  const { state } = ctx;
  const loop = new CancellationScope();
  const deadline = new CancellationScope();
  let deadlinePassed = false;
  // A timer, so the deadline holds across worker restarts and waits for people.
  deadline
    .run(() => sleep(model.deadlineMs ?? DEFAULT_MODEL_DEADLINE_MS))
    .then(
      () => {
        deadlinePassed = true;
        loop.cancel();
      },
      () => undefined,
    );
  try {
    await loop.run(() => steps(ctx, model));
  } catch (err) {
    if (!(deadlinePassed && isCancellation(err))) throw err;
    state.ended ??= 'deadline';
  } finally {
    deadline.cancel();
    if (state.conversation !== undefined) upsertMemo({ conversation: state.conversation });
  }
}

async function steps(ctx: TurnContext, model: ModelTurnInput): Promise<void> {
  const { state, input } = ctx;
  const maxSteps = model.maxSteps ?? DEFAULT_MAX_MODEL_STEPS;
  state.conversation = model.conversation;
  let contextRef: string | undefined;
  let toolResults: ToolResultInput[] | undefined;
  for (let step = 1; state.ended === undefined; step++) {
    const stepInput: ModelStepInput = {
      sessionId: input.sessionId,
      model: model.name,
      step,
      ...(state.conversation !== undefined ? { parent: state.conversation } : {}),
      ...(contextRef === undefined
        ? { prompt: model.prompt, context: { serversParagraph: state.start!.serversParagraph, tools: modelTools(ctx) } }
        : { contextRef, toolResults }),
    };
    const result = await modelStep(ctx, stepInput);
    contextRef = result.contextRef;
    state.conversation = result.head;
    const calls = callIds(ctx, result.toolCalls);
    state.modelSteps.push({
      step,
      text: result.text,
      toolCalls: calls.map((c) => ({ id: c.callId, name: c.name })),
      finishReason: result.finishReason,
      usage: result.usage,
    });
    state.answer = result.text;
    state.details.modelStep(model.name, step, result.text, calls.length);
    // Calls the model asked for in its last allowed step are not run: it would never read their outcomes.
    if (calls.length === 0) state.ended ??= 'answer';
    else if (step >= maxSteps) state.ended ??= 'maxSteps';
    if (state.ended !== undefined) return;
    const outcomes = await inPlaces(calls, MODEL_STEP_PARALLEL_CALLS, (c) =>
      runCall(ctx, { id: c.callId, name: c.name, arguments: c.arguments }),
    );
    toolResults = calls.map((c, i) => ({ toolCallId: c.id, toolName: c.name, outcome: outcomes[i]! }));
  }
}

function modelStep(ctx: TurnContext, input: ModelStepInput): Promise<ModelStepResult> {
  const options = modelStepOptions(ctx.sharedQueue, input.model, input.step, ctx.limits);
  return proxyActivities<Activities>(options)
    .modelStep(input)
    .catch((err: unknown) => {
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      // The turn fails with the step's own reason, so the UI and the caller read it without unwrapping.
      const cause = err.cause instanceof ApplicationFailure ? err.cause : undefined;
      throw ApplicationFailure.create({
        type: cause?.type ?? 'ModelStepFailed',
        message: `model ${input.model}, step ${input.step}: ${cause?.message ?? err.cause?.message ?? err.message}`,
        nonRetryable: true,
      });
    });
}

/** The tools the model is offered: the turn's frozen list, without those its rules refuse. */
function modelTools(ctx: TurnContext): ModelTool[] {
  return [...ctx.state.tools.values()]
    .filter((t) => t.refusedBy === undefined)
    .map((t) => ({ name: t.name, description: t.description, inputSchema: objectSchema(t.inputSchema) }));
}

/**
 * The turn's call ID of each tool call: the model's own ID, unless the turn already has a call
 * with it (a model may reuse IDs across steps); then it is made unique, and the model still
 * reads the outcome under its own ID.
 */
function callIds(ctx: TurnContext, toolCalls: ModelToolCall[]): (ModelToolCall & { callId: string })[] {
  return toolCalls.map((c) => {
    let callId = c.id;
    for (let n = 2; ctx.state.modelCallIds.has(callId); n++) callId = `${c.id}#${n}`;
    ctx.state.modelCallIds.add(callId);
    return { ...c, callId };
  });
}

/** Runs `run` on every item, at most `places` at once, outcomes in the items' order. */
async function inPlaces<T>(items: T[], places: number, run: (item: T) => Promise<CallOutcome>): Promise<CallOutcome[]> {
  const outcomes: CallOutcome[] = new Array<CallOutcome>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      outcomes[i] = await run(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(places, items.length) }, worker));
  return outcomes;
}
