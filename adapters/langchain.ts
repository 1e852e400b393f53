/**
 * The LangChain.js adapter: a turn's tools as structured tools, invoked with the model's tool calls.
 *
 *   const tools = structuredTools(turn);
 *   const model = chatModel.bindTools(tools);
 *   for (const call of aiMessage.tool_calls) messages.push(await byName[call.name].invoke(call, { signal }));
 */
import { ToolMessage } from '@langchain/core/messages';
import { DynamicStructuredTool } from '@langchain/core/tools';
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

/** A durable tool: JSON-schema input, a `ToolMessage` out. */
export type DurableStructuredTool = DynamicStructuredTool<
  Record<string, unknown>,
  Record<string, unknown>,
  Record<string, unknown>,
  ToolMessage
>;

/**
 * The turn's tools as LangChain structured tools. Invoke each with the model's tool call (the
 * `ToolCall` from `AIMessage.tool_calls`): its `id` is the call ID, so the same tool call again
 * returns the recorded outcome. The tool answers a `ToolMessage` whose content is what the model
 * reads (`<toolOutput>` text, then the images that fit as standard image blocks), whose `status`
 * is `error` when the call failed, and whose `artifact` is the `{ outcome, model }` result. The
 * config's `signal` cancels the call in flight; the cancelled outcome is still returned.
 */
export function structuredTools(turn: Turn, options: DurableToolsOptions = {}): DurableStructuredTool[] {
  return selectTools(turn, options).map(
    (info) =>
      new DynamicStructuredTool({
        name: info.name,
        description: info.description,
        schema: objectSchema(info.inputSchema),
        func: async (input, _runManager, config) => {
          const id = (config as { toolCall?: { id?: string } } | undefined)?.toolCall?.id;
          if (!id) throw new MissingToolCallIdError(info.name, 'LangChain');
          return toolMessage(
            info.name,
            id,
            await runDurableCall(
              turn,
              { id, name: info.name, arguments: input },
              config?.signal,
              options.shapeLimits,
              options,
            ),
          );
        },
      }) as DurableStructuredTool,
  );
}

/** The model's view as a `ToolMessage` answering tool call `id`. */
export function toolMessage(name: string, id: string, result: DurableToolResult): ToolMessage {
  const { outcome, model } = result;
  return new ToolMessage({
    tool_call_id: id,
    name,
    status: outcome.status === 'error' || outcome.isError ? 'error' : 'success',
    content: [
      { type: 'text', text: model.text },
      ...model.images.map((image) => ({ type: 'image' as const, mimeType: image.mimeType, data: image.data })),
    ],
    artifact: result,
  });
}
