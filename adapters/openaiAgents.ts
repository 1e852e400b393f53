/**
 * The OpenAI Agents SDK adapter: a turn's tools as function tools for an `Agent`.
 *
 *   const agent = new Agent({ name, model, instructions: turnBriefing(turn, instructions).system, tools: functionTools(turn) });
 *   await run(agent, input, { signal });
 *
 * Imported from `@openai/agents-core`, the package `@openai/agents` re-exports (the same module, so
 * these tools go into an `Agent` from either): it has everything a function tool needs and loads
 * no model client.
 */
import {
  tool,
  type FunctionTool,
  type RunContext,
  type ToolOutputImage,
  type ToolOutputText,
} from '@openai/agents-core';
import type { Turn } from '../client/turnClient.js';
import {
  MissingToolCallIdError,
  objectSchema,
  runDurableCall,
  selectTools,
  type DurableToolResult,
  type DurableToolsOptions,
} from './durableCall.js';

export {
  turnBriefing,
  withDurableTurn,
  type DurableToolResult,
  type DurableToolsOptions,
  type TurnBriefing,
} from './durableCall.js';

/** What a durable function tool hands the runner: the model's view as text and image items. */
export type DurableToolOutput = (ToolOutputText | ToolOutputImage)[];

/** `tool()`'s JSON-schema parameters: MCP schemas are passed as the server wrote them, never made strict. */
type NonStrictParameters = Parameters<typeof tool>[0] extends infer O
  ? O extends { strict: false; parameters: infer P }
    ? Exclude<P, undefined>
    : never
  : never;

/**
 * The turn's tools as function tools (non-strict: MCP schemas are used as the servers wrote them).
 * Each call uses the run's function-call ID (`callId`) as the call ID, so the same function call
 * again returns the recorded outcome; the run's abort `signal` cancels the call in flight. The model
 * reads the shaped result: `<toolOutput>` text, then the images that fit as image items. A tool
 * error is text that says the tool failed: function-call outputs have no error flag.
 */
export function functionTools(
  turn: Turn,
  options: DurableToolsOptions = {},
): FunctionTool<unknown, NonStrictParameters, DurableToolOutput>[] {
  const selected = selectTools(turn, options);
  const byFunctionName = new Map<string, string>();
  for (const info of selected) {
    const name = functionToolName(info.name);
    const other = byFunctionName.get(name);
    if (other !== undefined) {
      throw new Error(
        `tools ${other} and ${info.name} would both be named ${name} by the OpenAI Agents SDK; leave one out with the "filter" option`,
      );
    }
    byFunctionName.set(name, info.name);
  }
  return selected.map(
    (info) =>
      tool({
        name: info.name,
        description: info.description,
        parameters: objectSchema(info.inputSchema) as NonStrictParameters,
        strict: false,
        execute: async (
          input: unknown,
          _context?: RunContext<unknown>,
          details?: { toolCall?: { callId?: string }; signal?: AbortSignal },
        ) => {
          const id = details?.toolCall?.callId;
          if (!id) throw new MissingToolCallIdError(info.name, 'the OpenAI Agents SDK');
          const args = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
          return toolOutput(
            await runDurableCall(
              turn,
              { id, name: info.name, arguments: args },
              details?.signal,
              options.shapeLimits,
              options,
            ),
          );
        },
        // Without this the runner replaces any error with a fixed generic message.
        errorFunction: (_context, error) =>
          `Tool call failed: ${error instanceof Error ? error.message : String(error)}`,
      }) as FunctionTool<unknown, NonStrictParameters, DurableToolOutput>,
  );
}

/**
 * The name the model sees for a tool: the SDK replaces every character but letters and digits
 * with `_` (`mcp__everything__get-tiny-image` becomes `mcp__everything__get_tiny_image`).
 */
export function functionToolName(publicName: string): string {
  return publicName.replace(/[^a-zA-Z0-9]/g, '_');
}

/** The model's view as function-call output items. */
export function toolOutput(result: DurableToolResult): DurableToolOutput {
  return [
    { type: 'text', text: result.model.text },
    ...result.model.images.map(
      (image): ToolOutputImage => ({ type: 'image', image: { data: image.data, mediaType: image.mimeType } }),
    ),
  ];
}
