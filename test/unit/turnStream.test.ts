/**
 * The pure and local parts of a turn's stream: event places (what `Last-Event-ID` may name and how
 * places order), and the step text log on a local disk (records after a cursor, a line half
 * written, a log never begun, a watch that fires when the log grows).
 */
import assert from 'node:assert/strict';
import { appendFile, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { EventIdError, placeOf } from '../../client/turnEvents.js';
import { createPayloadCodecs } from '../../payloads/dataConverter.js';
import { FilesystemStepTextStore } from '../../payloads/streamLog.js';
import { tempDir } from '../support/harness.js';

test('an event ID is a place of its turn: the turn, then 3 or 4 whole numbers', () => {
  const turn = 'chat-42/turn-1';
  const cases: [string, number[] | undefined][] = [
    [`${turn}|0.8.0`, [0, 8, 0]],
    [`${turn}|0.20.1.2`, [0, 20, 1, 2]],
    [`${turn}|1.3.0`, [1, 3, 0]],
    [`chat-42/turn-2|0.8.0`, undefined],
    [`${turn}|0.8`, undefined],
    [`${turn}|0.8.0.1.2`, undefined],
    [`${turn}|0.-1.0`, undefined],
    [`${turn}|0.x.0`, undefined],
    [`${turn}|0.1e3.0`, undefined],
    ['0.8.0', undefined],
    ['', undefined],
  ];
  for (const [id, place] of cases) {
    if (place) assert.deepEqual(placeOf(id, turn), place, id);
    else assert.throws(() => placeOf(id, turn), EventIdError, id);
  }
});

test('the filesystem text log: records after a cursor, a half-written line left for later, no log before it begins', async () => {
  const dir = await tempDir('dmcp-text-log-');
  const store = new FilesystemStepTextStore(dir, createPayloadCodecs({}));
  const key = { turnId: 'chat-42/turn-1', step: 1, attempt: 1 };
  assert.equal(await store.read(key, 0), undefined);
  await store.append(key, { begin: true, at: 1 });
  await store.append(key, { text: 'Hello', at: 2 });
  const first = await store.read(key, 0);
  assert.deepEqual(first?.records, [
    { begin: true, at: 1 },
    { text: 'Hello', at: 2 },
  ]);
  assert.deepEqual(await store.read(key, first!.cursor), { records: [], cursor: first!.cursor });
  const [turnDir] = await readdir(join(dir, 'streams'));
  const file = join(dir, 'streams', turnDir!, '1-1.log');
  // A writer mid-line: the part without its newline is not a record yet.
  const whole = await readFile(file, 'utf8');
  const line = whole.split('\n')[1]!;
  await appendFile(file, line.slice(0, 10));
  assert.deepEqual((await store.read(key, first!.cursor))?.records, []);
  await appendFile(file, `${line.slice(10)}\n`);
  assert.deepEqual((await store.read(key, first!.cursor))?.records, [{ text: 'Hello', at: 2 }]);
  assert.equal(await store.read({ ...key, attempt: 2 }, 0), undefined, "another attempt's log is its own");
});

test('the filesystem text log tells a watcher when it grows', async () => {
  const dir = await tempDir('dmcp-text-watch-');
  const store = new FilesystemStepTextStore(dir, createPayloadCodecs({}));
  const key = { turnId: 'chat-42/turn-2', step: 3, attempt: 1 };
  assert.equal(
    store.watch(key, () => undefined),
    undefined,
    'no log, nothing to watch',
  );
  await store.append(key, { begin: true, at: 1 });
  let changes = 0;
  const grew = new Promise<void>((resolve) => {
    const watcher = store.watch(key, () => {
      changes += 1;
      watcher?.close();
      resolve();
    });
  });
  await store.append(key, { text: 'more', at: 2 });
  await Promise.race([
    grew,
    new Promise((_, reject) => setTimeout(() => reject(new Error('no change seen in 5 s')), 5000)),
  ]);
  assert.ok(changes >= 1);
});
