// The worker's side of logins: a token store that cannot be opened is one server's named problem,
// not a failed turn, and the operator's fix takes effect without restarting the worker.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createWorkerShelf } from '../../worker/shelf.js';
import { loadSettings } from '../../settings/index.js';
import type { LoadedConfig, ServerEntry } from '../../config/types.js';
import { tempDir } from '../support/harness.js';
import type { Client } from '@temporalio/client';
import { signShelfGrant, signShelfServer } from '../../plane/shelf.js';

const entry = (over: Partial<ServerEntry>): ServerEntry => ({
  name: 'docs',
  layer: 'shelf',
  source: 'shelf',
  trusted: true,
  type: 'http',
  url: 'https://docs.example/mcp',
  args: [],
  env: {},
  envFrom: {},
  headers: {},
  enabled: true,
  ...over,
});

void test('a key file others can read: the shelf server says so in its status, and fixing the mode is enough', async () => {
  const dataDir = join(await tempDir('dmcp-worker-shelf-'), 'data');
  await mkdir(dataDir, { recursive: true });
  const keyFile = join(dataDir, 'oauth.key');
  await writeFile(keyFile, `${randomBytes(32).toString('base64')}\n`, { mode: 0o644 });
  await chmod(keyFile, 0o644);
  const shelf = createWorkerShelf({
    settings: loadSettings({ DMCP_DATA_DIR: dataDir }),
    taskQueue: 'q',
    turnKey: undefined,
    env: {},
    logger: pino({ level: 'silent' }),
  });

  const refused = await shelf.credentials.accessToken('docs', 'https://docs.example/mcp');
  assert.ok('problem' in refused, JSON.stringify(refused));
  assert.equal(refused.problem.kind, 'refresh_failed');
  assert.match(
    refused.problem.message,
    /could not refresh its login \(the token store: .*oauth\.key.*\); tried again next turn/,
  );

  const config: LoadedConfig = {
    off: false,
    servers: [entry({ login: 'docs' }), entry({ name: 'files', type: 'stdio', command: 'x', url: undefined })],
    refused: [],
    warnings: [],
    hash: 'h',
  };
  const stamped = await shelf.withLoginIds(config);
  assert.equal(stamped.servers.length, 2);
  assert.ok(
    stamped.warnings.some((w) => /^logins of shelf servers not read: .*oauth\.key/.test(w)),
    stamped.warnings.join('\n'),
  );

  await chmod(keyFile, 0o600);
  const fixed = await shelf.credentials.accessToken('docs', 'https://docs.example/mcp');
  // The store opens now: no login yet, which is its own, ordinary answer.
  assert.ok('problem' in fixed && fixed.problem.kind === 'wanted', JSON.stringify(fixed));
  assert.deepEqual((await shelf.withLoginIds(config)).warnings, []);
});

void test("a shelf that does not answer once keeps the agent's servers of the last read, with a warning", async () => {
  const key = randomBytes(32);
  const entry = { type: 'http' as const, url: 'https://docs.example/mcp' };
  const state = {
    servers: [{ name: 'docs', entry, addedAt: '', addedBy: 't', proof: signShelfServer(key, 'docs', entry) }],
    grants: [{ server: 'docs', agent: 'bot', grantedAt: '', proof: signShelfGrant(key, 'docs', 'bot', entry) }],
    log: [],
    version: 1,
  };
  let answer: () => Promise<unknown> = async () => state;
  // Only the query (under a deadline) is used; anything else the shelf client asked of it would throw.
  const client = {
    withDeadline: <T>(_deadline: unknown, fn: () => Promise<T>) => fn(),
    workflow: { getHandle: () => ({ query: () => answer() }) },
  } as unknown as Client;
  const shelf = createWorkerShelf({
    settings: loadSettings({ DMCP_DATA_DIR: await tempDir() }),
    taskQueue: 'q',
    turnKey: key,
    env: {},
    logger: pino({ level: 'silent' }),
  });
  await assert.rejects(shelf.layerFor('bot'), /not connected/);
  shelf.attach(client);
  const first = await shelf.layerFor('bot');
  assert.match(first.text ?? '', /"docs"/);
  answer = () => Promise.reject(new Error('deadline exceeded'));
  const kept = await shelf.layerFor('bot');
  assert.equal(kept.text, first.text);
  assert.ok(
    kept.warnings.some((w) =>
      /^shelf: could not be read \(.*deadline exceeded\); the servers it granted at \d{4}-/.test(w),
    ),
    kept.warnings.join('\n'),
  );
  // An agent never read before has nothing to fall back on: the loader says the shelf was not read.
  await assert.rejects(shelf.layerFor('other'), /deadline exceeded/);
});
