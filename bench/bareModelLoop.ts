/**
 * The "bare Temporal" model loop of bench/modelTurn.ts, as people write it first: per step, one
 * activity asks the model with the whole message list as its input, then one activity per tool call
 * makes the MCP call; the messages live in the workflow, so every step's input carries all of them
 * and history grows with the square of the steps. Activities: bench/modelTurn.ts `--bare-worker`.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ModelMessage } from 'ai';

export interface BareToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface BareModelActivities {
  /** AI SDK `generateText` against the model, given every message so far. */
  modelCall(input: { messages: ModelMessage[] }): Promise<{
    text: string;
    toolCalls: BareToolCall[];
    /** The messages the answer adds (the assistant's). */
    messages: ModelMessage[];
  }>;
  /** One tool call through a plain MCP client. */
  mcpCall(input: BareToolCall): Promise<{ text: string; isError: boolean }>;
}

export async function bareModelLoop(input: {
  prompt: string;
  maxSteps: number;
}): Promise<{ steps: number; answer: string; calls: number }> {
  const { modelCall, mcpCall } = proxyActivities<BareModelActivities>({ startToCloseTimeout: '1m' });
  const messages: ModelMessage[] = [{ role: 'user', content: input.prompt }];
  let calls = 0;
  for (let step = 1; step <= input.maxSteps; step++) {
    const answer = await modelCall({ messages });
    messages.push(...answer.messages);
    if (answer.toolCalls.length === 0 || step === input.maxSteps) return { steps: step, answer: answer.text, calls };
    const results = await Promise.all(answer.toolCalls.map((call) => mcpCall(call)));
    calls += results.length;
    messages.push(toolMessage(answer.toolCalls, results));
  }
  return { steps: input.maxSteps, answer: '', calls };
}

/** The message that hands the calls' results back to the model (also used by bench/modelTurn.ts's in-process loop). */
export function toolMessage(calls: BareToolCall[], results: { text: string; isError: boolean }[]): ModelMessage {
  return {
    role: 'tool',
    content: calls.map((call, i) => ({
      type: 'tool-result' as const,
      toolCallId: call.id,
      toolName: call.name,
      output: { type: results[i]!.isError ? ('error-text' as const) : ('text' as const), value: results[i]!.text },
    })),
  };
}
