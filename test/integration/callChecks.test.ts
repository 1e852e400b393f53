// The call activity takes nothing in its input on trust: whatever a workflow asks, the worker sends
// a call only for the turn that reconciled the session here, only for a tool the operator's rules
// allow, and, for a tool with PreToolUse hooks, only with the decision those hooks sealed for that
// very call and arguments. Real pool, real fixture server, real hook script; the activity runs in
// Temporal's mock activity environment, which lets the test name the calling workflow.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import pino from 'pino';
import { createActivities } from '../../activities/index.js';
import type { LoadedConfig, ServerEntry } from '../../config/types.js';
import { FailureType, type CallOutcome, type CallToolInput, type PreToolUseHooksResult } from '../../contract/index.js';
import { createGovernance } from '../../governance/index.js';
import { ServerPool } from '../../mcp/pool.js';
import { fixtureServer, readLines, tempDir } from '../support/harness.js';

const hookScript = fileURLToPath(new URL('../../../test/fixtures/hooks/hook.sh', import.meta.url));
const KEY = Buffer.alloc(32, 7);

/** An activity environment whose activities work for the workflow `turnId`. */
function envFor(turnId: string): MockActivityEnvironment {
  return new MockActivityEnvironment({ workflowExecution: { workflowId: turnId, runId: 'run-1' } } as never);
}

async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApplicationFailure, `expected a failure, got ${String(err)}`);
  return err;
}

describe('the call activity re-checks every call against the operator and the turn', () => {
  let pool: ServerPool;
  let activities: ReturnType<typeof createActivities>;
  let log: string;
  let workspace: string;
  const sessionId = 'checks-session';
  const turnId = `${sessionId}/turn-1`;
  const executed = async () =>
    existsSync(log)
      ? (await readLines(log)).map((l) => JSON.parse(l) as { tool: string; args: Record<string, unknown> })
      : [];
  const call = (
    name: string,
    tool: string,
    args: Record<string, unknown>,
    extra: Partial<CallToolInput> = {},
  ): CallToolInput => ({
    sessionId,
    firstRunId: 'run-1',
    callId: `c-${tool}-${Math.random()}`,
    name,
    server: 's',
    tool,
    arguments: args,
    requestTimeoutMs: 5000,
    ...extra,
  });

  before(async () => {
    const root = await tempDir('dmcp-checks-');
    const configDir = join(root, 'config');
    workspace = join(root, 'ws');
    log = join(root, 'fixture.log');
    await mkdir(configDir, { recursive: true });
    await mkdir(workspace, { recursive: true });
    await writeFile(
      join(configDir, 'settings.json'),
      JSON.stringify({
        permissions: { deny: ['mcp__s__env'] },
        hooks: {
          PreToolUse: [
            { matcher: 'mcp__s__fail', hooks: [{ type: 'command', command: `bash ${hookScript} rewrite` }] },
          ],
        },
      }),
    );
    const entry: ServerEntry = {
      name: 's',
      layer: 'inline',
      source: '--mcp #1',
      trusted: true,
      type: 'stdio',
      command: process.execPath,
      args: [fixtureServer],
      env: { FIXTURE_LOG: log },
      envFrom: {},
      headers: {},
      enabled: true,
    };
    const config: LoadedConfig = { off: false, servers: [entry], refused: [], warnings: [], hash: 'h1' };
    const logger = pino({ level: 'silent' });
    pool = new ServerPool({
      logger,
      environmentFor: (e) => ({ PATH: process.env.PATH ?? '', ...e.env }),
      startTimeoutMs: 10_000,
      toolPrefix: 'mcp',
    });
    const env = { PATH: process.env.PATH, DMCP_CONFIG_DIR: configDir };
    activities = createActivities({
      pool,
      workerQueue: 'q',
      logger,
      scrub: (t) => t,
      turnKey: KEY,
      loadConfig: async () => config,
      governance: createGovernance({ env, scrub: (t) => t }),
    });
    await envFor(turnId).run(activities.reconcileServers, {
      sessionId,
      firstRunId: 'run-1',
      refs: { workspace, mcpConfigFiles: [], inlineSpecs: [] },
    });
  });
  after(async () => {
    await pool?.shutdown();
  });

  test('the turn that reconciled the session calls; another workflow naming the same session does not', async () => {
    const ok = (await envFor(turnId).run(
      activities.callTool,
      call('mcp__s__echo', 'echo', { text: 'mine' }),
    )) as unknown as CallOutcome;
    assert.equal(ok.status, 'ok');
    const before = (await executed()).length;
    const failure = await failureOf(
      envFor(`${sessionId}/turn-forged`).run(activities.callTool, call('mcp__s__echo', 'echo', { text: 'forged' })),
    );
    assert.equal(failure.type, FailureType.ServerUnavailable);
    assert.match(failure.message, /not reconciled for this turn on this worker/);
    assert.equal((await executed()).length, before, 'nothing reached the server');
  });

  test("a later workflow reusing the turn's ID (another run chain) does not call what the turn reconciled", async () => {
    const before = (await executed()).length;
    // Same workflow ID, another first run: a cron run, a retry or a new start after the turn closed.
    const failure = await failureOf(
      envFor(turnId).run(
        activities.callTool,
        call('mcp__s__echo', 'echo', { text: 'reused' }, { firstRunId: 'run-of-another-chain' }),
      ),
    );
    assert.equal(failure.type, FailureType.ServerUnavailable);
    assert.match(failure.message, /not reconciled for this turn on this worker/);
    const unnamed = await failureOf(
      envFor(turnId).run(activities.callTool, call('mcp__s__echo', 'echo', { text: 'reused' }, { firstRunId: '' })),
    );
    assert.equal(unnamed.type, FailureType.BadRequest);
    assert.match(unnamed.message, /names no firstRunId/);
    assert.equal((await executed()).length, before, 'nothing reached the server');
  });

  test('a tool the operator denies is refused where it runs, naming the rule', async () => {
    const failure = await failureOf(
      envFor(turnId).run(activities.callTool, call('mcp__s__env', 'env', { name: 'HOME' })),
    );
    assert.equal(failure.type, FailureType.BadRequest);
    assert.equal(failure.nonRetryable, true);
    assert.match(failure.message, /^mcp__s__env is not allowed: .*settings\.json/);
    // A public name that is allowed does not smuggle the denied tool through.
    const renamed = await failureOf(
      envFor(turnId).run(activities.callTool, call('mcp__s__echo', 'env', { name: 'HOME' })),
    );
    assert.equal(renamed.type, FailureType.BadRequest);
    assert.match(renamed.message, /is not the name of tool "env" of server "s" \(that is mcp__s__env\)/);
    assert.deepEqual(
      (await executed()).filter((e) => e.tool === 'env'),
      [],
    );
  });

  test("a hooked tool runs only with its hooks' sealed decision for this call and these arguments", async () => {
    const request = call('mcp__s__fail', 'fail', { reason: 'x' });
    const unsealed = await failureOf(envFor(turnId).run(activities.callTool, request));
    assert.equal(unsealed.type, FailureType.BadRequest);
    assert.match(unsealed.message, /has PreToolUse hooks, and this call carries no decision of theirs/);

    const pre = (await envFor(turnId).run(activities.preToolUseHooks, {
      sessionId,
      callId: request.callId,
      name: request.name,
      cwd: workspace,
      arguments: request.arguments,
    })) as PreToolUseHooksResult;
    assert.equal(pre.decision, 'allow');
    assert.ok(pre.updatedInput && pre.proof);
    // The seal covers the rewritten arguments: the originals, or a seal of another call, do not pass.
    const originals = await failureOf(envFor(turnId).run(activities.callTool, { ...request, hookProof: pre.proof }));
    assert.equal(originals.type, FailureType.BadRequest);
    const otherCall = await failureOf(
      envFor(turnId).run(activities.callTool, {
        ...request,
        callId: 'another',
        arguments: pre.updatedInput,
        hookProof: pre.proof,
      }),
    );
    assert.equal(otherCall.type, FailureType.BadRequest);
    assert.deepEqual(
      (await executed()).filter((e) => e.tool === 'fail'),
      [],
      'no unsealed call reached the server',
    );

    const sealed = (await envFor(turnId).run(activities.callTool, {
      ...request,
      arguments: pre.updatedInput,
      hookProof: pre.proof,
    })) as unknown as CallOutcome;
    assert.equal(sealed.status, 'ok');
    assert.equal((await executed()).filter((e) => e.tool === 'fail').length, 1);
  });

  test('taking up a task is checked as a call is: a denied tool, a hooked tool without its seal and another turn are refused before any request', async () => {
    const denied = await failureOf(
      envFor(turnId).run(activities.takeTask, { ...call('mcp__s__env', 'env', {}), taskId: 'tk1' }),
    );
    assert.equal(denied.type, FailureType.BadRequest);
    assert.match(denied.message, /^mcp__s__env is not allowed: .*settings\.json/);
    const unsealed = await failureOf(
      envFor(turnId).run(activities.takeTask, { ...call('mcp__s__fail', 'fail', {}), taskId: 'tk1' }),
    );
    assert.equal(unsealed.type, FailureType.BadRequest);
    assert.match(unsealed.message, /has PreToolUse hooks, and this call carries no decision of theirs/);
    const forged = await failureOf(
      envFor(`${sessionId}/turn-forged`).run(activities.takeTask, {
        ...call('mcp__s__echo', 'echo', {}),
        taskId: 'tk1',
      }),
    );
    assert.equal(forged.type, FailureType.ServerUnavailable);
    assert.deepEqual(
      (await executed()).filter((e) => e.tool === 'env'),
      [],
    );
  });
});
