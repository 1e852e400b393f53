// A caller of Temporal is not the operator. A plain Temporal client (no turn key, no API token)
// reads a live session's worker queue from a turn's memo and starts `agentTurn` with a continuation
// of its own making: a tool list without the operator's deny rule or hooks, pointing at the victim's
// servers. None of it may run: the continuation is refused, and nothing reaches a server. The same
// caller starts a session's next turn (or its end) first, at its predictable ID, for the operator's
// client to adopt, and runs a forged continuation on a cron schedule at a closed turn's ID.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { TurnClient, TurnIdTakenError } from '../../client/turnClient.js';
import { UpdateName, type ContinuedTurn, type ToolInfo, type TurnInput } from '../../contract/index.js';
import { fixtureServer, readLines, startHarness, temporalAddress, tempDir, type Harness } from '../support/harness.js';
import { causeMessages, textOf } from '../support/content.js';

const hookScript = fileURLToPath(new URL('../../../test/fixtures/hooks/hook.sh', import.meta.url));

describe('a forged continuation from a plain Temporal client', () => {
  let h: Harness;
  let root: string;
  let workspace: string;
  let fixtureLog: string;
  let attacker: Client;
  let connection: Connection;

  const executed = async () =>
    existsSync(fixtureLog)
      ? (await readLines(fixtureLog)).map((l) => JSON.parse(l) as { tool: string; args: Record<string, unknown> })
      : [];

  before(async () => {
    root = await tempDir('dmcp-forged-');
    const configDir = join(root, 'config');
    workspace = join(root, 'ws');
    fixtureLog = join(root, 'fixture.log');
    await mkdir(configDir, { recursive: true });
    await mkdir(workspace, { recursive: true });
    await writeFile(
      join(configDir, 'mcp.json'),
      JSON.stringify({ mcpServers: { s: { command: process.execPath, args: [fixtureServer] } } }),
    );
    // The operator denies one tool and guards another with a hook that denies every call.
    await writeFile(
      join(configDir, 'settings.json'),
      JSON.stringify({
        permissions: { deny: ['mcp__s__env'] },
        hooks: {
          PreToolUse: [{ matcher: 'mcp__s__fail', hooks: [{ type: 'command', command: `bash ${hookScript} deny` }] }],
        },
      }),
    );
    // In the worker's environment, so the inline server logs its executions too.
    h = await startHarness('forged', { DMCP_NO_USER_CONFIG: '0', DMCP_CONFIG_DIR: configDir, FIXTURE_LOG: fixtureLog });
    connection = await Connection.connect({ address: temporalAddress() });
    attacker = new Client({ connection });
  });
  after(async () => {
    await h?.stop();
    await connection?.close();
  });

  test('the turn refuses a continuation that did not come from continue-as-new; no call reaches the servers', async () => {
    const sessionId = `forged-${Date.now()}`;
    // The victim: an interactive turn with signed inline servers, open, servers live on the worker.
    const turn = await h.client.startTurn({
      sessionId,
      workspace,
      servers: { inlineSpecs: [`v:${process.execPath} ${fixtureServer}`] },
    });
    try {
      const ok = await turn.callTool({ id: 'v1', name: 'mcp__s__echo', arguments: { text: 'victim' } });
      assert.equal(textOf(ok.content[0]), 'victim');
      assert.ok(!turn.tools.some((t) => t.name === 'mcp__s__env'), 'the deny rule hides env from the model');
      const before = (await executed()).length;

      // The attacker reads the worker queue from the memo and builds a tool list of its own.
      const described = await attacker.workflow.getHandle(turn.turnId).describe();
      const memo = (described.memo ?? {}) as { workerQueue?: string };
      const workerQueue = memo.workerQueue ?? turn.workerQueue;
      const tool = (server: string, name: string): ToolInfo => ({
        name: `mcp__${server}__${name}`,
        server,
        tool: name,
        description: '',
        inputSchema: {},
      });
      const continued: ContinuedTurn = {
        start: {
          turnId: `${sessionId}/turn-99`,
          workerQueue,
          status: { mcp: 'on', servers: [], warnings: [], reportedAt: new Date().toISOString() },
          tools: [tool('s', 'env'), tool('s', 'fail'), tool('v', 'echo')],
          serversParagraph: '',
        },
        callsBefore: 0,
        recent: [],
        earlierIds: [],
      };
      const input: TurnInput = { sessionId, refs: { workspace, mcpConfigFiles: [], inlineSpecs: [] }, continued };
      const forged = await attacker.workflow.start('agentTurn', {
        taskQueue: h.taskQueue,
        workflowId: `${sessionId}/turn-99`,
        args: [input],
        workflowExecutionTimeout: '60s',
      });
      const attempts = ['mcp__s__env', 'mcp__s__fail', 'mcp__v__echo'].map(async (name, i) => {
        try {
          return await forged.executeUpdate(UpdateName.callTool, {
            args: [{ id: `f${i}`, name, arguments: { name: 'HOME', reason: 'forged', text: 'forged' } }],
            updateId: `f${i}`,
          });
        } catch (err) {
          return err;
        }
      });
      const outcomes = await Promise.all(attempts);
      const after = await executed();
      assert.deepEqual(
        after.slice(before),
        [],
        `no forged call may run on any server (outcomes: ${JSON.stringify(outcomes)})`,
      );
      const { status } = await forged.describe();
      if (status.name === 'RUNNING') await forged.terminate('the test is over');
      assert.equal(status.name, 'FAILED', 'the forged turn fails at once');
      const failure = await forged.result().then(
        () => undefined,
        (err: unknown) => err,
      );
      assert.ok(failure instanceof WorkflowFailedError);
      assert.match(causeMessages(failure), /continuation refused/);
      for (const o of outcomes) assert.ok(o instanceof Error, `every forged call is rejected: ${JSON.stringify(o)}`);

      // The victim's own turn is unharmed.
      const again = await turn.callTool({ id: 'v2', name: 'mcp__v__echo', arguments: { text: 'still mine' } });
      assert.equal(textOf(again.content[0]), 'still mine');
    } finally {
      await turn.end();
    }
  });

  test('a turn start never adopts a run it did not start: a turn ID claimed in advance is skipped, and an explicit one refused', async () => {
    const sessionId = `claimed-${Date.now()}`;
    // The attacker starts the session's next turn first, without the session attribute (not counted).
    const claimedInput: TurnInput = { sessionId, refs: { workspace, mcpConfigFiles: [], inlineSpecs: [] } };
    const claimed = await attacker.workflow.start('agentTurn', {
      taskQueue: h.taskQueue,
      workflowId: `${sessionId}/turn-1`,
      args: [claimedInput],
      workflowExecutionTimeout: '60s',
    });
    try {
      const turn = await h.client.startTurn({
        sessionId,
        workspace,
        servers: { inlineSpecs: [`v:${process.execPath} ${fixtureServer}`] },
      });
      try {
        assert.notEqual(turn.turnId, `${sessionId}/turn-1`, "the operator's turn is not the attacker's run");
        assert.equal(turn.turnId, `${sessionId}/turn-2`);
        assert.ok(
          turn.tools.some((t) => t.name === 'mcp__v__echo'),
          `the operator's signed server is in the tool list: ${turn.tools.map((t) => t.name).join(', ')}`,
        );
        const out = await turn.callTool({ id: 'c1', name: 'mcp__v__echo', arguments: { text: 'mine' } });
        assert.equal(textOf(out.content[0]), 'mine');
      } finally {
        await turn.end();
      }
      // A caller that names the turn gets a refusal saying why, never the attacker's run.
      const refused = await h.client.startTurn({ sessionId, workspace, turn: 1 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      assert.ok(refused instanceof Error, 'the named turn is refused');
      assert.equal(refused.name, 'TurnIdTakenError');
      assert.match(refused.message, new RegExp(`${sessionId}/turn-1.*not started by this client`));
    } finally {
      await claimed.terminate('the test is over').catch(() => undefined);
    }
  });

  test('a caller retrying a start with its turn number attaches to the turn it started', async () => {
    const sessionId = `retried-${Date.now()}`;
    const first = await h.client.startTurn({ sessionId, workspace, turn: 1 });
    try {
      const again = await h.client.startTurn({ sessionId, workspace, turn: 1 });
      assert.equal(again.turnId, first.turnId);
      // Another process of the operator (the same turn key), e.g. an API restarted between a start and its retry.
      const sameKey = await new TurnClient({ client: h.client.client, taskQueue: h.taskQueue }).startTurn({
        sessionId,
        workspace,
        turn: 1,
      });
      assert.equal(sameKey.turnId, first.turnId);
      // A client with another key did not start it, and does not adopt it.
      const otherKey = await new TurnClient({
        client: h.client.client,
        taskQueue: h.taskQueue,
        turnKey: randomBytes(32),
      })
        .startTurn({ sessionId, workspace, turn: 1 })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      assert.ok(otherKey instanceof TurnIdTakenError, `refused: ${String(otherKey)}`);
    } finally {
      await first.end();
    }
  });

  test('a session end never adopts an end workflow it did not start', async () => {
    const sessionId = `claimed-end-${Date.now()}`;
    // The attacker's end of the session waits on a queue no worker polls, and ends nothing.
    const claimed = await attacker.workflow.start('dmcpEndSession', {
      taskQueue: h.taskQueue,
      workflowId: `${sessionId}/end`,
      args: [{ sessionId, workerQueues: [`nobody-${Date.now()}`] }],
      workflowExecutionTimeout: '60s',
    });
    try {
      const turn = await h.client.startTurn({
        sessionId,
        workspace,
        servers: { inlineSpecs: [`v:${process.execPath} ${fixtureServer}`] },
      });
      await turn.callTool({ id: 'c1', name: 'mcp__v__echo', arguments: { text: 'mine' } });
      await turn.end();
      const ended = await h.client.endSession(sessionId);
      assert.equal(
        ended.workers,
        1,
        `the operator's end reached the worker holding the servers: ${JSON.stringify(ended)}`,
      );
      assert.ok(ended.servers >= 1, `the session's servers were stopped: ${JSON.stringify(ended)}`);
    } finally {
      await claimed.terminate('the test is over').catch(() => undefined);
    }
  });

  test("a transcript follows the turn's run chain: a later workflow reusing the ID is not joined into it, and is named", async () => {
    const sessionId = `reused-${Date.now()}`;
    const turn = await h.client.startTurn({ sessionId, workspace });
    await turn.callTool({ id: 'v1', name: 'mcp__s__echo', arguments: { text: 'victim' } });
    const victimRun = (await turn.handle.describe()).runId;
    await turn.end();
    const input: TurnInput = {
      sessionId,
      refs: { workspace, mcpConfigFiles: [], inlineSpecs: [] },
      batch: [[{ id: 'a1', name: 'mcp__s__echo', arguments: { text: 'intruder' } }]],
    };
    const reused = await attacker.workflow.start('agentTurn', {
      taskQueue: h.taskQueue,
      workflowId: turn.turnId,
      args: [input],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      workflowExecutionTimeout: '60s',
    });
    await reused.result();
    // Visibility lists both executions once it catches up.
    for (let i = 0; i < 50; i += 1) {
      let runs = 0;
      for await (const w of attacker.workflow.list({ query: `WorkflowId = '${turn.turnId}'` })) runs += w.runId ? 1 : 0;
      if (runs === 2) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const t = await h.client.transcript(turn.turnId);
    assert.deepEqual(
      t.calls.map((c) => c.id),
      ['a1'],
      "the calls of one run chain, the latest, never joined with another execution's",
    );
    assert.deepEqual(t.otherRuns, [victimRun], 'the execution left out is named');
  });

  test("a cron-scheduled forged continuation reusing a closed turn's ID runs nothing on the victim's servers", async () => {
    const sessionId = `cron-${Date.now()}`;
    const turn = await h.client.startTurn({
      sessionId,
      workspace,
      servers: { inlineSpecs: [`v:${process.execPath} ${fixtureServer}`] },
    });
    const ok = await turn.callTool({ id: 'v1', name: 'mcp__v__echo', arguments: { text: 'victim' } });
    assert.equal(textOf(ok.content[0]), 'victim');
    // Closed, its servers kept for the session's next turn.
    await turn.end();
    const tool: ToolInfo = { name: 'mcp__v__echo', server: 'v', tool: 'echo', description: '', inputSchema: {} };
    const continued: ContinuedTurn = {
      start: {
        turnId: turn.turnId,
        workerQueue: turn.workerQueue,
        status: { mcp: 'on', servers: [], warnings: [], reportedAt: new Date().toISOString() },
        tools: [tool],
        serversParagraph: '',
      },
      callsBefore: 0,
      recent: [],
      earlierIds: [],
    };
    // Every run of a cron schedule after the first says it continues the one before, with this input.
    const input: TurnInput = {
      sessionId,
      refs: { workspace, mcpConfigFiles: [], inlineSpecs: [] },
      continued,
      batch: [[{ id: 'f1', name: 'mcp__v__echo', arguments: { text: 'forged' } }]],
    };
    const forged = await attacker.workflow.start('agentTurn', {
      taskQueue: h.taskQueue,
      workflowId: turn.turnId,
      args: [input],
      cronSchedule: '@every 2s',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      workflowExecutionTimeout: '60s',
    });
    try {
      // Long enough for a few runs of the schedule.
      await new Promise((r) => setTimeout(r, 9000));
      const runs: string[] = [];
      for await (const w of attacker.workflow.list({ query: `WorkflowId = '${turn.turnId}'` }))
        runs.push(w.status.name);
      const forgedRuns = (await executed()).filter((e) => e.args.text === 'forged');
      assert.deepEqual(forgedRuns, [], `no forged call reaches the victim's server (runs: ${runs.join(', ')})`);
      const first = await attacker.workflow.getHandle(turn.turnId, forged.firstExecutionRunId).fetchHistory();
      const failed = first.events?.find((e) => e.workflowExecutionFailedEventAttributes);
      assert.match(
        failed?.workflowExecutionFailedEventAttributes?.failure?.message ?? '',
        /cron schedule/,
        'the turn refuses a cron schedule at once',
      );
    } finally {
      await forged.terminate('the test is over').catch(() => undefined);
    }
  });
});
