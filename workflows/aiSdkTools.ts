/**
 * `durable-mcp/workflow/ai-sdk`: a session's tools as an AI SDK (`ai` 6) `ToolSet`, for an agent
 * loop written inside the user's own workflow (its model calls made activities by the user's code or
 * a Temporal AI plugin). Each tool call is a durable call of the session, keyed by the model's
 * tool-call ID.
 */
import { jsonSchema, tool, type ToolSet } from 'ai';
import { objectSchema, type CallOutcome, type ToolInfo } from '../contract/index.js';
import type { McpSession } from './mcpSession.js';

/** Options of {@link mcpToolSet}. */
export interface McpToolSetOptions {
  /** Which of the session's tools to offer (default: all of them). */
  filter?: (tool: ToolInfo) => boolean;
  /** At most this many characters of a result's text reach the model (default 40,000, about 10k tokens). */
  maxTextChars?: number;
}

const DEFAULT_MAX_TEXT_CHARS = 40_000;

/**
 * The session's tools as a `ToolSet`, keyed by their public names. `execute` resolves with the
 * recorded outcome; the model reads its text (a tool error as an error result) and its images.
 */
export function mcpToolSet(session: McpSession, options: McpToolSetOptions = {}): ToolSet {
  const max = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS;
  const tools: ToolSet = {};
  for (const info of options.filter ? session.tools.filter(options.filter) : session.tools) {
    tools[info.name] = tool<Record<string, unknown>, CallOutcome>({
      description: info.description,
      inputSchema: jsonSchema<Record<string, unknown>>(objectSchema(info.inputSchema)),
      execute: (input, { toolCallId }) => session.callTool(info.name, input, { id: toolCallId }),
      toModelOutput: ({ output }) => modelOutputOf(output, max),
    });
  }
  return tools;
}

/**
 * What the model reads of an outcome, computed in workflow code (no tokenizer, no image resizing:
 * those run where a TurnClient shapes results): text blocks under a character cap, images as
 * image parts, other blocks named; a failed call as an error result.
 */
export function modelOutputOf(outcome: CallOutcome, maxTextChars: number) {
  const parts: string[] = [];
  const images: { type: 'image-data'; data: string; mediaType: string }[] = [];
  for (const [i, block] of outcome.content.entries()) {
    if (block.type === 'text') parts.push(block.text);
    else if (block.type === 'image' && typeof block.data === 'string' && typeof block.mimeType === 'string')
      images.push({ type: 'image-data', data: block.data, mediaType: block.mimeType });
    else parts.push(`[content[${i}]: a ${String(block.type)} block, not shown]`);
  }
  if (outcome.status === 'error' && outcome.errorMessage) parts.push(outcome.errorMessage);
  let text = parts.join('\n');
  if (text.length > maxTextChars)
    text = `${text.slice(0, maxTextChars)}\n[cut: ${text.length - maxTextChars} more characters not shown]`;
  const failed = outcome.status === 'error' || outcome.isError;
  if (images.length === 0)
    return failed ? { type: 'error-text' as const, value: text } : { type: 'text' as const, value: text };
  return { type: 'content' as const, value: [{ type: 'text' as const, text }, ...images] };
}
