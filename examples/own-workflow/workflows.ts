/**
 * Your own workflow code, calling MCP tools durably: each call is an activity (or a local activity
 * on the fast path) recorded in this workflow's history, run once per call ID, retried only when
 * the tool is safe to retry, and its questions to a person wait here, durably.
 */
import { openMcpSession } from 'durable-mcp/workflow';

// durable-mcp's own workflows, so this worker also serves turns started by TurnClient, the CLI or the API.
export * from 'durable-mcp/workflows';

/** Echoes a message through server-everything's `echo` tool and adds two numbers with its `get-sum`. */
export async function echoAndAdd(message: string): Promise<string> {
  const mcp = await openMcpSession();
  try {
    const echoed = await mcp.callTool('mcp__everything__echo', { message });
    const sum = await mcp.callTool('mcp__everything__get-sum', { a: 2, b: 3 });
    // A failed call is an outcome too: its error says why (a server that did not start, a bad argument).
    const text = (outcome: typeof echoed) =>
      outcome.status === 'error'
        ? `error (${outcome.errorKind}): ${outcome.errorMessage}`
        : outcome.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join(' ');
    return `${mcp.tools.length} tools; ${text(echoed)}; ${text(sum)}`;
  } finally {
    await mcp.close({ endSession: true });
  }
}
