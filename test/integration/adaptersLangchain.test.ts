import {
  AIMessage,
  AIMessageChunk,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  type BaseMessage,
} from '@langchain/core/messages';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { structuredTools } from '../../adapters/langchain.js';
import { adapterSuite, type ScriptedCall, type SeenResult } from '../fixtures/adapterScenario.js';

/** The tool messages answering the last AI message of what the model was given. */
function seenIn(messages: BaseMessage[]): SeenResult[] {
  const lastAi = messages.map((m) => AIMessage.isInstance(m)).lastIndexOf(true);
  return messages
    .slice(lastAi + 1)
    .filter((m): m is ToolMessage => ToolMessage.isInstance(m))
    .map((m) => {
      const blocks = (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content) as {
        type: string;
        text?: string;
        mimeType?: string;
        data?: string;
      }[];
      return {
        id: m.tool_call_id,
        text: blocks.flatMap((b) => (b.type === 'text' && b.text !== undefined ? [b.text] : [])).join('\n'),
        images: blocks.flatMap((b) =>
          b.type === 'image' ? [{ mediaType: b.mimeType ?? '', data: b.data ?? '' }] : [],
        ),
        isError: m.status === 'error',
      };
    });
}

adapterSuite({
  name: 'langchain',
  dropsRepeatedCallIds: false,
  errorFlag: true,
  async run(turn, steps: ScriptedCall[][], { system, signal }) {
    // @langchain/core's fake chat models answer every request alike, so one per scripted step.
    const models = [
      ...steps.map(
        (calls) =>
          new FakeStreamingChatModel({
            responses: [new AIMessage('')],
            chunks: [
              new AIMessageChunk({
                content: '',
                tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args, type: 'tool_call' as const })),
              }),
            ],
          }),
      ),
      new FakeStreamingChatModel({ responses: [new AIMessage('done')] }),
    ];
    const tools = new Map(structuredTools(turn).map((t) => [t.name, t]));
    const messages: BaseMessage[] = [new SystemMessage(system), new HumanMessage('Use the tools.')];
    const given: BaseMessage[][] = [];
    for (const model of models) {
      // A real model's request fails on an aborted signal; the fake ones ignore it.
      signal?.throwIfAborted();
      given.push([...messages]);
      const reply = await model.invoke(messages, { signal });
      messages.push(reply);
      if (!reply.tool_calls?.length) break;
      for (const call of reply.tool_calls)
        messages.push(await tools.get(call.name)!.invoke({ ...call, type: 'tool_call' }, { signal }));
    }
    return steps.map((_, i) => seenIn(given[i + 1] ?? []));
  },
});
