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

function text(outcome: CallOutcome): string {
  return outcome.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

/**
 * A plugin's filesystem server (untrusted, so sandboxed; needs bubblewrap) is offered the folder
 * its sandbox lets it write. Another workspace in a later turn is not announced to the running
 * process (its sandbox would not let it write there): the server starts anew in a new sandbox.
 */
describe('MCP roots of a sandboxed server', () => {
  let h: Harness;
  let first: string;
  let second: string;
  let plugin: string;

  before(async () => {
    first = await realpath(await tempDir('dmcp-sbroots-a-'));
    second = await realpath(await tempDir('dmcp-sbroots-b-'));
    plugin = await realpath(await tempDir('dmcp-sbroots-plugin-'));
    await writeFile(join(first, 'a.txt'), 'in the first workspace');
    await writeFile(join(second, 'b.txt'), 'in the second workspace');
    await mkdir(join(plugin, 'data'));
    await writeFile(
      join(plugin, '.mcp.json'),
      JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [filesystemServer] } } }),
    );
    h = await startHarness('roots-sandbox');
  });
  after(async () => {
    await h?.stop();
  });

  test("the root is the sandbox's writable workspace; another workspace starts the server in a new sandbox", async () => {
    const sessionId = `sbroots-${Date.now()}`;
    const turn1 = await h.client.startTurn({ sessionId, workspace: first, servers: { plugins: [plugin] } });
    const status = turn1.status.servers.find((s) => s.layer === 'plugin');
    assert.equal(status?.state, 'ready', JSON.stringify(turn1.status));
    const name = (tool: string) => turn1.tools.find((t) => t.server === status.name && t.tool === tool)!.name;
    const allowed1 = await turn1.callTool({ id: 'l1', name: name('list_allowed_directories'), arguments: {} });
    assert.equal(text(allowed1).trim(), `Allowed directories:\n${first}`, JSON.stringify(allowed1));
    const wrote = await turn1.callTool({
      id: 'w1',
      name: name('write_file'),
      arguments: { path: join(first, 'new.txt'), content: 'written in the sandbox' },
    });
    assert.equal(wrote.isError, false, text(wrote));
    await turn1.end();
    const pid = h.worker.pool.pids(sessionId)[status.name];

    const turn2 = await h.client.startTurn({ sessionId, workspace: second, servers: { plugins: [plugin] } });
    assert.notEqual(h.worker.pool.pids(sessionId)[status.name], pid, 'a new sandboxed process');
    const allowed2 = await turn2.callTool({ id: 'l2', name: name('list_allowed_directories'), arguments: {} });
    assert.equal(text(allowed2).trim(), `Allowed directories:\n${second}`);
    const wrote2 = await turn2.callTool({
      id: 'w2',
      name: name('write_file'),
      arguments: { path: join(second, 'new.txt'), content: 'written in the new sandbox' },
    });
    assert.equal(wrote2.isError, false, text(wrote2));
    const old = await turn2.callTool({
      id: 'r2',
      name: name('read_text_file'),
      arguments: { path: join(first, 'a.txt') },
    });
    assert.equal(old.isError, true, 'the first workspace is no longer its root');
    await turn2.end();
  });
});
