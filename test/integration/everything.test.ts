import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { everythingServer, startHarness, tempDir, type Harness } from '../support/harness.js';
import { textOf } from '../support/content.js';

describe('@modelcontextprotocol/server-everything over stdio', () => {
  let h: Harness;
  let dir: string;
  before(async () => {
    dir = await tempDir();
    h = await startHarness('everything');
  });
  after(async () => {
    await h?.stop();
  });

  test('its tools are listed under mcp__everything__*, and get-tiny-image is recorded in history', async () => {
    const turn = await h.client.startTurn({
      sessionId: `everything-${Date.now()}`,
      workspace: dir,
      servers: { inlineSpecs: [`everything:${process.execPath} ${everythingServer} stdio`] },
    });
    const names = turn.tools.map((t) => t.name);
    assert.ok(names.length >= 5, `expected several tools, got ${names.join(', ')}`);
    assert.ok(
      names.every((n) => n.startsWith('mcp__everything__')),
      names.join(', '),
    );
    assert.ok(names.includes('mcp__everything__echo'));
    assert.ok(names.includes('mcp__everything__get-tiny-image'));
    const everything = turn.status.servers.find((s) => s.name === 'everything');
    assert.equal(everything?.state, 'ready');
    assert.ok(everything.pid && everything.pid > 0);

    const echo = await turn.callTool({
      id: 'c-echo',
      name: 'mcp__everything__echo',
      arguments: { message: 'hello everything' },
    });
    assert.equal(echo.status, 'ok');
    assert.match(String(textOf(echo.content[0])), /hello everything/);

    const image = await turn.callTool({ id: 'c-image', name: 'mcp__everything__get-tiny-image', arguments: {} });
    assert.equal(image.status, 'ok');
    const block = image.content.find((b) => b.type === 'image');
    assert.ok(block, 'an image block came back');
    assert.equal(block.mimeType, 'image/png');
    // PNG magic bytes, decoded from the base64 the server sent.
    assert.deepEqual([...Buffer.from(String(block.data), 'base64').subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
    await turn.end();

    const transcript = await h.client.transcript(turn.turnId);
    const recorded = transcript.calls.find((c) => c.id === 'c-image');
    assert.equal(recorded?.summary, 'mcp__everything__get-tiny-image');
    const recordedImage = recorded?.outcome?.content.find((b) => b.type === 'image');
    assert.equal(recordedImage?.data, block.data, 'history holds the image bytes');
  });
});
