/**
 * A user's own workflows, as the plugin's tests run them: each opens MCP servers from workflow code
 * through `durable-mcp/workflow`. Re-exports durable-mcp's workflows, so the same worker serves turns.
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, stepCountIs } from 'ai';
import { mcpToolSet } from '../../workflows/aiSdkTools.js';
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

/** What the scripted model activity answers for one step (the AI SDK's generate result, serialisable). */
export type ModelStepResult = Awaited<ReturnType<LanguageModelV3['doGenerate']>>;

/** The test's model: one step per activity, scripted by the test worker (no network). */
const { scriptedModelStep } = proxyActivities<{ scriptedModelStep(prompt: unknown): Promise<ModelStepResult> }>({
  startToCloseTimeout: '10 seconds',
});

const scriptedModel: LanguageModelV3 = {
  specificationVersion: 'v3',
  provider: 'scripted',
  modelId: 'scripted',
  supportedUrls: {},
  doGenerate: (options) => scriptedModelStep(options.prompt),
  doStream: () => Promise.reject(new Error('the scripted model does not stream')),
};

/** An AI SDK agent loop inside the workflow: model steps are activities, MCP tools durable calls. */
export async function agentWithMcpTools(): Promise<{ text: string; steps: number; toolCallIds: string[] }> {
  const mcp = await openMcpSession();
  const result = await generateText({
    model: scriptedModel,
    tools: mcpToolSet(mcp, { filter: (t) => t.name.startsWith('mcp__echo__') }),
    prompt: 'Ask the echo tool to say hello, then tell me what it said.',
    stopWhen: stepCountIs(4),
  });
  await mcp.close({ endSession: true });
  return {
    text: result.text,
    steps: result.steps.length,
    toolCallIds: result.steps.flatMap((s) => s.toolCalls.map((c) => c.toolCallId)),
  };
}

export interface CrashableCallsResult {
  done: CallOutcome;
  readOnly: CallOutcome;
  sideEffect: CallOutcome;
  later: CallOutcome;
  heldBy: { before: string; after: string };
}

/**
 * A call that completes, then a read-only and a side-effecting call of 6 s each in parallel (the
 * test kills the worker holding the servers meanwhile), then one more call.
 */
export async function crashableCalls(): Promise<CrashableCallsResult> {
  const mcp = await openMcpSession({ limits: { heartbeatTimeoutMs: 3000, scheduleToStartMs: 3000 } });
  const before = mcp.workerQueue;
  const done = await mcp.callTool('mcp__echo__echo', { text: 'before the crash' }, { id: 'done' });
  const [readOnly, sideEffect] = await Promise.all([
    mcp.callTool('mcp__echo__read_slow', { ms: 6000, tag: 'ro' }, { id: 'ro' }),
    mcp.callTool('mcp__echo__slow', { ms: 6000, tag: 'se' }, { id: 'se' }),
  ]);
  const later = await mcp.callTool('mcp__echo__echo', { text: 'after the crash' }, { id: 'later' });
  await mcp.close({ endSession: true });
  return { done, readOnly, sideEffect, later, heldBy: { before, after: mcp.workerQueue } };
}

/** Calls a tool whose result is `bytes` of text; returns only its length, so the workflow's own result stays small. */
export async function bigResult(bytes: number): Promise<{ chars: number }> {
  const mcp = await openMcpSession();
  const outcome = await mcp.callTool('mcp__big__text', { bytes, seed: 'plugin' });
  await mcp.close({ endSession: true });
  const first = outcome.content[0];
  return { chars: first?.type === 'text' ? first.text.length : -1 };
}
