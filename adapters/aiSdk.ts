/**
 * The AI SDK (`ai` 6) adapter: a turn's tools as a `ToolSet` for `generateText` / `streamText`.
 *
 *   const tools = toolSet(turn);
 *   await generateText({ model, system: turnBriefing(turn, instructions).system, tools, stopWhen: stepCountIs(10), abortSignal });
 */
import { jsonSchema, tool, type ToolSet } from 'ai';
import type { Turn } from '../client/turnClient.js';
import {
  objectSchema,
  runDurableCall,
  selectTools,
  type DurableToolResult,
  type DurableToolsOptions,
} from './durableCall.js';

import { modelOutput as shapedOutput, type ToolResultOutput } from '../shaping/modelOutput.js';

export type { ToolResultOutput };

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

/** What the model reads of a durable result (see the shaping rule it follows). */
export function modelOutput(result: DurableToolResult): ToolResultOutput {
  return shapedOutput(result.outcome, result.model);
}
