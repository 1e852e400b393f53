import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fixtureServer, isAlive, startHarness, tempDir, waitUntil, type Harness } from '../support/harness.js';
import { textOf } from '../support/content.js';

describe('a turn whose servers stopped while it was open', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness('resume');
  });
  after(async () => {
    await h?.stop();
  });

  test('the next call reconciles again and runs (it never started, so retrying is safe)', async () => {
    const sessionId = `resume-${Date.now()}`;
    const turn = await h.client.startTurn({
      sessionId,
      workspace: await tempDir(),
      servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
    });
    const before = turn.status.servers[0]!.pid!;
    assert.equal(
      (await turn.callTool({ id: 'a', name: 'mcp__fixture__echo', arguments: { text: 'first' } })).status,
      'ok',
    );
    // The server dies while the turn stays open (an open turn holds its servers against the idle
    // stop, so a crash is what takes them away now).
    process.kill(-before, 'SIGKILL');
    await waitUntil('the server to be gone', async () => !isAlive(before), 10_000);
    const outcome = await turn.callTool({ id: 'b', name: 'mcp__fixture__echo', arguments: { text: 'after the stop' } });
    assert.equal(outcome.status, 'ok', outcome.errorMessage);
    assert.equal(textOf(outcome.content[0]), 'after the stop');
    const after = h.worker.pool.pids(sessionId).fixture;
    assert.ok(after && after !== before, `a fresh server process (${before} -> ${after})`);
    await turn.end();
  });
});
