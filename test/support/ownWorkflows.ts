/**
 * A user's own workflows, as the plugin's tests run them: each opens MCP servers from workflow code
 * through `durable-mcp/workflow`. Re-exports durable-mcp's workflows, so the same worker serves turns.
 */
import { openMcpSession, type CallOutcome } from '../../workflows/mcpSession.js';

export * from '../../workflows/index.js';

export interface ListAndCallResult {
  tools: string[];
  serversParagraph: string;
  echo: CallOutcome;
  again: CallOutcome;
  misspelled: CallOutcome;
}

/** Lists the tools, calls echo twice under one call ID and a misspelled tool once, and ends the session. */
export async function listAndCall(input: { sessionId?: string } = {}): Promise<ListAndCallResult> {
  const mcp = await openMcpSession(input.sessionId !== undefined ? { sessionId: input.sessionId } : {});
  const echo = await mcp.callTool('mcp__echo__echo', { text: 'from my workflow' }, { id: 'once' });
  const again = await mcp.callTool('mcp__echo__echo', { text: 'from my workflow' }, { id: 'once' });
  const misspelled = await mcp.callTool('mcp__echo__ecoh', { text: 'x' });
  await mcp.close({ endSession: true });
  return { tools: mcp.tools.map((t) => t.name), serversParagraph: mcp.serversParagraph, echo, again, misspelled };
}

/** Calls a tool that asks a person (2025-era elicitation); the answer comes by the `answerInput` Update. */
export async function askAPerson(): Promise<CallOutcome> {
  const mcp = await openMcpSession();
  const outcome = await mcp.callTool('mcp__everything__trigger-elicitation-request', {}, { id: 'q1' });
  await mcp.close({ endSession: true });
  return outcome;
}
