/**
 * The payload store's settings (filesystem or S3) and `payloads gc` on a real folder.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SettingsError, loadSettings } from '../../settings/index.js';
import { collectGarbage, parseRetention } from '../../cli/payloads.js';

const made: string[] = [];
const scratch = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dmcp-gc-'));
  made.push(dir);
  return dir;
};
after(() => Promise.all(made.map((d) => rm(d, { recursive: true, force: true }))));

const good: { env: Record<string, string>; s3: unknown }[] = [
  { env: {}, s3: undefined },
  { env: { DMCP_PAYLOAD_STORE: 'fs', DMCP_S3_BUCKET: 'ignored' }, s3: undefined },
  {
    env: { DMCP_S3_BUCKET: 'dmcp-payloads' },
    s3: { bucket: 'dmcp-payloads', prefix: 'durable-mcp/payloads/', region: 'us-east-1', forcePathStyle: false },
  },
  {
    env: {
      DMCP_PAYLOAD_STORE: 'S3',
      DMCP_S3_BUCKET: 'b.example',
      DMCP_S3_PREFIX: '/team-a',
      DMCP_S3_ENDPOINT: 'http://127.0.0.1:7070',
      DMCP_S3_FORCE_PATH_STYLE: 'true',
      AWS_REGION: 'eu-west-1',
    },
    s3: {
      bucket: 'b.example',
      prefix: 'team-a/',
      endpoint: 'http://127.0.0.1:7070',
      region: 'eu-west-1',
      forcePathStyle: true,
    },
  },
  {
    env: { DMCP_S3_BUCKET: 'abc', DMCP_S3_REGION: 'ap-south-1', AWS_REGION: 'eu-west-1' },
    s3: { bucket: 'abc', prefix: 'durable-mcp/payloads/', region: 'ap-south-1', forcePathStyle: false },
  },
];
for (const [i, row] of good.entries()) {
  void test(`payload store settings #${i + 1}: ${JSON.stringify(row.env)}`, () =>
    assert.deepEqual(loadSettings(row.env).payloads.s3, row.s3));
}

test('the filesystem store leaves no s3 key in the settings (shape unchanged)', () => {
  assert.equal('s3' in loadSettings({}).payloads, false);
});

const bad: [Record<string, string>, RegExp][] = [
  [{ DMCP_PAYLOAD_STORE: 's3' }, /DMCP_PAYLOAD_STORE=s3 needs DMCP_S3_BUCKET/],
  [{ DMCP_PAYLOAD_STORE: 'gcs' }, /DMCP_PAYLOAD_STORE must be fs or s3, got "gcs"/],
  [{ DMCP_S3_BUCKET: 'Bad_Bucket' }, /DMCP_S3_BUCKET must be an S3 bucket name/],
  [{ DMCP_S3_BUCKET: 'b12', DMCP_S3_ENDPOINT: '127.0.0.1:7070' }, /DMCP_S3_ENDPOINT must be a URL/],
  [{ DMCP_S3_BUCKET: 'b12', DMCP_S3_ENDPOINT: 'ftp://h' }, /DMCP_S3_ENDPOINT must be an http or https URL/],
  [
    { DMCP_S3_BUCKET: 'b12', DMCP_S3_ENDPOINT: 'http://AKIA:secret@h:7070' },
    /DMCP_S3_ENDPOINT must not hold credentials/,
  ],
  [{ DMCP_S3_BUCKET: 'b12', DMCP_S3_FORCE_PATH_STYLE: 'sometimes' }, /DMCP_S3_FORCE_PATH_STYLE must be true or false/],
];
for (const [env, error] of bad) {
  void test(`payload store settings refuse ${JSON.stringify(env)}`, () => {
    assert.throws(
      () => loadSettings(env),
      (err: unknown) => err instanceof SettingsError && error.test(err.message) && !err.message.includes('secret@'),
    );
  });
}

test('parseRetention reads days as well as hours and refuses zero', () => {
  assert.equal(parseRetention('30d', '--older-than'), 30 * 86_400_000);
  assert.equal(parseRetention('1.5d', '--older-than'), 36 * 3_600_000);
  assert.equal(parseRetention('720h', '--older-than'), 720 * 3_600_000);
  assert.throws(() => parseRetention('0d', '--older-than'), /--older-than must be a positive duration/);
  assert.throws(() => parseRetention('a month', '--older-than'), /--older-than/);
});

test('payloads gc deletes store files last written before the cutoff, and nothing else', async () => {
  const dir = await scratch();
  const now = Date.now();
  const day = 86_400_000;
  const digest = (c: string) => c.repeat(64);
  const files: [string, number][] = [
    [`${digest('a')}.bin`, 40 * day], // old payload: deleted
    [`${digest('b')}.bin`, 2 * day], // recent payload: kept
    [`${digest('c')}.bin.0a1b2c3d.tmp`, 40 * day], // staging file an interrupted store left: deleted
    ['notes.txt', 40 * day], // not the store's: left alone
    [`${digest('d')}.bin.bak`, 40 * day], // not the store's pattern: left alone
  ];
  for (const [name, age] of files) {
    await writeFile(join(dir, name), 'x'.repeat(10));
    await utimes(join(dir, name), (now - age) / 1000, (now - age) / 1000);
  }
  const dry = await collectGarbage({ dir, olderThanMs: 30 * day, now, dryRun: true });
  assert.deepEqual(dry, { dir, deleted: 2, deletedBytes: 20, kept: 1, ignored: 2 });
  assert.equal((await readdir(dir)).length, 5, 'a dry run deletes nothing');
  const real = await collectGarbage({ dir, olderThanMs: 30 * day, now });
  assert.deepEqual(real, dry);
  assert.deepEqual((await readdir(dir)).sort(), [`${digest('b')}.bin`, `${digest('d')}.bin.bak`, 'notes.txt'].sort());
});

test('payloads gc on a store that was never written is a no-op', async () => {
  const dir = join(await scratch(), 'payloads');
  assert.deepEqual(await collectGarbage({ dir, olderThanMs: 1000 }), {
    dir,
    deleted: 0,
    deletedBytes: 0,
    kept: 0,
    ignored: 0,
  });
});
