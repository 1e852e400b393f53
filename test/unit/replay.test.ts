/**
 * The committed histories in test/histories/ replay against the current workflow code. Replay runs
 * the workflow bundle in this process (Worker.runReplayHistories) and needs no Temporal server, so
 * it is in the fast tier; `npm run record:histories` (test/support/recordHistories.ts) records them.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { workflowsPath } from '../../worker/index.js';

const dir = fileURLToPath(new URL('../../../test/histories/', import.meta.url));

test('recorded histories of real turns replay against the current workflow code', async () => {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  assert.ok(files.length >= 2, `expected recorded histories in test/histories, found ${files.join(', ') || 'none'}`);
  const histories = await Promise.all(
    files.map(async (file) => ({
      workflowId: file,
      history: historyFromJSON(JSON.parse(await readFile(join(dir, file), 'utf8'))),
    })),
  );
  for (const h of histories) assert.ok((h.history.events?.length ?? 0) > 10, `${h.workflowId} has events`);
  const results = Worker.runReplayHistories({ workflowsPath, replayName: 'durable-mcp-replay' }, histories);
  let replayed = 0;
  for await (const result of results) {
    assert.equal(result.error, undefined, `${result.workflowId}: ${String(result.error)}`);
    replayed += 1;
  }
  assert.equal(replayed, files.length);
});
