/**
 * durable-mcp in a user's own worker and workflow code: a Worker created with `DurableMcpPlugin`
 * and a workflow bundle of the user's own workflows (test/support/ownWorkflows.ts), which open the
 * operator's servers through `durable-mcp/workflow`. Real Temporal, real stdio servers (the echo
 * fixture, which logs every execution, and server-everything for a question to a person).
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { ApplicationFailure, Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { RefusalType } from '../../contract/index.js';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import pino from 'pino';
import { quietBundlerLogger } from '../../worker/parts.js';
import { DurableMcpPlugin } from '../../worker/plugin.js';
import { answerInputUpdate } from '../../workflows/mcpSession.js';
import { text } from '../support/inputs.js';
import {
  everythingServer,
  fixtureServer,
  tempDir,
  temporalAddress,
  uniqueQueue,
  writeConfigDir,
} from '../support/harness.js';
import type {
  agentWithMcpTools,
  askAPerson,
  bigResult,
  listAndCall,
  ModelStepResult,
} from '../support/ownWorkflows.js';

const ownWorkflows = fileURLToPath(new URL('../support/ownWorkflows.js', import.meta.url));
const bigServer = fileURLToPath(new URL('../fixtures/bigServer.js', import.meta.url));

describe('a user workflow calls MCP tools through the plugin', { timeout: 240_000 }, () => {
  let client: Client;
  let worker: Worker;
  let running: Promise<void>;
  let connection: NativeConnection;
  let taskQueue: string;
  let effects: string;
  let dataDir: string;
  const logs: string[] = [];

  before(async () => {
    // Each test file runs in a process of its own: the SDK's own log at WARN, as the harness sets it.
    Runtime.install({ logger: new DefaultLogger('WARN') });
    const dir = await tempDir('dmcp-own-');
    effects = join(dir, 'effects.log');
    const configDir = join(dir, 'config');
    await writeConfigDir(configDir, {
      echo: { command: process.execPath, args: [fixtureServer], env: { FIXTURE_LOG: effects } },
      everything: { command: process.execPath, args: [everythingServer, 'stdio'] },
      big: { command: process.execPath, args: [bigServer] },
    });
    dataDir = join(dir, 'data');
    const plugin = new DurableMcpPlugin({
      configDir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_DATA_DIR: dataDir },
      logger: pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) }),
    });
    taskQueue = uniqueQueue('own-workflow');
    connection = await NativeConnection.connect({ address: temporalAddress() });
    worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: await bundleWorkflowCode({
        workflowsPath: ownWorkflows,
        logger: quietBundlerLogger,
        plugins: [plugin],
      }),
      activities: { scriptedModelStep },
      plugins: [plugin],
    });
    running = worker.run();
    client = new Client({ connection: await Connection.connect({ address: temporalAddress() }), plugins: [plugin] });
  });

  after(async () => {
    worker?.shutdown();
    await running;
    await connection?.close();
    await client?.connection.close();
  });

  test('lists the operator servers tools; a call ID runs once; a misspelled tool is an outcome naming the right one', async () => {
    const result = await client.workflow.execute<typeof listAndCall>('listAndCall', {
      taskQueue,
      workflowId: `own-${Date.now()}`,
      args: [{}],
    });
    assert.ok(result.tools.includes('mcp__echo__echo'), `tools: ${result.tools.join(', ')}`);
    assert.ok(result.tools.includes('mcp__everything__echo'), `tools: ${result.tools.join(', ')}`);
    assert.equal(text(result.echo), 'from my workflow');
    assert.deepEqual(result.again, result.echo);
    const ran = (await readFile(effects, 'utf8'))
      .trim()
      .split('\n')
      .filter((l) => l.includes('from my workflow'));
    assert.equal(ran.length, 1, 'the tool ran once for two calls under one ID');
    assert.equal(result.misspelled.status, 'error');
    assert.equal(result.misspelled.errorKind, 'bad_request');
    assert.match(result.misspelled.errorMessage ?? '', /did you mean "?mcp__echo__echo/);
    assert.match(result.serversParagraph, /echo/);
  });

  test("the calls are recorded in the user's workflow history as durable-mcp activities", async () => {
    const workflowId = `own-history-${Date.now()}`;
    await client.workflow.execute<typeof listAndCall>('listAndCall', { taskQueue, workflowId, args: [{}] });
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const types = (history.events ?? []).flatMap((e) => {
      const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
      const marker = e.markerRecordedEventAttributes?.markerName;
      return scheduled ? [scheduled] : marker ? [marker] : [];
    });
    assert.ok(types.includes('reconcileServers'), types.join(', '));
    assert.ok(types.includes('listTools'), types.join(', '));
    assert.ok(
      types.includes('callTool') || types.includes('core_local_activity'),
      `the echo call is an activity or local activity: ${types.join(', ')}`,
    );
    assert.ok(types.includes('endSession'), types.join(', '));
  });

  test('a question a tool asks waits durably in the workflow and is answered by an Update', async () => {
    const workflowId = `own-ask-${Date.now()}`;
    const handle = await client.workflow.start<typeof askAPerson>('askAPerson', { taskQueue, workflowId, args: [] });
    let receipt: unknown;
    for (let i = 0; i < 300 && receipt === undefined; i++) {
      receipt = await handle
        .executeUpdate(answerInputUpdate, {
          args: ['q1:1:elicitation', { action: 'accept', content: { name: 'from-the-plugin-test' } }],
        })
        .catch(async (err: unknown) => {
          // Refused until the question is open: asked and recorded by the running call.
          if (!/no open input request/.test(String((err as Error).cause ?? err))) throw err;
          await new Promise((resolve) => setTimeout(resolve, 100));
          return undefined;
        });
    }
    assert.deepEqual(receipt, { requestId: 'q1:1:elicitation', action: 'accept' });
    const outcome = await handle.result();
    assert.match(text(outcome), /from-the-plugin-test/);
  });

  test("an AI SDK agent loop in the user's workflow calls the session's tools durably, keyed by the model's tool-call ID", async () => {
    const before = await readFile(effects, 'utf8').catch(() => '');
    const workflowId = `own-agent-${Date.now()}`;
    const result = await client.workflow.execute<typeof agentWithMcpTools>('agentWithMcpTools', {
      taskQueue,
      workflowId,
      args: [],
    });
    assert.equal(result.text, 'The tool said: hello from the model');
    assert.equal(result.steps, 2);
    assert.deepEqual(result.toolCallIds, ['model-call-1']);
    const ran = (await readFile(effects, 'utf8')).slice(before.length);
    assert.equal(ran.split('\n').filter((l) => l.includes('hello from the model')).length, 1);
    const history = JSON.stringify(await client.workflow.getHandle(workflowId).fetchHistory());
    assert.ok(history.includes('scriptedModelStep'), 'each model step is an activity in the history');
  });

  test("a big result goes to the plugin's payload store; the user's history keeps a reference", async () => {
    const workflowId = `own-big-${Date.now()}`;
    const result = await client.workflow.execute<typeof bigResult>('bigResult', {
      taskQueue,
      workflowId,
      args: [400_000],
    });
    assert.deepEqual(result, { chars: 400_000 });
    const raw = Buffer.byteLength(JSON.stringify(await client.workflow.getHandle(workflowId).fetchHistory()));
    assert.ok(raw < 64 * 1024, `the history is ${raw} bytes: the result's 400,000 are not in it`);
    assert.ok(readdirSync(join(dataDir, 'payloads')).length > 0, 'the payload store holds the result');
  });

  test('a workflow ID that is no session ID is refused, naming sessionId', async () => {
    const err = await client.workflow
      .execute<typeof listAndCall>('listAndCall', { taskQueue, workflowId: `own/${Date.now()}`, args: [{}] })
      .then(
        () => assert.fail('the workflow should have failed'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof WorkflowFailedError);
    assert.ok(err.cause instanceof ApplicationFailure, String(err.cause));
    assert.equal(err.cause.type, RefusalType.turnInput);
    assert.equal(err.cause.nonRetryable, true);
    assert.match(String(err.cause?.message), /this workflow's ID .* is not a valid session ID.*pass sessionId/);
  });
});

/**
 * The scripted model: asks for mcp__echo__echo first, then answers with what the tool said. Any
 * other prompt shape fails loudly.
 */
async function scriptedModelStep(prompt: unknown): Promise<ModelStepResult> {
  const messages = prompt as { role: string; content: unknown }[];
  const toolMessages = messages.filter((m) => m.role === 'tool');
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 5, text: 5, reasoning: 0 },
  };
  if (toolMessages.length === 0)
    return {
      content: [
        {
          type: 'tool-call',
          toolCallId: 'model-call-1',
          toolName: 'mcp__echo__echo',
          input: JSON.stringify({ text: 'hello from the model' }),
        },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    };
  if (toolMessages.length !== 1)
    throw new Error(`the scripted model expects one tool message, got ${toolMessages.length}`);
  const [part] = toolMessages[0]!.content as { type: string; output: { type: string; value: unknown } }[];
  if (part?.type !== 'tool-result' || part.output.type !== 'text')
    throw new Error(`unexpected tool message: ${JSON.stringify(toolMessages[0])}`);
  return {
    content: [{ type: 'text', text: `The tool said: ${String(part.output.value)}` }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  };
}
