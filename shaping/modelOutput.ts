/** What the model reads of a call's outcome, in the AI SDK's terms: one rule for the adapters and for model turns. */
import type { Tool } from 'ai';
import type { CallOutcome } from '../contract/index.js';
import type { ModelView } from './shapeResult.js';

/** A tool result as the model reads it (the AI SDK's `ToolResultOutput`, which `ai` does not export by name). */
export type ToolResultOutput = Awaited<
  ReturnType<NonNullable<Tool<Record<string, unknown>, unknown>['toModelOutput']>>
>;

/**
 * What the model reads of a shaped outcome. A failed call (tool `isError`, bad request, transport)
 * is an error result, so providers mark it as one (Anthropic `is_error`); with images it stays
 * content, since an error result carries text only, and its text says the tool failed.
 */
export function modelOutput(outcome: CallOutcome, shaped: ModelView): ToolResultOutput {
  const failed = outcome.status === 'error' || outcome.isError;
  // The model asked for other arguments than the call ran with: it reads which.
  const model = outcome.approvedArguments
    ? {
        ...shaped,
        text: `(A person approved this call with other arguments, and it ran with them: ${JSON.stringify(outcome.approvedArguments)})\n${shaped.text}`,
      }
    : shaped;
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
