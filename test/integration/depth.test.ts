/**
 * What a server sends that must not hold or break its session: a tool listing that never ends,
 * one that crawls, and a tool schema nested too deeply to serialize. A real worker, a real
 * stdio server (test/fixtures/boundsServer.ts), the test run's Temporal server.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Turn } from '../../client/turnClient.js';
import type { ServerStatus } from '../../contract/index.js';
import { startHarness, tempDir, writeMcpJson, type Harness, within } from '../support/harness.js';

const boundsServer = fileURLToPath(new URL('../fixtures/boundsServer.js', import.meta.url));

function status(turn: Pick<Turn, 'status'>, name: string): ServerStatus {
  const found = turn.status.servers.find((s) => s.name === name);
  assert.ok(found, `server ${name} in ${JSON.stringify(turn.status.servers)}`);
  return found;
}

describe('bounds on what a server sends', { timeout: 180_000 }, () => {
  let h: Harness;
  let dir: string;
  let n = 0;

  before(async () => {
    dir = await tempDir('dmcp-depth-');
    h = await startHarness('depth');
  });
  after(async () => {
    await h?.stop();
  });

  /** A session with one bounds server `b` (its own state file) and the given start timeout. */
  async function session(startTimeout: number, ...args: string[]): Promise<{ sessionId: string; config: string }> {
    n += 1;
    const config = join(dir, `mcp-${n}.json`);
    const state = join(dir, `state-${n}`);
    await writeMcpJson(config, {
      b: { command: process.execPath, args: [boundsServer, '--state', state, ...args], startTimeout },
    });
    return { sessionId: `depth-${process.pid}-${Date.now()}-${n}`, config };
  }

  async function turnOf(s: { sessionId: string; config: string }): Promise<Turn> {
    return within(
      30_000,
      'starting a turn',
      h.client.startTurn({ sessionId: s.sessionId, workspace: dir, servers: { mcpConfigFiles: [s.config] } }),
    );
  }

  test('a tool listing that never ends fails its server after 100 pages; the session goes on', async () => {
    const s = await session(5);
    const first = await turnOf(s);
    assert.equal(status(first, 'b').state, 'ready');
    const on = await first.callTool({ id: 'e1', name: 'mcp__b__go_endless' });
    assert.equal(on.status, 'ok');
    await first.end();

    // The server said its tools changed: this turn lists again, and the listing never ends.
    const second = await turnOf(s);
    const b = status(second, 'b');
    assert.equal(b.state, 'failed', JSON.stringify(b));
    assert.match(String(b.error), /next page after 100 pages/);
    await within(15_000, 'ending the turn', second.end());
    // Later turns of the session are not held either.
    const third = await turnOf(s);
    assert.equal(status(third, 'b').state, 'failed');
    await third.end();
  });

  test('a tool listing that crawls is bounded by the start timeout', async () => {
    const s = await session(2, '--page-delay', '300');
    const first = await turnOf(s);
    await first.callTool({ id: 'e1', name: 'mcp__b__go_endless' });
    await first.end();
    const started = Date.now();
    const second = await turnOf(s);
    const b = status(second, 'b');
    assert.equal(b.state, 'failed', JSON.stringify(b));
    assert.match(String(b.error), /2000 ms|2 s|timed out/i);
    assert.ok(Date.now() - started < 15_000, `the turn started in ${Date.now() - started} ms`);
    await second.end();
  });

  test('a tool whose schema nests 200,000 levels deep is left out; the others stay usable', async () => {
    const s = await session(10);
    const first = await turnOf(s);
    await first.callTool({ id: 'd1', name: 'mcp__b__deep_schema' });
    await first.end();
    const second = await turnOf(s);
    const b = status(second, 'b');
    assert.equal(b.state, 'degraded', JSON.stringify(b));
    assert.ok(
      b.warnings.some((w) => /^tool "deep" left out: its schemas nest deeper than \d+ levels$/.test(w)),
      `the status says which tool was left out and why: ${JSON.stringify(b.warnings)}`,
    );
    assert.ok(!second.tools.some((t) => t.tool === 'deep'), 'the deep tool is not offered');
    assert.ok(
      second.tools.some((t) => t.tool === 'echo'),
      'the other tools are',
    );
    const echo = await second.callTool({ id: 'd2', name: 'mcp__b__echo', arguments: { text: 'still here' } });
    assert.deepEqual(echo.content, [{ type: 'text', text: 'still here' }]);
    await second.end();
    assert.ok(
      h.logs.some((l) => /schemas nest too deeply/.test(l) && l.includes('"deep"')),
      'the worker log says which tool was left out and why',
    );
    // A new session of the same server starts with the deep tool in its very first listing.
    const fresh = await turnOf({ ...s, sessionId: `${s.sessionId}-fresh` });
    assert.equal(status(fresh, 'b').state, 'degraded');
    assert.ok(!fresh.tools.some((t) => t.tool === 'deep'));
    await fresh.end();
  });

  test('a result nested 200,000 levels deep becomes a readable tool error; the turn goes on', async () => {
    const s = await session(10);
    const turn = await turnOf(s);
    const deep = await within(
      30_000,
      'the deep call',
      turn.callTool({ id: 'deep', name: 'mcp__b__deep_result', arguments: {} }),
    );
    assert.equal(deep.status, 'ok', deep.errorMessage);
    assert.equal(deep.isError, true, 'the tool ran, but its result cannot be kept');
    assert.match(JSON.stringify(deep.content), /nested deeper than 64 levels/);
    const next = await within(
      30_000,
      'the next call',
      turn.callTool({ id: 'after', name: 'mcp__b__echo', arguments: { text: 'still here' } }),
    );
    assert.equal(next.status, 'ok', next.errorMessage);
    await turn.end();
  });
});
