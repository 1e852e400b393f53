/**
 * Records histories of real turns into test/histories/ for the replay test:
 * `npm run record:histories` (starts a dev server unless TEMPORAL_ADDRESS is set). Re-record only
 * after an intended, versioned workflow change: the point of the replay test is to catch the others.
 * Names given (`... recordHistories.js interactive-turn-fast-path.json`) record only those files.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { startDevServer } from '../../dev/devServer.js';
import {
  everythingServer,
  fixtureServer,
  killGroups,
  startHarness,
  tempDir,
  waitUntil,
  writeConfigDir,
} from './harness.js';
import { startModelServer, writeModelsJson } from './models.js';
import { textOf } from './content.js';
import { printedPort } from './printedPort.js';
import { projectRoot } from '../../dev/temporalCli.js';
import { neutralizePaths } from './historyFiles.js';

const taskServer = fileURLToPath(new URL('../fixtures/taskServer.js', import.meta.url));
const outDir = fileURLToPath(new URL('../../../test/histories/', import.meta.url));

async function main(): Promise<void> {
  const server = process.env.TEMPORAL_ADDRESS ? undefined : await startDevServer({ headless: true });
  if (server) process.env.TEMPORAL_ADDRESS = server.address;
  const h = await startHarness('record');
  try {
    const workspace = await tempDir();
    const servers = { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] };

    const turn = await h.client.startTurn({ sessionId: 'replay-interactive', workspace, servers });
    const outcomes = [
      await turn.callTool({ id: 'toolu_01', name: 'mcp__fixture__echo', arguments: { text: 'extension check' } }),
      await turn.callTool({ id: 'toolu_02', name: 'mcp__fixture__fail', arguments: { reason: 'recorded' } }),
      await turn.callTool({ id: 'toolu_03', name: 'mcp__fixture__missing', arguments: {} }),
    ];
    await turn.end();
    // Record only a turn that shows what it is meant to: a result, a tool error, a bad request.
    const kinds = outcomes.map((o) => (o.status === 'ok' ? (o.isError ? 'isError' : 'ok') : o.errorKind));
    if (kinds.join() !== 'ok,isError,bad_request')
      throw new Error(`unexpected outcomes ${kinds.join()}: not recording`);

    const batch = await h.client.runBatch({
      sessionId: 'replay-batch',
      workspace,
      servers,
      calls: [
        [{ id: 'b1', name: 'mcp__fixture__echo', arguments: { text: 'first' } }],
        [
          { id: 'b2', name: 'mcp__fixture__echo', arguments: { text: 'parallel a' } },
          { id: 'b3', name: 'mcp__fixture__echo', arguments: { text: 'parallel b' } },
        ],
      ],
    });
    // The fast path: a read-only call as a local activity marker, a side-effecting one as an activity.
    const fast = await h.client.startTurn({ sessionId: 'replay-fast-path', workspace, servers });
    const fastOutcomes = [
      await fast.callTool({ id: 'toolu_11', name: 'mcp__fixture__read_slow', arguments: { ms: 0 } }),
      await fast.callTool({ id: 'toolu_12', name: 'mcp__fixture__echo', arguments: { text: 'side effect' } }),
      await fast.callTool({ id: 'toolu_13', name: 'mcp__fixture__read_slow', arguments: { ms: 0 } }),
    ];
    await fast.end();
    if (fastOutcomes.some((o) => o.status !== 'ok')) throw new Error('unexpected fast-path outcomes: not recording');

    // An MCP task: created once, polled from durable timers, its result fetched once.
    const taskTurn = await h.client.startTurn({
      sessionId: 'replay-task',
      workspace,
      servers: { inlineSpecs: [`jobs:${process.execPath} ${taskServer} stdio`] },
    });
    const taskOutcome = await taskTurn.callTool({
      id: 'toolu_21',
      name: 'mcp__jobs__long_job',
      arguments: { seconds: 2, tag: 'recorded' },
    });
    await taskTurn.end();
    if (taskOutcome.status !== 'ok' || !textOf(taskOutcome.content[0])?.includes('finished recorded'))
      throw new Error(`unexpected task outcome ${JSON.stringify(taskOutcome)}: not recording`);

    // A task left running by a turn ended with detach, and taken up by the session's next turn.
    const jobs = { inlineSpecs: [`jobs:${process.execPath} ${taskServer} stdio`] };
    const detaching = await h.client.startTurn({ sessionId: 'replay-task-detach', workspace, servers: jobs });
    const leftRunning = detaching.callTool({
      id: 'toolu_41',
      name: 'mcp__jobs__long_job',
      arguments: { seconds: 4, tag: 'detached' },
    });
    await waitUntil('the task', async () =>
      (await h.client.transcript(detaching.turnId)).calls.some((c) => c.task !== undefined),
    );
    await detaching.end({ detach: true });
    const detached = (await leftRunning).detached;
    if (!detached) throw new Error(`unexpected detached outcome ${JSON.stringify(await leftRunning)}: not recording`);
    const takingUp = await h.client.startTurn({ sessionId: 'replay-task-detach', workspace, servers: jobs });
    const takenUp = await takingUp.callTool({
      id: 'toolu_42',
      name: detached.takeUp.name,
      taskId: detached.takeUp.taskId,
    });
    await takingUp.end();
    if (takenUp.status !== 'ok' || !textOf(takenUp.content[0])?.includes('finished detached'))
      throw new Error(`unexpected taken-up outcome ${JSON.stringify(takenUp)}: not recording`);

    // A 2025-era question mid-call: reported by the call's activity, answered, delivered back.
    const legacy = await h.client.startTurn({
      sessionId: 'replay-legacy-input',
      workspace,
      servers: { inlineSpecs: [`everything:${process.execPath} ${everythingServer} stdio`] },
    });
    const asking = legacy.callTool({
      id: 'toolu_31',
      name: 'mcp__everything__trigger-elicitation-request',
      arguments: {},
    });
    await waitUntil('the question', async () => (await legacy.pendingInputs()).length === 1);
    await legacy.answerInput('toolu_31:1:elicitation', { action: 'accept', content: { name: 'recorded' } });
    const legacyOutcome = await asking;
    await legacy.end();
    if (legacyOutcome.status !== 'ok' || !textOf(legacyOutcome.content[1])?.includes('Name: recorded'))
      throw new Error(`unexpected legacy outcome ${JSON.stringify(legacyOutcome)}: not recording`);

    // A 2026-07-28 task's question: recorded with its status, answered, sent back with tasks/update.
    const modern = spawn(process.execPath, [taskServer, 'modern'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let modernTurnId: string;
    let refusedTurnId: string;
    try {
      const modernConfig = join(workspace, 'mcp-2026.json');
      const port = await printedPort(modern, 'the 2026-07-28 task fixture');
      await writeFile(
        modernConfig,
        JSON.stringify({
          mcpServers: {
            jobs: { type: 'http', url: `http://127.0.0.1:${port}/mcp`, protocol: '2026-07-28', tasks: 'prefer' },
          },
        }),
      );
      const modernTurn = await h.client.startTurn({
        sessionId: 'replay-task-question',
        workspace,
        servers: { mcpConfigFiles: [modernConfig] },
      });
      modernTurnId = modernTurn.turnId;
      const question = modernTurn.callTool({
        id: 'toolu_41',
        name: 'mcp__jobs__asking_job',
        arguments: { tag: 'colour' },
      });
      await waitUntil("the task's question", async () => (await modernTurn.pendingInputs()).length === 1);
      await modernTurn.answerInput('toolu_41:1:choice', { action: 'accept', content: { choice: 'recorded' } });
      const questionOutcome = await question;
      await modernTurn.end();
      if (questionOutcome.status !== 'ok' || textOf(questionOutcome.content[0]) !== 'colour: recorded')
        throw new Error(`unexpected task question outcome ${JSON.stringify(questionOutcome)}: not recording`);

      // Without "tasks": "prefer": the task-only tool refuses the ordinary call (-32021), which is
      // sent again as a task; the next call of the tool goes straight to one.
      const plainConfig = join(workspace, 'mcp-2026-plain.json');
      await writeFile(
        plainConfig,
        JSON.stringify({
          mcpServers: { jobs: { type: 'http', url: `http://127.0.0.1:${port}/mcp`, protocol: '2026-07-28' } },
        }),
      );
      const refusedTurn = await h.client.startTurn({
        sessionId: 'replay-task-on-refusal',
        workspace,
        servers: { mcpConfigFiles: [plainConfig] },
      });
      refusedTurnId = refusedTurn.turnId;
      const refusedOutcomes = [
        await refusedTurn.callTool({
          id: 'toolu_51',
          name: 'mcp__jobs__long_job',
          arguments: { seconds: 1, tag: 'refused' },
        }),
        await refusedTurn.callTool({
          id: 'toolu_52',
          name: 'mcp__jobs__long_job',
          arguments: { seconds: 1, tag: 'straight' },
        }),
      ];
      await refusedTurn.end();
      if (refusedOutcomes.some((o) => o.status !== 'ok'))
        throw new Error(`unexpected outcomes after a refusal ${JSON.stringify(refusedOutcomes)}: not recording`);
    } finally {
      modern.kill('SIGKILL');
    }

    const modelTurnId = await recordModelTurn(workspace, servers);
    const approvalTurnId = await recordApprovalTurn(workspace, servers);

    const only = process.argv.slice(2);
    const recorded = [
      ['interactive-turn.json', turn.turnId],
      ['batch-turn.json', batch.turnId],
      ['interactive-turn-fast-path.json', fast.turnId],
      ['interactive-turn-task.json', taskTurn.turnId],
      ['interactive-turn-legacy-input.json', legacy.turnId],
      ['interactive-turn-task-question.json', modernTurnId],
      ['interactive-turn-task-detached.json', detaching.turnId],
      ['interactive-turn-task-taken-up.json', takingUp.turnId],
      ['interactive-turn-task-on-refusal.json', refusedTurnId],
      ['model-turn.json', modelTurnId],
      ['interactive-turn-approval.json', approvalTurnId],
    ] as const;
    for (const [file, id] of recorded.filter(([file]) => only.length === 0 || only.includes(file))) {
      const history = await h.client.client.workflow.getHandle(id).fetchHistory();
      await writeFile(
        join(outDir, file),
        `${neutralizePaths(historyToJSON(history), [
          [process.execPath, 'node'],
          [workspace, '/workspace'],
          [projectRoot, '/project/'],
        ])}\n`,
      );
      process.stderr.write(`recorded ${id} -> test/histories/${file}\n`);
    }
  } finally {
    await h.stop();
    await server?.stop();
  }
}

/** A model turn: the scripted model asks for one call, reads its result and answers. */
async function recordModelTurn(workspace: string, servers: { inlineSpecs: string[] }): Promise<string> {
  const started = new Set<number>();
  const model = await startModelServer(
    workspace,
    'record-model',
    {
      steps: [
        { toolCalls: [{ name: 'mcp__fixture__echo', arguments: { text: 'from the model' } }] },
        { text: 'The tool said: from the model.' },
      ],
    },
    started,
  );
  const configDir = join(workspace, 'model-config');
  const env = await writeConfigDir(configDir, {});
  await writeModelsJson(configDir, {
    scripted: { provider: 'openai-compatible', model: 'scripted-1', baseURL: model.baseURL },
  });
  const h = await startHarness('record-model', env);
  try {
    const result = await h.client.runModelTurn({
      sessionId: 'replay-model-turn',
      workspace,
      servers,
      model: { name: 'scripted', prompt: 'Echo something, then tell me what the tool said.' },
    });
    if (result.endedBy !== 'answer' || result.calls[0]?.outcome.status !== 'ok')
      throw new Error(`unexpected model turn ${JSON.stringify(result)}: not recording`);
    return result.turnId;
  } finally {
    await h.stop();
    killGroups(started);
  }
}

/** Calls a rule holds for a person: one approved with other arguments, one denied. */
async function recordApprovalTurn(workspace: string, servers: { inlineSpecs: string[] }): Promise<string> {
  const env = await writeConfigDir(
    join(workspace, 'approval-config'),
    {},
    {
      settings: { permissions: { ask: ['mcp__fixture__echo'], approveWithEdits: ['mcp__fixture__echo'] } },
    },
  );
  const h = await startHarness('record-approval', env);
  try {
    const turn = await h.client.startTurn({ sessionId: 'replay-approval', workspace, servers });
    const answer = async (content: Record<string, string>) => {
      await waitUntil('the approval', async () => (await turn.pendingInputs()).length === 1);
      const [asked] = await turn.pendingInputs();
      await turn.answerInput(asked!.requestId, { action: 'accept', content });
    };
    const edited = turn.callTool({ id: 'toolu_41', name: 'mcp__fixture__echo', arguments: { text: 'as asked' } });
    await answer({ decision: 'approve', arguments: '{"text":"as a person edited it"}' });
    const denied = turn.callTool({ id: 'toolu_42', name: 'mcp__fixture__echo', arguments: { text: 'not today' } });
    await answer({ decision: 'deny', reason: 'recorded denial' });
    const outcomes = [await edited, await denied];
    await turn.end();
    if (textOf(outcomes[0]!.content[0]) !== 'as a person edited it' || outcomes[1]!.status !== 'error')
      throw new Error(`unexpected approvals ${JSON.stringify(outcomes)}: not recording`);
    return turn.turnId;
  } finally {
    await h.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
