import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fixtureServer, startHarness, tempDir, writeConfigDir, type Harness } from '../support/harness.js';
import { textOf } from '../support/content.js';

describe('config layers through a real turn', () => {
  let h: Harness;
  let root: string;
  before(async () => {
    root = await tempDir('dmcp-layers-');
    const config = await writeConfigDir(
      join(root, 'config'),
      { shared: { command: process.execPath, args: [fixtureServer] }, broken: { comand: 'x' } },
      { indent: 2 },
    );
    h = await startHarness('layers', { ...config, DMCP_WORKSPACE_MCP: 'true' });
  });
  after(async () => {
    await h?.stop();
  });

  test('config dir, workspace (untrusted), plugin and inline layers: precedence, trust and refusals in the status', async () => {
    const workspace = join(root, 'ws');
    await mkdir(join(workspace, '.agents'), { recursive: true });
    await writeFile(
      join(workspace, '.agents', 'mcp.json'),
      JSON.stringify({
        mcpServers: {
          shared: { command: process.execPath, args: [fixtureServer, '--from-workspace'] },
          local: { command: process.execPath, args: [fixtureServer] },
          sneaky: { command: process.execPath, args: [fixtureServer], envFrom: { TOKEN: 'HOME' } },
        },
      }),
    );
    const plugin = join(root, 'plugins', 'notes');
    await mkdir(plugin, { recursive: true });
    await writeFile(join(plugin, 'plugin.json'), JSON.stringify({ name: 'notes' }));
    await writeFile(
      join(plugin, '.mcp.json'),
      JSON.stringify({
        mcpServers: { echo: { command: process.execPath, args: [fixtureServer], cwd: '${PLUGIN_ROOT}' } },
      }),
    );

    const turn = await h.client.startTurn({
      sessionId: `layers-${Date.now()}`,
      workspace,
      servers: { inlineSpecs: [`inline:${process.execPath} ${fixtureServer}`], plugins: [plugin] },
    });
    const byName = Object.fromEntries(turn.status.servers.map((s) => [s.name, s]));
    assert.equal(byName.shared?.state, 'ready');
    assert.equal(byName.shared?.layer, 'configDir', 'the workspace never replaces a trusted server');
    assert.ok(
      [...turn.status.warnings, ...(byName.shared?.warnings ?? [])].some(
        (w) => /workspace/i.test(w) && /shared/.test(w),
      ),
      `a warning says the workspace entry was ignored: ${JSON.stringify(turn.status.warnings)}`,
    );
    assert.equal(byName.local?.layer, 'workspace');
    assert.equal(byName.local?.state, 'ready');
    assert.equal(byName.sneaky?.state, 'failed');
    assert.match(byName.sneaky?.error ?? '', /envFrom/);
    assert.equal(byName.broken?.state, 'failed');
    assert.match(byName.broken?.error ?? '', /comand/);
    assert.match(byName.broken?.error ?? '', /mcp\.json:\d+/, 'the refusal names file and line');
    assert.equal(byName.plugin_notes_echo?.state, 'ready');
    assert.equal(byName.plugin_notes_echo?.layer, 'plugin');
    assert.equal(byName.inline?.state, 'ready');
    const echo = await turn.callTool({
      id: 'p',
      name: 'mcp__plugin_notes_echo__echo',
      arguments: { text: 'from a plugin' },
    });
    assert.equal(textOf(echo.content[0]), 'from a plugin');
    assert.match(turn.serversParagraph, /broken/);
    await turn.end();
  });
});
