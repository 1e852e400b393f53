/**
 * Allowed tools and hooks in the agentTurn workflow with its real activities, over a fake server
 * pool and a hook runner that answers as a script would (no process): what is scheduled, what is
 * recorded, and that a recorded decision is read back on replay instead of asked again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ActivityName } from '../../contract/index.js';
import { createGovernance, type HookExit, type HookRunRequest } from '../../governance/index.js';
import { waitUntil } from '../support/harness.js';
import { FakePool, createWorkflowEnv, startFakeWorker } from '../support/workflowEnv.js';

describe('governance in the agentTurn workflow', { timeout: 120_000 }, () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await createWorkflowEnv();
  });
  after(async () => {
    await env?.teardown();
  });

  /** A worker whose governance file is `settings` and whose hooks answer with `answer`. */
  async function startWorker(name: string, settings: unknown, answer: (r: HookRunRequest) => HookExit) {
    const pool = new FakePool('fake', [{ tool: 'echo' }, { tool: 'write' }, { tool: 'secret' }]);
    const hookRuns: Record<string, unknown>[] = [];
    const governance = createGovernance({
      env: { DMCP_CONFIG_DIR: '/cfg' },
      scrub: (t) => t,
      readText: async () => JSON.stringify(settings, null, 2),
      runHook: async (request) => {
        hookRuns.push(JSON.parse(request.stdin) as Record<string, unknown>);
        return answer(request);
      },
    });
    // No workflow cache: every workflow task replays the turn from its first event.
    const worker = await startFakeWorker(env, name, pool, { governance, maxCachedWorkflows: 0 });
    return { pool, hookRuns, client: worker.client, stop: () => worker.stop() };
  }

  const ok = (stdout = ''): HookExit => ({ exitCode: 0, stdout, stderr: '', timedOut: false });

  test('a refused tool names its rule after continue-as-new; a rewrite is decided once and replayed, not asked again', async () => {
    const w = await startWorker(
      'gov-wf',
      {
        permissions: { deny: ['mcp__fake__secret'] },
        hooks: { PreToolUse: [{ matcher: 'mcp__fake__write', hooks: [{ type: 'command', command: 'rewrite' }] }] },
      },
      (r) => {
        const input = JSON.parse(r.stdin) as { tool_input: Record<string, unknown> };
        return ok(
          JSON.stringify({
            hookSpecificOutput: {
              hookEventName: 'PreToolUse',
              permissionDecision: 'allow',
              updatedInput: { ...input.tool_input, checked: true },
            },
          }),
        );
      },
    );
    try {
      const turn = await w.client.startTurn({
        sessionId: `gov-wf-${Date.now()}`,
        limits: { continueAsNewAfterCalls: 2 },
      });
      assert.deepEqual(turn.tools.map((t) => t.name).sort(), ['mcp__fake__echo', 'mcp__fake__write']);
      const firstRun = (await env.client.workflow.getHandle(turn.turnId).describe()).runId;
      const written = await turn.callTool({ id: 'w1', name: 'mcp__fake__write', arguments: { path: 'a' } });
      assert.equal(written.status, 'ok');
      assert.deepEqual(written.hooks?.pre?.updatedInput, { path: 'a', checked: true });
      assert.deepEqual(
        w.pool.calls.map((c) => c.args),
        [{ path: 'a', checked: true }],
        'the tool ran with the rewritten arguments',
      );
      await turn.callTool({ id: 'e1', name: 'mcp__fake__echo', arguments: { text: 'no hook here' } });
      // Two calls: the turn continues as new; the refused tool must still name its rule there.
      await waitUntil(
        'the turn to continue as new',
        async () => (await env.client.workflow.getHandle(turn.turnId).describe()).runId !== firstRun,
      );
      const refused = await turn.callTool({ id: 's1', name: 'mcp__fake__secret', arguments: {} });
      assert.match(
        refused?.errorMessage ?? '',
        /^mcp__fake__secret is not allowed in this turn: denied by rule "mcp__fake__secret" \(\/cfg\/settings\.json:2, deny\)$/,
      );
      await turn.end();
      assert.equal(w.hookRuns.length, 1, 'one hook run for one hooked call, through every replay');
      assert.deepEqual(w.hookRuns[0], {
        session_id: w.hookRuns[0]?.session_id,
        hook_event_name: 'PreToolUse',
        cwd: process.cwd(),
        tool_name: 'mcp__fake__write',
        tool_input: { path: 'a' },
        tool_use_id: 'w1',
      });
      assert.equal(w.pool.calls.filter((c) => c.tool === 'secret').length, 0);
    } finally {
      await w.stop();
    }
  });

  test('only a tool with hooks gets a hook activity, and a denied call never reaches the pool', async () => {
    const w = await startWorker(
      'gov-wf2',
      {
        hooks: { PreToolUse: [{ matcher: 'mcp__fake__write', hooks: [{ type: 'command', command: 'deny' }] }] },
      },
      () => ({ exitCode: 2, stdout: '', stderr: 'writes are off today', timedOut: false }),
    );
    try {
      const result = await w.client.runBatch({
        sessionId: `gov-wf2-${Date.now()}`,
        calls: [
          [{ id: 'e', name: 'mcp__fake__echo', arguments: { text: 'x' } }],
          [{ id: 'w', name: 'mcp__fake__write', arguments: {} }],
        ],
      });
      assert.equal(
        result.calls[1]?.outcome.errorMessage,
        'a PreToolUse hook denied mcp__fake__write: writes are off today',
      );
      assert.deepEqual(
        w.pool.calls.map((c) => c.tool),
        ['echo'],
      );
      const history = await env.client.workflow.getHandle(result.turnId).fetchHistory();
      const types = (history.events ?? []).flatMap((e) =>
        e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : [],
      );
      assert.deepEqual(types, [
        ActivityName.reconcileServers,
        ActivityName.listTools,
        ActivityName.callTool,
        ActivityName.preToolUseHooks,
      ]);
    } finally {
      await w.stop();
    }
  });
});
