import assert from 'node:assert/strict';
import { readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Transcript } from '../../client/transcript.js';
import { saveImages } from '../../client/transcriptImages.js';
import { tempDir } from '../support/harness.js';

const png = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4a20000000049454e44ae426082',
  'hex',
);

function transcriptWith(ids: string[]): Transcript {
  return {
    turnId: 's/turn-1',
    tools: [],
    state: 'completed',
    calls: ids.map((id) => ({
      id,
      name: 'mcp__x__img',
      arguments: {},
      failures: [],
      outcome: {
        status: 'ok',
        isError: false,
        content: [{ type: 'image', data: png.toString('base64'), mimeType: 'image/png' }],
        startedAt: '',
        durationMs: 1,
        attempts: 1,
      },
    })),
  };
}

test('call IDs that clean to the same name get different files', async () => {
  const dir = await tempDir();
  const saved = await saveImages(transcriptWith(['a/b', 'a_b', '../up', 'call-1']), dir);
  assert.equal(saved.skipped.length, 0);
  const files = (await readdir(dir)).sort();
  assert.equal(files.length, 4, files.join(', '));
  assert.ok(files.includes('a_b-1.png'), 'a clean ID keeps its plain name');
  assert.ok(files.includes('call-1-1.png'));
  assert.ok(
    files.every((f) => !f.startsWith('.')),
    `no hidden or parent-relative names: ${files.join(', ')}`,
  );
});

test('an existing file is never overwritten, and a symlink is never followed', async () => {
  const dir = await tempDir();
  const outside = join(await tempDir(), 'victim.txt');
  await writeFile(outside, 'keep me');
  await writeFile(join(dir, 'c1-1.png'), 'old');
  await symlink(outside, join(dir, 'c2-1.png'));
  const saved = await saveImages(transcriptWith(['c1', 'c2', 'c3']), dir);
  assert.deepEqual(saved.skipped.map((f) => f.slice(dir.length + 1)).sort(), ['c1-1.png', 'c2-1.png']);
  assert.deepEqual(
    saved.written.map((f) => f.slice(dir.length + 1)),
    ['c3-1.png'],
  );
  assert.equal(await readFile(join(dir, 'c1-1.png'), 'utf8'), 'old');
  assert.equal(await readFile(outside, 'utf8'), 'keep me');
  assert.deepEqual(await readFile(join(dir, 'c3-1.png')), png);
});
