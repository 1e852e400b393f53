/**
 * Which servers a reconcile grants as shared, and what another worker checks before it calls one:
 * the grant (this operator's key, this turn, this server) and its own resolution of the entry.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { sealerFor } from '../../activities/callChecks.js';
import type { ActivityKit } from '../../activities/deps.js';
import { sharedServers, sharedSession, sharedSessionId } from '../../activities/sharedCalls.js';
import type { LoadedConfig, ServerEntry } from '../../config/types.js';
import { FailureType, type CallToolInput, type ServerStatus, type TurnStatus } from '../../contract/index.js';

const key = randomBytes(32);

function entry(name: string, more: Partial<ServerEntry> = {}): ServerEntry {
  return {
    name,
    layer: 'config-dir',
    source: '/etc/dmcp/mcp.json:3',
    trusted: true,
    type: 'http',
    url: `https://${name}.example/mcp`,
    args: [],
    env: {},
    envFrom: {},
    headers: { Authorization: 'Bearer s3cret' },
    enabled: true,
    ...more,
  } as ServerEntry;
}

function configOf(...servers: ServerEntry[]): LoadedConfig {
  return { off: false, servers, refused: [], warnings: [], hash: 'h' };
}

function statusOf(...servers: Array<Pick<ServerStatus, 'name' | 'state' | 'era'>>): TurnStatus {
  return { servers: servers.map((s) => ({ tools: [], ...s })), warnings: [] } as unknown as TurnStatus;
}

interface FakePool {
  reconciled: Array<{ sessionId: string; servers: string[]; turnId?: string; workspace?: string }>;
  serving: Set<string>;
}

function kitOf(options: { config: LoadedConfig; sharedCalls?: boolean; seal?: Buffer; startsAs?: string }): {
  kit: ActivityKit;
  pool: FakePool;
} {
  const pool: FakePool = { reconciled: [], serving: new Set() };
  const kit = {
    seal: sealerFor(options.seal ?? key),
    deps: {
      sharedCalls: options.sharedCalls,
      scrub: (t: string) => t,
      loadConfig: async () => options.config,
      pool: {
        serves: (sessionId: string) => pool.serving.has(sessionId),
        reconcile: async (sessionId: string, config: LoadedConfig, o: { turnId?: string; workspace?: string }) => {
          pool.reconciled.push({
            sessionId,
            servers: config.servers.map((s) => s.name),
            turnId: o.turnId,
            ...(o.workspace !== undefined ? { workspace: o.workspace } : {}),
          });
          const state = (options.startsAs ?? 'ready') as ServerStatus['state'];
          if (state === 'ready') pool.serving.add(sessionId);
          return statusOf(...config.servers.map((s) => ({ name: s.name, state, era: 'modern' as const })));
        },
      },
    },
  } as unknown as ActivityKit;
  return { kit, pool };
}

const chain = 'turn-1 run-1';

describe('sharedServers: what a reconcile grants', () => {
  const cases: Array<{
    why: string;
    entry: ServerEntry;
    era?: 'modern' | 'legacy';
    state?: string;
    off?: boolean;
    shared: boolean;
  }> = [
    { why: 'a modern remote server', entry: entry('a'), shared: true },
    { why: 'a legacy remote server keeps a session', entry: entry('a'), era: 'legacy', shared: false },
    { why: 'stdio keeps a process per session', entry: entry('a', { type: 'stdio', url: undefined }), shared: false },
    { why: 'a server that is not ready', entry: entry('a'), state: 'failed', shared: false },
    { why: 'a login: its token is kept per worker', entry: entry('a', { login: 'a' }), shared: false },
    { why: 'DMCP_SHARED_CALLS=false', entry: entry('a'), off: true, shared: false },
  ];
  for (const c of cases) {
    test(c.why, () => {
      const { kit } = kitOf({ config: configOf(c.entry), sharedCalls: c.off ? false : undefined });
      const status = statusOf({ name: 'a', state: (c.state ?? 'ready') as 'ready', era: c.era ?? 'modern' });
      const shared = sharedServers(kit, configOf(c.entry), status, chain);
      assert.equal(shared?.a !== undefined, c.shared);
      if (shared?.a) {
        assert.match(shared.a.identity, /^[0-9a-f]{64}$/);
        assert.ok(!JSON.stringify(shared).includes('s3cret'), 'no header value in what history keeps');
      }
    });
  }

  test('the same entry read from another file is the same server; other headers are not', () => {
    const { kit } = kitOf({ config: configOf(entry('a')) });
    const status = statusOf({ name: 'a', state: 'ready', era: 'modern' });
    const id = (e: ServerEntry) => sharedServers(kit, configOf(e), status, chain)!.a!.identity;
    assert.equal(id(entry('a', { source: '/srv/other/mcp.json:9' })), id(entry('a')));
    assert.notEqual(id(entry('a', { headers: { Authorization: 'Bearer other' } })), id(entry('a')));
  });
});

describe('sharedSession: what another worker checks before it calls', () => {
  const granted = (kit: ActivityKit, e = entry('a'), turn = chain) =>
    sharedServers(kit, configOf(e), statusOf({ name: 'a', state: 'ready', era: 'modern' }), turn)!.a!;

  function callInput(grant: {
    identity: string;
    grant: string;
  }): CallToolInput & { shared: NonNullable<CallToolInput['shared']> } {
    return {
      sessionId: 's',
      firstRunId: 'run-1',
      callId: 'c1',
      name: 'mcp__a__echo',
      server: 'a',
      tool: 'echo',
      arguments: {},
      requestTimeoutMs: 1000,
      shared: { ...grant, refs: { workspace: '' } as never },
    };
  }

  async function missOf(run: Promise<unknown>): Promise<string> {
    const err = await run.then(
      () => assert.fail('the call was taken'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, FailureType.SharedMiss);
    assert.equal(err.nonRetryable, true);
    return err.message;
  }

  test('a granted call opens one connection for the entry, and the next call reuses it', async () => {
    const { kit, pool } = kitOf({ config: configOf(entry('a'), entry('b')) });
    const grant = granted(kit);
    const id = await sharedSession(kit, callInput(grant), chain);
    assert.equal(id, sharedSessionId(grant.identity));
    assert.equal(await sharedSession(kit, callInput(grant), chain), id);
    assert.deepEqual(pool.reconciled, [{ sessionId: id, servers: ['a'], turnId: id }]);
  });

  test('a turn that offers its workspace as a root gets a connection of its own workspace', async () => {
    const { kit, pool } = kitOf({ config: configOf(entry('a')) });
    const grant = granted(kit);
    const input = callInput(grant);
    const withRoot = (workspace: string) => ({
      ...input,
      shared: { ...input.shared, refs: { workspace } as never, offerRoot: true as const },
    });
    const one = await sharedSession(kit, withRoot('/srv/workspace-one'), chain);
    const two = await sharedSession(kit, withRoot('/srv/workspace-two'), chain);
    assert.notEqual(one, two);
    assert.notEqual(one, sharedSessionId(grant.identity));
    assert.deepEqual(
      pool.reconciled.map((r) => r.workspace),
      ['/srv/workspace-one', '/srv/workspace-two'],
    );
  });

  const refusals: Array<{ why: string; run: (kit: ActivityKit) => Promise<unknown>; says: RegExp }> = [
    {
      why: 'a grant of another turn',
      run: (kit) => sharedSession(kit, callInput(granted(kit, entry('a'), 'turn-2 run-2')), chain),
      says: /no grant/,
    },
    {
      why: 'a grant for another server',
      run: (kit) => sharedSession(kit, { ...callInput(granted(kit)), server: 'b' }, chain),
      says: /no grant/,
    },
    {
      why: "another operator's key",
      run: (kit) =>
        sharedSession(
          kitOf({ config: configOf(entry('a')), seal: randomBytes(32) }).kit,
          callInput(granted(kit)),
          chain,
        ),
      says: /no grant/,
    },
    {
      why: 'a forged grant',
      run: (kit) => sharedSession(kit, callInput({ ...granted(kit), grant: 'ab'.repeat(32) }), chain),
      says: /no grant/,
    },
  ];
  for (const r of refusals) {
    test(`refused unrun: ${r.why}`, async () => {
      const { kit, pool } = kitOf({ config: configOf(entry('a')) });
      assert.match(await missOf(r.run(kit)), r.says);
      assert.deepEqual(pool.reconciled, [], 'no connection opened');
    });
  }

  test('refused unrun: the references resolve to another entry here', async () => {
    const here = kitOf({ config: configOf(entry('a', { url: 'https://elsewhere.example/mcp' })) });
    const grant = granted(kitOf({ config: configOf(entry('a')) }).kit);
    assert.match(await missOf(sharedSession(here.kit, callInput(grant), chain)), /another entry/);
    assert.deepEqual(here.pool.reconciled, []);
  });

  test('refused unrun: the server does not start here', async () => {
    const { kit } = kitOf({ config: configOf(entry('a')), startsAs: 'failed' });
    assert.match(await missOf(sharedSession(kit, callInput(granted(kit)), chain)), /is failed on this worker/);
  });
});
