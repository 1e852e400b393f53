/**
 * Task IDs a server chooses are held to the rule a caller's are (visible ASCII, at most 256
 * characters) before they are recorded: a task named otherwise ends its call saying so, and is
 * cancelled on its server, since no turn could follow it or take it up. Real Temporal, the
 * task fixture over stdio in both eras.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { MAX_TASK_ID_CHARS } from '../../contract/index.js';
import { historyTexts } from '../support/inputs.js';
import { configFiles, readLines, startHarness, tempDir, waitUntil, type Harness } from '../support/harness.js';

const taskServer = fileURLToPath(new URL('../fixtures/taskServer.js', import.meta.url));

interface TaskEvent {
  event: string;
  tag?: string;
  taskId: string;
}

describe('task IDs chosen by a server', { timeout: 120_000 }, () => {
  let h: Harness;
  let dir: string;

  before(async () => {
    dir = await tempDir('dmcp-task-ids-');
    h = await startHarness('task-ids');
  });
  after(async () => {
    await h?.stop();
  });

  const eras = [
    {
      era: '2026-07-28 (the tasks extension)',
      args: ['modern', 'stdio'],
      entry: { protocol: '2026-07-28', tasks: 'prefer' },
    },
    { era: '2025-11-25', args: ['stdio'], entry: {} },
  ];
  for (const { era, args, entry } of eras) {
    test(`${era}: a task ID past ${MAX_TASK_ID_CHARS} characters, or holding a control character, is not recorded: the call ends saying so, and the task is cancelled on its server`, async () => {
      const log = join(dir, `tasks-${args.join('-')}.log`);
      const events = async () => (await readLines(log)).map((l) => JSON.parse(l) as TaskEvent);
      const config = await configFiles(dir)({
        odd: { command: process.execPath, args: [taskServer, ...args], env: { FIXTURE_LOG: log }, ...entry },
      });
      const turn = await h.client.startTurn({
        sessionId: `task-ids-${Date.now()}`,
        workspace: dir,
        servers: { mcpConfigFiles: [config] },
      });
      const expected = {
        long: /taskId is 300 characters; at most 256/,
        control: /taskId may hold only visible ASCII characters/,
      };
      for (const [id, problem] of Object.entries(expected)) {
        const outcome = await turn.callTool({
          id: `odd-${id}`,
          name: 'mcp__odd__odd_id_job',
          arguments: { tag: `odd-${id}`, id },
        });
        assert.equal(outcome.status, 'error', `${id}: the task was followed (${JSON.stringify(outcome.content)})`);
        assert.equal(outcome.errorKind, 'bad_request', outcome.errorMessage);
        assert.match(
          outcome.errorMessage ?? '',
          /mcp__odd__odd_id_job: the server gave its task an ID that cannot be recorded \(/,
        );
        assert.match(outcome.errorMessage ?? '', problem);
        assert.match(outcome.errorMessage ?? '', /the task was cancelled on the server, and it may have had an effect/);
      }
      await turn.end();

      const created = (await events()).filter((e) => e.event === 'task-created');
      assert.equal(created.length, 2, 'one task per call');
      await waitUntil(
        'both cancels to reach the server',
        async () => (await events()).filter((e) => e.event === 'task-cancelled').length === 2,
        10_000,
      );
      assert.deepEqual(
        new Set((await events()).filter((e) => e.event === 'task-cancelled').map((e) => e.taskId)),
        new Set(created.map((c) => c.taskId)),
        'each task was cancelled by its own ID',
      );

      const { raw, payloads } = await historyTexts(h.client, turn.turnId);
      assert.ok(
        payloads.some((t) => t.includes('the server gave its task an ID that cannot be recorded')),
        'decoded payloads hold the outcomes',
      );
      for (const { taskId } of created) {
        // The random end of each ID: the control ID's JSON form differs from it only in the escape.
        const visible = taskId.slice(-16);
        assert.ok(
          !raw.includes(visible) && !payloads.some((t) => t.includes(visible)),
          `task ID ...${visible} is in history`,
        );
      }
    });
  }
});
