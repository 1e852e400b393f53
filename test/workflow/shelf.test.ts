/**
 * The shelf workflow on a real dev server: changes through ShelfClient (update-with-start on the
 * shared queue), the validator's refusals, idempotent changes, Update IDs, the log, and
 * continue-as-new carrying the shelf; its history replays.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { SHELF_LOG_KEPT, type ShelfChange, type ShelfEntry } from '../../contract/index.js';
import {
  ShelfInputError,
  signShelfGrant,
  signShelfServer,
  verifyShelfGrant,
  verifyShelfServer,
} from '../../plane/shelf.js';
import { ShelfClient, ShelfUnavailableError } from '../../plane/shelfClient.js';
import { shelfChangeUpdate } from '../../workflows/index.js';
import { bundleWorkflows } from '../../worker/index.js';
import { uniqueQueue } from '../support/harness.js';
import { createWorkflowEnv } from '../support/workflowEnv.js';

const docs: ShelfEntry = { type: 'http', url: 'https://docs.example/mcp', headers: { 'X-Team': 'core' } };
const fs: ShelfEntry = {
  type: 'stdio',
  command: 'npx',
  args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv'],
};

describe('the shelf workflow', { timeout: 120_000 }, () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  const key = randomBytes(32);
  before(async () => {
    env = await createWorkflowEnv();
    bundle = await bundleWorkflows();
  });
  after(async () => {
    await env?.teardown();
  });

  /** A worker serving the shelf on a fresh queue (so a fresh shelf), and a client of it. */
  async function shelfOn(name: string, options: { continueAsNewAfter?: number; maxCachedWorkflows?: number } = {}) {
    const taskQueue = uniqueQueue(name);
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
    });
    const running = worker.run();
    const shelf = new ShelfClient({
      client: env.client,
      taskQueue,
      turnKey: key,
      by: 'test',
      ...(options.continueAsNewAfter ? { continueAsNewAfter: options.continueAsNewAfter } : {}),
    });
    return {
      shelf,
      taskQueue,
      async stop() {
        worker.shutdown();
        await running;
      },
    };
  }

  test('a shelf never changed reads empty; the first change starts it; changes are idempotent by content', async () => {
    const { shelf, stop } = await shelfOn('shelf-basics');
    try {
      assert.deepEqual(await shelf.read(), { servers: [], grants: [], log: [], version: 0 });
      assert.deepEqual(await shelf.add('docs', docs, { agent: 'bot-a' }), { changed: true, version: 1 });
      // The same entry again (also with its keys in another order): nothing changes.
      assert.deepEqual(
        await shelf.add('docs', { type: 'http', headers: { 'X-Team': 'core' }, url: 'https://docs.example/mcp' }),
        { changed: false, version: 1 },
      );
      assert.deepEqual(await shelf.add('docs', docs, { agent: 'bot-a' }), { changed: false, version: 1 });
      // The same entry with a new agent grants it.
      assert.deepEqual(await shelf.add('docs', docs, { agent: 'bot-b' }), { changed: true, version: 2 });
      assert.deepEqual(await shelf.add('fs', fs), { changed: true, version: 3 });
      assert.deepEqual(await shelf.grant('fs', 'bot-a'), { changed: true, version: 4 });
      assert.deepEqual(await shelf.grant('fs', 'bot-a'), { changed: false, version: 4 });
      assert.deepEqual(await shelf.drop('fs', 'bot-b'), { changed: false, version: 4 });
      assert.deepEqual(await shelf.drop('fs', 'bot-a'), { changed: true, version: 5 });
      assert.deepEqual(await shelf.forget('docs'), { changed: true, version: 6, agents: ['bot-a', 'bot-b'] });
      assert.deepEqual(await shelf.forget('docs'), { changed: false, version: 6, agents: [] });

      const state = await shelf.read();
      assert.equal(state.version, 6);
      assert.deepEqual(
        state.servers.map((s) => s.name),
        ['fs'],
      );
      assert.deepEqual(state.grants, []);
      assert.deepEqual(
        state.log.map((e) => [e.op, e.server, e.agent ?? '-', e.by]),
        [
          ['add', 'docs', 'bot-a', 'test'],
          ['add', 'docs', 'bot-b', 'test'],
          ['add', 'fs', '-', 'test'],
          ['grant', 'fs', 'bot-a', 'test'],
          ['drop', 'fs', 'bot-a', 'test'],
          ['forget', 'docs', '-', 'test'],
        ],
      );
      // Signed by the client with the turn key, kept as signed: a worker with the key verifies them.
      assert.equal(verifyShelfServer(key, state.servers[0]!), true);
      assert.match(state.servers[0]!.addedAt, /^\d{4}-\d\d-\d\dT/);
    } finally {
      await stop();
    }
  });

  test('putting the same entry or grant back with a new proof signs it again (how a key rotation is repaired)', async () => {
    const { shelf, taskQueue, stop } = await shelfOn('shelf-resign');
    try {
      const oldKey = randomBytes(32);
      const before = new ShelfClient({ client: env.client, taskQueue, turnKey: oldKey, by: 'test' });
      await before.add('docs', docs, { agent: 'bot-a' });
      let state = await shelf.read();
      assert.equal(verifyShelfServer(key, state.servers[0]!), false);
      // The operator does what the worker's warning says: add and grant again with the current key.
      assert.deepEqual(await shelf.add('docs', docs, { agent: 'bot-a' }), { changed: true, version: 2 });
      state = await shelf.read();
      assert.equal(state.servers.length, 1);
      assert.equal(state.grants.length, 1);
      assert.equal(verifyShelfServer(key, state.servers[0]!), true);
      assert.equal(verifyShelfGrant(key, state.grants[0]!, docs), true);
      assert.deepEqual(await shelf.grant('docs', 'bot-a'), { changed: false, version: 2 });
    } finally {
      await stop();
    }
  });

  test('the validator refuses, naming the field, and a refusal leaves the shelf and its history as they were', async () => {
    const { shelf, stop } = await shelfOn('shelf-refusals');
    try {
      await shelf.add('docs', docs, { agent: 'bot-a' });
      const refusals: [() => Promise<unknown>, string, RegExp][] = [
        [
          () => shelf.add('docs', { ...docs, url: 'https://other.example/mcp' }),
          'url',
          /"docs" is on the shelf already with another url; take it off first/,
        ],
        [
          () => shelf.add('docs', { type: 'http', url: 'https://docs.example/mcp', headers: { 'X-Team': 'ops' } }),
          'headers.X-Team',
          /with another headers\.X-Team/,
        ],
        [() => shelf.add('docs', fs), 'type', /with another type/],
        [() => shelf.grant('nope', 'bot-a'), 'server', /"nope" is not on the shelf; add it first/],
      ];
      for (const [attempt, field, message] of refusals) {
        await assert.rejects(
          attempt(),
          (err: Error) => err instanceof ShelfInputError && err.field === field && message.test(err.message),
          String(message),
        );
      }
      // What a client that skips its own checks sends: the workflow refuses it by itself.
      const raw = (change: unknown) =>
        env.client.workflow
          .getHandle(shelf.workflowId)
          .executeUpdate(shelfChangeUpdate, { args: [change as ShelfChange] });
      const proof = signShelfServer(key, 'x', docs);
      const rawRefusals: [unknown, RegExp][] = [
        [
          { op: 'add', server: { name: 'bad__name', entry: docs, addedAt: '', addedBy: 't', proof }, by: 't' },
          /^name: "bad__name" is not a server name/,
        ],
        [
          {
            op: 'add',
            server: { name: 'x', entry: { type: 'ftp', url: 'ftp://x' }, addedAt: '', addedBy: 't', proof },
            by: 't',
          },
          /^type: expected "http", "sse" or "stdio"/,
        ],
        [
          {
            op: 'add',
            server: { name: 'x', entry: { type: 'http', url: 'file:///etc/passwd' }, addedAt: '', addedBy: 't', proof },
            by: 't',
          },
          /^url: expected an http/,
        ],
        [
          { op: 'add', server: { name: 'x', entry: docs, addedAt: '', addedBy: 't' }, by: 't' },
          /^server\.proof: expected the turn key's proof/,
        ],
        [
          {
            op: 'add',
            server: { name: 'x', entry: docs, addedAt: '', addedBy: 't', proof },
            grant: { server: 'y', agent: 'a', grantedAt: '', proof },
            by: 't',
          },
          /^grant\.server: the grant is for "y"/,
        ],
        [
          {
            op: 'grant',
            grant: {
              server: 'docs',
              agent: 'not an agent!',
              grantedAt: '',
              proof: signShelfGrant(key, 'docs', 'x', docs),
            },
            by: 't',
          },
          /^agent: agent ID "not an agent!" is not valid/,
        ],
        [{ op: 'drop', server: 'docs', agent: '', by: 't' }, /^agent:/],
        [{ op: 'rename', server: 'docs', by: 't' }, /^op: expected "add", "grant", "drop" or "forget"/],
        [{ op: 'forget', server: 'docs', by: 'x'.repeat(300) }, /^by: expected a string of at most 200/],
      ];
      for (const [change, message] of rawRefusals) {
        await assert.rejects(
          raw(change),
          (err: Error) => message.test((err.cause as Error | undefined)?.message ?? ''),
          String(message),
        );
      }
      const state = await shelf.read();
      assert.equal(state.version, 1);
      assert.deepEqual(
        state.servers.map((s) => [s.name, s.entry]),
        [['docs', docs]],
      );
      const history = await env.client.workflow.getHandle(shelf.workflowId).fetchHistory();
      const accepted = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
      assert.equal(accepted.length, 1, 'refused changes leave no trace in history');
    } finally {
      await stop();
    }
  });

  test('an Update ID sent again is answered once and applied once', async () => {
    const { shelf, stop } = await shelfOn('shelf-update-id');
    try {
      await shelf.add('fs', fs);
      const first = await shelf.grant('fs', 'bot-a', { updateId: 'grant-fs-bot-a-1' });
      await shelf.drop('fs', 'bot-a');
      // A retry of the grant with its ID after the drop: the recorded answer, not a second grant.
      const retried = await shelf.grant('fs', 'bot-a', { updateId: 'grant-fs-bot-a-1' });
      assert.deepEqual(retried, first);
      const state = await shelf.read();
      assert.deepEqual(state.grants, []);
      assert.deepEqual(
        state.log.map((e) => e.op),
        ['add', 'grant', 'drop'],
      );
    } finally {
      await stop();
    }
  });

  test('continue-as-new carries the shelf, its version and log; the history replays', async () => {
    // No workflow cache: every task replays from the start of its run.
    const { shelf, stop } = await shelfOn('shelf-can', { continueAsNewAfter: 3, maxCachedWorkflows: 0 });
    try {
      for (let i = 0; i < 8; i++)
        await shelf.add(`s${i}`, { type: 'http', url: `https://s${i}.example/mcp` }, { agent: `bot-${i % 2}` });
      const handle = env.client.workflow.getHandle(shelf.workflowId);
      const state = await shelf.read();
      assert.equal(state.version, 8);
      assert.deepEqual(
        state.servers.map((s) => s.name),
        ['s0', 's1', 's2', 's3', 's4', 's5', 's6', 's7'],
      );
      assert.equal(state.grants.filter((g) => g.agent === 'bot-1').length, 4);
      assert.equal(state.log.length, 8);
      assert.ok(
        state.servers.every((s) => verifyShelfServer(key, s)) &&
          state.grants.every((g) => verifyShelfGrant(key, g, state.servers.find((s) => s.name === g.server)!.entry)),
      );
      const description = await handle.describe();
      const firstRunId = description.raw.workflowExecutionInfo?.firstRunId ?? '';
      assert.ok(firstRunId && firstRunId !== description.runId, 'the shelf continued as new');
      // The first run's history replays with today's workflow code.
      const first = env.client.workflow.getHandle(shelf.workflowId, firstRunId);
      const firstHistory = await first.fetchHistory();
      assert.ok(
        (firstHistory.events ?? []).some((e) => e.workflowExecutionContinuedAsNewEventAttributes),
        'the first run continued as new',
      );
      await Worker.runReplayHistory({ workflowBundle: bundle }, firstHistory, shelf.workflowId);
    } finally {
      await stop();
    }
  });

  test('the log keeps the newest changes only', async () => {
    const { shelf, stop } = await shelfOn('shelf-log', { continueAsNewAfter: 100 });
    try {
      await shelf.add('fs', fs);
      // Grants and drops alternate: each changes something.
      for (let i = 0; i < SHELF_LOG_KEPT / 2 + 5; i++) {
        await shelf.grant('fs', 'bot');
        await shelf.drop('fs', 'bot');
      }
      const state = await shelf.read();
      assert.equal(state.version, 1 + 2 * (SHELF_LOG_KEPT / 2 + 5));
      assert.equal(state.log.length, SHELF_LOG_KEPT);
      assert.equal(state.log[state.log.length - 1]!.op, 'drop');
      assert.ok(!state.log.some((e) => e.op === 'add'), 'the oldest change fell off');
    } finally {
      await stop();
    }
  });

  test('without a worker on the queue, a change says so within its timeout', async () => {
    const shelf = new ShelfClient({
      client: env.client,
      taskQueue: uniqueQueue('shelf-nobody'),
      turnKey: key,
      by: 'test',
      timeoutMs: 1500,
    });
    await assert.rejects(
      shelf.add('docs', docs),
      (err: Error) =>
        err instanceof ShelfUnavailableError &&
        /did not answer within 2 s: no worker polls task queue "test-shelf-nobody-/.test(err.message),
    );
    // Adding needs the key; refused before anything is sent.
    const keyless = new ShelfClient({ client: env.client, taskQueue: uniqueQueue('shelf-keyless'), by: 'test' });
    await assert.rejects(
      keyless.add('docs', docs),
      (err: Error) => err instanceof ShelfInputError && err.field === 'turnKey',
    );
    await assert.rejects(
      keyless.grant('docs', 'a'),
      (err: Error) => err instanceof ShelfInputError && err.field === 'turnKey',
    );
  });
});
