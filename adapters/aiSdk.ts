/**
 * The AI SDK (`ai` 6) adapter: a turn's tools as a `ToolSet` for `generateText` / `streamText`.
 *
 *   const tools = toolSet(turn);
 *   await generateText({ model, system: turnBriefing(turn, instructions).system, tools, stopWhen: stepCountIs(10), abortSignal });
 */
import { jsonSchema, tool, type Tool, type ToolSet } from 'ai';
import type { Turn } from '../client/turnClient.js';
import {
  objectSchema,
  runDurableCall,
  selectTools,
  type DurableToolResult,
  type DurableToolsOptions,
} from './durableCall.js';

/** A tool result as the model reads it (the AI SDK's `ToolResultOutput`, which `ai` does not export by name). */
export type ToolResultOutput = Awaited<
  ReturnType<NonNullable<Tool<Record<string, unknown>, DurableToolResult>['toModelOutput']>>
>;

export {
  turnBriefing,
  withDurableTurn,
  type DurableToolResult,
  type DurableToolsOptions,
  type TurnBriefing,
} from './durableCall.js';

/**
 * The turn's tools as an AI SDK `ToolSet`, keyed by their public names (`mcp__<server>__<tool>`).
 * Each tool carries the MCP description and input schema; `execute` sends the call with the AI
 * SDK's `toolCallId` as the call ID (the same ID again returns the recorded outcome) and turns
 * `abortSignal` into a cancellation of the call; the application gets `{ outcome, model }`, and the
 * model reads only `model` (text under the token cap, images as image parts, a tool error as an
 * error result).
 */
export function toolSet(turn: Turn, options: DurableToolsOptions = {}): ToolSet {
  const tools: ToolSet = {};
  for (const info of selectTools(turn, options)) {
    tools[info.name] = tool<Record<string, unknown>, DurableToolResult>({
      description: info.description,
      inputSchema: jsonSchema<Record<string, unknown>>(objectSchema(info.inputSchema)),
      execute: (input, { toolCallId, abortSignal }) =>
        runDurableCall(
          turn,
          { id: toolCallId, name: info.name, arguments: input },
          abortSignal,
          options.shapeLimits,
          options,
        ),
      toModelOutput: ({ output }) => modelOutput(output),
    });
  }
  return tools;
}

/**
 * What the model reads of a durable result. A failed call (tool `isError`, bad request, transport)
 * is an error result, so providers mark it as one (Anthropic `is_error`); with images it stays
 * content, since an error result carries text only, and its text says the tool failed.
 */
export function modelOutput(result: DurableToolResult): ToolResultOutput {
  const { outcome, model } = result;
  const failed = outcome.status === 'error' || outcome.isError;
  if (model.images.length === 0)
    return failed ? { type: 'error-text', value: model.text } : { type: 'text', value: model.text };
  return {
    type: 'content',
    value: [
      { type: 'text', text: model.text },
      ...model.images.map((image) => ({ type: 'image-data' as const, data: image.data, mediaType: image.mimeType })),
    ],
  };
}
