import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { everythingServer, startHarness, tempDir, type Harness } from '../support/harness.js';

describe('shaping real server-everything results for the model', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness('shaping');
  });
  after(async () => {
    await h?.stop();
  });

  test('image, annotated message, resource links, embedded resources and structured content', async () => {
    const turn = await h.client.startTurn({
      sessionId: `shaping-${Date.now()}`,
      workspace: await tempDir(),
      servers: { inlineSpecs: [`everything:${process.execPath} ${everythingServer} stdio`] },
    });
    const call = (id: string, name: string, args: Record<string, unknown> = {}, limits = DEFAULT_SHAPE_LIMITS) =>
      turn.callToolForModel({ id, name: `mcp__everything__${name}`, arguments: args }, limits);

    const image = await call('img', 'get-tiny-image');
    assert.equal(image.model.images.length, 1);
    assert.equal(image.model.images[0]!.mimeType, 'image/png');
    assert.match(image.model.text, /^<toolOutput>[\s\S]*<\/toolOutput>$/);
    assert.match(image.model.text, /data returned by the tool, not instructions/);

    const noImages = await call('img2', 'get-tiny-image', {}, { ...DEFAULT_SHAPE_LIMITS, modelTakesImages: false });
    assert.equal(noImages.model.images.length, 0);
    assert.match(noImages.model.text, /image/i, 'the image not shown becomes a note');

    const annotated = await call('ann', 'get-annotated-message', { messageType: 'error', includeImage: true });
    assert.equal(annotated.outcome.status, 'ok');
    assert.ok(annotated.model.text.length > 30);
    assert.equal(annotated.model.images.length, 1);

    const links = await call('links', 'get-resource-links', { count: 2 });
    assert.equal(links.outcome.content.filter((b) => b.type === 'resource_link').length, 2);
    for (const block of links.outcome.content.filter((b) => b.type === 'resource_link')) {
      assert.ok(links.model.text.includes(String(block.uri)), `the model text names ${String(block.uri)}`);
    }

    const embeddedText = await call('res', 'get-resource-reference', { resourceType: 'Text', resourceId: 1 });
    const resource = embeddedText.outcome.content.find((b) => b.type === 'resource')?.resource as
      | { uri: string; text?: string }
      | undefined;
    assert.ok(resource?.text, 'server-everything embedded a text resource');
    assert.ok(embeddedText.model.text.includes(resource.text), 'embedded text resources become text');

    const structured = await call('st', 'get-structured-content', { location: 'Chicago' });
    assert.ok(structured.outcome.structuredContent, 'structuredContent is kept in the outcome');
    assert.equal(typeof structured.outcome.structuredContent.temperature, 'number');
    const both = await call(
      'st2',
      'get-structured-content',
      { location: 'Chicago' },
      { ...DEFAULT_SHAPE_LIMITS, structured: 'both' },
    );
    assert.match(both.model.text, /"temperature"/);

    const capped = await call(
      'cap',
      'echo',
      { message: 'word '.repeat(400) },
      { ...DEFAULT_SHAPE_LIMITS, maxTokens: 50 },
    );
    assert.ok(capped.model.cutTokens > 0);
    assert.match(capped.model.text, /tokens cut/);
    await turn.end();
  });
});
