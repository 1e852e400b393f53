// The worker decides what runs on it: a turn's references only choose among what its operator allows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { nodeConfigIO } from '../../config/configIO.js';
import { loadConfig, type LoadOptions } from '../../config/load.js';
import { ensureTurnKey, refsProof, turnKeyFile } from '../../config/turnKey.js';
import type { Boundary, ConfigRefs } from '../../config/types.js';
import { SecretInInputError, Turn, TurnClient } from '../../client/turnClient.js';
import { configText, fakeIO, WS } from './configFixtures.js';
import { tempDir } from '../support/harness.js';

const KEY = Buffer.alloc(32, 7);
const SESSION = 's1';
const CFG_ENV = { DMCP_CONFIG_DIR: '/cfg' };
const files = {
  '/cfg/mcp.json': configText(['"base": { "command": "base" }']),
  '/allowed/a.json': configText(['"fromfile": { "command": "f" }']),
  '/elsewhere/b.json': configText(['"evil": { "command": "$(touch pwned)" }']),
  [`${WS}/.agents/mcp.json`]: configText(['"wsserver": { "command": "w" }']),
};
const boundary = (over: Partial<Boundary> = {}): Boundary => ({ allowInline: true, inlineCwd: '/neutral', ...over });
const refs = (over: Partial<ConfigRefs> = {}): ConfigRefs => ({
  workspace: WS,
  mcpConfigFiles: [],
  inlineSpecs: [],
  ...over,
});
const signed = (r: ConfigRefs, session = SESSION): ConfigRefs => ({ ...r, proof: refsProof(KEY, session, r) });

async function load(r: ConfigRefs, options: LoadOptions, env: NodeJS.ProcessEnv = CFG_ENV) {
  const io = fakeIO(files, { 'touch pwned': '' });
  const loaded = await loadConfig(r, env, io, { sessionId: SESSION, ...options });
  return { io, loaded, names: loaded.servers.map((s) => s.name) };
}

void test('inline specs on a worker that does not allow them: a failed server naming DMCP_ALLOW_INLINE; other layers load', async () => {
  const { loaded, names } = await load(refs({ inlineSpecs: ['p:touch pwned'] }), {
    boundary: boundary({ allowInline: false }),
  });
  assert.deepEqual(names, ['base']);
  assert.equal(loaded.refused.length, 1);
  assert.equal(loaded.refused[0].name, 'p');
  assert.equal(loaded.refused[0].layer, 'inline');
  assert.match(
    loaded.refused[0].reason,
    /--mcp #1: not used: inline --mcp specs are not allowed on this worker.*DMCP_ALLOW_INLINE=true/,
  );
});

void test('an inline spec that names no server is refused as a warning, not a crash', async () => {
  const { loaded, names } = await load(refs({ inlineSpecs: ['no name here'] }), {
    boundary: boundary({ allowInline: false }),
  });
  assert.deepEqual(names, ['base']);
  assert.deepEqual(loaded.refused, []);
  assert.ok(
    loaded.warnings.some((w) => /--mcp #1: not used: .*DMCP_ALLOW_INLINE/.test(w)),
    loaded.warnings.join('\n'),
  );
});

void test('explicit files outside DMCP_ALLOWED_CONFIG_DIRS are neither read nor run; inside ones load', async () => {
  const r = refs({ mcpConfigFiles: ['/allowed/a.json', '/elsewhere/b.json'] });
  const { io, loaded, names } = await load(r, { boundary: boundary({ allowedConfigDirs: ['/allowed'] }) });
  assert.deepEqual(names, ['base', 'fromfile']);
  assert.ok(!io.reads.includes('/elsewhere/b.json'));
  assert.deepEqual(io.calls, []);
  assert.ok(
    loaded.warnings.some((w) =>
      /^--mcp-config \/elsewhere\/b\.json: not used: .*outside the folders DMCP_ALLOWED_CONFIG_DIRS allows \(\/allowed\)/.test(
        w,
      ),
    ),
    loaded.warnings.join('\n'),
  );
});

void test('an empty allow list allows no explicit file and says which setting would', async () => {
  const { loaded, names } = await load(refs({ mcpConfigFiles: ['/allowed/a.json'] }), {
    boundary: boundary({ allowedConfigDirs: [] }),
  });
  assert.deepEqual(names, ['base']);
  assert.ok(
    loaded.warnings.some((w) => /this worker allows none .*DMCP_ALLOWED_CONFIG_DIRS/.test(w)),
    loaded.warnings.join('\n'),
  );
});

void test('a symlink inside an allowed folder that resolves outside it is refused (real file system)', async () => {
  const root = await tempDir('dmcp-boundary-');
  await mkdir(join(root, 'allowed'));
  await mkdir(join(root, 'outside'));
  await writeFile(join(root, 'outside', 'evil.json'), configText(['"evil": { "command": "x" }']));
  await writeFile(join(root, 'allowed', 'good.json'), configText(['"good": { "command": "x" }']));
  await symlink(join(root, 'outside', 'evil.json'), join(root, 'allowed', 'link.json'));
  const r = refs({ mcpConfigFiles: [join(root, 'allowed', 'good.json'), join(root, 'allowed', 'link.json')] });
  const loaded = await loadConfig(r, { DMCP_NO_USER_CONFIG: '1' }, nodeConfigIO, {
    boundary: boundary({ allowedConfigDirs: [join(root, 'allowed')] }),
  });
  assert.deepEqual(
    loaded.servers.map((s) => s.name),
    ['good'],
  );
  assert.equal(loaded.servers[0].cwd, join(root, 'allowed'), "a trusted file's servers start in its folder");
  assert.ok(
    loaded.warnings.some((w) => /link\.json: not used: it resolves to .*evil\.json, which lies outside/.test(w)),
    loaded.warnings.join('\n'),
  );
});

void test("with a turn key, unsigned references are refused and only the worker's own config dir loads", async () => {
  const r = refs({ inlineSpecs: ['p:touch pwned'], mcpConfigFiles: ['/elsewhere/b.json'], plugins: ['/plug'] });
  const { io, loaded, names } = await load(
    r,
    { boundary: boundary({ turnKey: KEY }) },
    { ...CFG_ENV, DMCP_WORKSPACE_MCP: 'true' },
  );
  assert.deepEqual(names, ['base']);
  assert.deepEqual(io.calls, []);
  assert.ok(
    !io.reads.some((f) => f.startsWith('/elsewhere') || f.startsWith('/plug') || f.startsWith(WS)),
    io.reads.join(', '),
  );
  assert.match(loaded.refused[0].reason, /no valid proof that the worker's operator chose it/);
  for (const what of [
    'workspace /ws: workspace layer not read',
    'plugin /plug: not used',
    '--mcp-config /elsewhere/b.json: not used',
  ]) {
    assert.ok(
      loaded.warnings.some((w) => w.startsWith(what) && /no valid proof/.test(w)),
      `${what}\n${loaded.warnings.join('\n')}`,
    );
  }
});

void test('a proof for other references or another session is no proof; the right one is honoured', async () => {
  const r = refs({ inlineSpecs: ['p:srv'], mcpConfigFiles: ['/allowed/a.json'] });
  const opts = { boundary: boundary({ turnKey: KEY }) };
  const tampered = { ...signed(r), inlineSpecs: ['p:touch pwned'] };
  assert.deepEqual((await load(tampered, opts)).names, ['base']);
  assert.deepEqual((await load(signed(r, 'other-session'), opts)).names, ['base']);
  assert.deepEqual((await load({ ...r, proof: 'zz' }, opts)).names, ['base']);
  const good = await load(signed(r), opts);
  assert.deepEqual(good.names, ['base', 'fromfile', 'p']);
  assert.deepEqual(good.loaded.refused, []);
});

void test("inline servers start in the worker's neutral folder, never in the turn's workspace", async () => {
  const { loaded } = await load(refs({ inlineSpecs: ['p:srv'] }), { boundary: boundary() });
  assert.equal(loaded.servers.find((s) => s.name === 'p')?.cwd, '/neutral');
});

void test('the workspace layer is read only under DMCP_WORKSPACE_ROOTS', async () => {
  const env = { ...CFG_ENV, DMCP_WORKSPACE_MCP: 'true' };
  const outside = await load(refs(), { boundary: boundary({ workspaceRoots: ['/home'] }) }, env);
  assert.deepEqual(outside.names, ['base']);
  assert.ok(
    outside.loaded.warnings.some((w) =>
      /workspace layer not read: it lies outside DMCP_WORKSPACE_ROOTS \(\/home\)/.test(w),
    ),
  );
  const none = await load(refs(), { boundary: boundary({ workspaceRoots: [] }) }, env);
  assert.ok(none.loaded.warnings.some((w) => /allows none .*DMCP_WORKSPACE_ROOTS/.test(w)));
  const inside = await load(refs(), { boundary: boundary({ workspaceRoots: ['/'] }) }, env);
  assert.deepEqual(inside.names, ['base', 'wsserver']);
  assert.equal(inside.loaded.servers[1].cwd, WS, 'workspace servers start in the workspace');
});

void test("a check-only load (the client's pre-check) runs no command and needs no variable", async () => {
  const io = fakeIO(
    { '/e.json': configText(['"a": { "command": "$(count)", "args": ["$UNSET_ON_CLIENT"] }']) },
    { count: '/bin/x' },
  );
  await loadConfig(refs({ mcpConfigFiles: ['/e.json'] }), { DMCP_NO_USER_CONFIG: '1' }, io, { checkOnly: true });
  assert.deepEqual(io.calls, []);
  // Still checked: a secret expanded in a file is refused before anything starts.
  const bad = fakeIO({ '/e.json': configText(['"a": { "command": "x", "args": ["$GH_TOKEN"] }']) });
  await assert.rejects(
    loadConfig(refs({ mcpConfigFiles: ['/e.json'] }), { DMCP_NO_USER_CONFIG: '1', GH_TOKEN: 'ghp_x' }, bad, {
      checkOnly: true,
    }),
    /secret/,
  );
});

void test('the turn key: created 0600 on first use, the same key afterwards, refused when others can read it', async () => {
  const dir = await tempDir('dmcp-key-');
  const [a, b] = await Promise.all([ensureTurnKey(dir), ensureTurnKey(dir)]);
  assert.equal(a.length, 32);
  assert.deepEqual(a, b, 'two processes starting at once agree on one key');
  assert.deepEqual(await ensureTurnKey(dir), a);
  assert.equal((await stat(turnKeyFile(dir))).mode & 0o777, 0o600);
  assert.match(await readFile(turnKeyFile(dir), 'utf8'), /^[0-9a-f]{64}\n$/);
  await chmod(turnKeyFile(dir), 0o644);
  await assert.rejects(ensureTurnKey(dir), /open to other users \(mode 644\).*chmod 600/);
});

// ---------------------------------------------------------------- the client refuses secret values

const SECRETS = { GITHUB_TOKEN: 'ghp_live_value_123' };
const noServer = {} as Client;

void test('TurnClient refuses a turn whose references or batch arguments hold a secret value, naming the variable only', async () => {
  const client = new TurnClient({ client: noServer, secrets: SECRETS, turnKey: KEY });
  const cases: Parameters<TurnClient['runBatch']>[0][] = [
    { sessionId: 's', servers: { inlineSpecs: ['gh:srv --token ghp_live_value_123'] }, calls: [] },
    { sessionId: 's', servers: { mcpConfigFiles: ['/tmp/ghp_live_value_123.json'] }, calls: [] },
    {
      sessionId: 's',
      calls: [[{ id: 'c1', name: 'mcp__a__b', arguments: { nested: [{ auth: 'Bearer ghp_live_value_123' }] } }]],
    },
  ];
  for (const c of cases) {
    await assert.rejects(client.runBatch(c), (err: Error) => {
      assert.ok(err instanceof SecretInInputError, String(err));
      assert.match(err.message, /secret variable GITHUB_TOKEN/);
      assert.doesNotMatch(err.message, /ghp_live_value_123/);
      return true;
    });
  }
});

void test('Turn.callTool refuses arguments holding a secret value before sending the Update', async () => {
  let sent = 0;
  const handle = {
    executeUpdate: () => {
      sent += 1;
      return Promise.resolve({});
    },
  } as unknown as WorkflowHandle;
  const start = {
    turnId: 't',
    workerQueue: 'q',
    status: { mcp: 'on' as const, servers: [], warnings: [], reportedAt: '' },
    tools: [],
    serversParagraph: '',
  };
  const turn = new Turn(handle as never, start, undefined, SECRETS);
  await assert.rejects(
    turn.callTool({ id: 'c', name: 'x', arguments: { q: 'ghp_live_value_123' } }),
    /call "c" \(x\) arguments.*GITHUB_TOKEN/,
  );
  assert.equal(sent, 0);
  await turn.callTool({ id: 'd', name: 'x', arguments: { q: 'fine' } });
  assert.equal(sent, 1);
});
