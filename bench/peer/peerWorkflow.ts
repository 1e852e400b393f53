/**
 * Workflows for the peer benchmark, run by bench/peer/peerWorker.ts from the peer's own install
 * (Temporal's `@temporalio/ai-sdk` MCP path, no model): `peerTurn` lists the server's tools once
 * through `TemporalMCPClient` (an activity), then each Update `call` runs the tool's `execute`,
 * which is the integration's `<server>-callTool` activity. `peerBareTurn` is the bare baseline
 * (Update -> no-op activity) on the peer's Temporal SDK version.
 */
import { TemporalMCPClient, type PeerTool } from '@temporalio/ai-sdk/workflow';
import { condition, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';

export const peerCallUpdate = defineUpdate<unknown, [string, Record<string, unknown>, string]>('call');
export const peerEndUpdate = defineUpdate<void>('end');

export async function peerTurn(server: string): Promise<number> {
  // eslint-disable-next-line prefer-const -- the Update handler reads it before it is set
  let tools: Record<string, PeerTool> | undefined;
  let ended = false;
  let calls = 0;
  // Handlers first: Updates sent while the tool list is being fetched wait for it.
  setHandler(peerCallUpdate, async (name, input, id) => {
    await condition(() => tools !== undefined);
    const tool = tools![name];
    if (!tool) throw new Error(`unknown tool ${name}`);
    const result = await tool.execute(input, { toolCallId: id, messages: [] });
    calls += 1;
    return result;
  });
  setHandler(peerEndUpdate, () => {
    ended = true;
  });
  tools = await new TemporalMCPClient({ name: server }).tools();
  await condition(() => ended);
  return calls;
}

const { noop } = proxyActivities<{ noop(input: { id: string; arguments: Record<string, unknown> }): Promise<unknown> }>(
  { startToCloseTimeout: '1m' },
);

export async function peerBareTurn(): Promise<number> {
  let ended = false;
  let calls = 0;
  setHandler(peerCallUpdate, async (_name, args, id) => {
    const result = await noop({ id, arguments: args });
    calls += 1;
    return result;
  });
  setHandler(peerEndUpdate, () => {
    ended = true;
  });
  await condition(() => ended);
  return calls;
}
