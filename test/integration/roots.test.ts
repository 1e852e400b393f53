import assert from 'node:assert/strict';
import { mkdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { CallOutcome } from '../../contract/index.js';
import { startHarness, tempDir, type Harness } from '../support/harness.js';

const filesystemServer = fileURLToPath(
  new URL('../../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url),
);
/** The filesystem server with no directory arguments: it works only in the roots it is offered. */
const spec = `fs:${process.execPath} ${filesystemServer}`;

function text(outcome: CallOutcome): string {
  return outcome.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

describe("MCP roots: the turn's workspace, offered to servers", () => {
  let h: Harness;
  let first: string;
  let second: string;
  let outside: string;

  before(async () => {
    // Real paths: the filesystem server compares resolved paths.
    first = await realpath(await tempDir('dmcp-roots-a-'));
    second = await realpath(await tempDir('dmcp-roots-b-'));
    outside = await realpath(await tempDir('dmcp-roots-out-'));
    await writeFile(join(first, 'a.txt'), 'in the first workspace');
    await writeFile(join(second, 'b.txt'), 'in the second workspace');
    await writeFile(join(outside, 'secret.txt'), 'outside every workspace');
    h = await startHarness('roots');
  });
  after(async () => {
    await h?.stop();
  });

  test("a file in the workspace is read, one outside is refused; the next turn's workspace replaces the root", async () => {
    const sessionId = `roots-${Date.now()}`;
    const turn1 = await h.client.startTurn({ sessionId, workspace: first, servers: { inlineSpecs: [spec] } });
    assert.equal(turn1.status.servers[0]?.state, 'ready', JSON.stringify(turn1.status.servers[0]));
    const allowed1 = await turn1.callTool({ id: 'l1', name: 'mcp__fs__list_allowed_directories', arguments: {} });
    assert.equal(text(allowed1).trim(), `Allowed directories:\n${first}`);
    const inside = await turn1.callTool({
      id: 'r1',
      name: 'mcp__fs__read_text_file',
      arguments: { path: join(first, 'a.txt') },
    });
    assert.equal(inside.isError, false);
    assert.equal(text(inside), 'in the first workspace');
    const refused = await turn1.callTool({
      id: 'r2',
      name: 'mcp__fs__read_text_file',
      arguments: { path: join(outside, 'secret.txt') },
    });
    assert.equal(refused.isError, true);
    assert.match(text(refused), /Access denied|outside allowed directories/);
    assert.doesNotMatch(text(refused), /outside every workspace/);
    await turn1.end();
    const pid = h.worker.pool.pids(sessionId).fs;

    const turn2 = await h.client.startTurn({ sessionId, workspace: second, servers: { inlineSpecs: [spec] } });
    assert.equal(h.worker.pool.pids(sessionId).fs, pid, 'the same server process, told about the change');
    const allowed2 = await turn2.callTool({ id: 'l2', name: 'mcp__fs__list_allowed_directories', arguments: {} });
    assert.equal(text(allowed2).trim(), `Allowed directories:\n${second}`);
    const now = await turn2.callTool({
      id: 'r3',
      name: 'mcp__fs__read_text_file',
      arguments: { path: join(second, 'b.txt') },
    });
    assert.equal(now.isError, false);
    assert.equal(text(now), 'in the second workspace');
    const before = await turn2.callTool({
      id: 'r4',
      name: 'mcp__fs__read_text_file',
      arguments: { path: join(first, 'a.txt') },
    });
    assert.equal(before.isError, true, 'the first workspace is no longer a root');
    await turn2.end();
    assert.ok(
      h.logs.some((l) => l.includes('roots changed; server notified')),
      'list_changed was sent',
    );
  });

  test('a workspace outside DMCP_WORKSPACE_ROOTS, or in the config dir, is not offered', async () => {
    const configDir = await realpath(await tempDir('dmcp-roots-config-'));
    const inConfig = join(configDir, 'project');
    await mkdir(inConfig);
    await writeFile(join(inConfig, 'c.txt'), 'in the config dir');
    const strict = await startHarness('roots-strict', { DMCP_WORKSPACE_ROOTS: second, DMCP_CONFIG_DIR: configDir });
    try {
      for (const [workspace, file] of [
        [first, join(first, 'a.txt')],
        [inConfig, join(inConfig, 'c.txt')],
      ] as const) {
        const turn = await strict.client.startTurn({
          sessionId: `strict-${Date.now()}`,
          workspace,
          servers: { inlineSpecs: [spec] },
        });
        const allowed = await turn.callTool({ id: 'l', name: 'mcp__fs__list_allowed_directories', arguments: {} });
        assert.doesNotMatch(text(allowed), new RegExp(workspace), `${workspace} is not a root`);
        const read = await turn.callTool({ id: 'r', name: 'mcp__fs__read_text_file', arguments: { path: file } });
        assert.equal(read.isError, true, `${file} is not readable`);
        await turn.end();
      }
      assert.ok(
        strict.logs.some(
          (l) => l.includes('workspace not offered to servers as a root') && l.includes('DMCP_WORKSPACE_ROOTS'),
        ),
      );
      assert.ok(
        strict.logs.some(
          (l) => l.includes('workspace not offered to servers as a root') && l.includes('data or config dir'),
        ),
      );
      // Inside the allowed folder it is offered as usual.
      const ok = await strict.client.startTurn({
        sessionId: `strict-ok-${Date.now()}`,
        workspace: second,
        servers: { inlineSpecs: [spec] },
      });
      // The server asks for its roots once started and takes them in after checking each folder,
      // which can end after the turn's first call arrives: wait (bounded) until it lists the root.
      let listed = '';
      for (let i = 0; i < 25 && !listed.includes(second); i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 200));
        listed = text(await ok.callTool({ id: `l${i}`, name: 'mcp__fs__list_allowed_directories', arguments: {} }));
      }
      assert.match(listed, new RegExp(second), `${second} is offered as a root`);
      const read = await ok.callTool({
        id: 'r',
        name: 'mcp__fs__read_text_file',
        arguments: { path: join(second, 'b.txt') },
      });
      assert.equal(text(read), 'in the second workspace');
      await ok.end();
    } finally {
      await strict.stop();
    }
  });
});
