// The shelf layer: an agent's granted servers join a turn only when the turn's proof names the agent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, type LoadOptions } from '../../config/load.js';
import { refsProof } from '../../config/turnKey.js';
import type { Boundary, ConfigRefs } from '../../config/types.js';
import { refsProofText } from '../../contract/index.js';
import { configText, fakeIO, WS } from './configFixtures.js';

const KEY = Buffer.alloc(32, 9);
const SESSION = 's-shelf';
const files = {
  '/cfg/mcp.json': configText(['"base": { "command": "base" }', '"linear": { "command": "local-linear" }']),
};
const boundary: Boundary = { allowInline: true, inlineCwd: '/neutral', turnKey: KEY };
const refs = (over: Partial<ConfigRefs> = {}): ConfigRefs => ({
  workspace: WS,
  mcpConfigFiles: [],
  inlineSpecs: [],
  ...over,
});
const signed = (r: ConfigRefs): ConfigRefs => ({ ...r, proof: refsProof(KEY, SESSION, r) });

const shelfText = configText([
  '"docs": { "type": "http", "url": "https://docs.example/mcp" }',
  '"tracker": { "type": "sse", "url": "https://tracker.example/sse" }',
  '"files": { "command": "mcp-files", "args": ["--ro"] }',
]);

function shelfReader(text: string | undefined, warnings: string[] = []) {
  const asked: string[] = [];
  return {
    asked,
    read: async (agent: string) => (asked.push(agent), { ...(text !== undefined ? { text } : {}), warnings }),
  };
}

async function load(r: ConfigRefs, options: Partial<LoadOptions>) {
  return loadConfig(r, { DMCP_CONFIG_DIR: '/cfg' }, fakeIO(files), { sessionId: SESSION, boundary, ...options });
}

void test('a signed turn naming an agent gets its shelf servers as a trusted shelf layer', async () => {
  const shelf = shelfReader(shelfText);
  const loaded = await load(signed(refs({ agent: 'agent-a' })), { shelf: shelf.read });
  assert.deepEqual(shelf.asked, ['agent-a']);
  const byName = new Map(loaded.servers.map((s) => [s.name, s]));
  assert.deepEqual([...byName.keys()].sort(), ['base', 'docs', 'files', 'linear', 'tracker']);
  for (const name of ['docs', 'tracker', 'files']) {
    assert.equal(byName.get(name)!.layer, 'shelf');
    assert.equal(byName.get(name)!.trusted, true);
  }
  // Remote shelf servers use the login of their shelf name; a command needs none.
  assert.equal(byName.get('docs')!.login, 'docs');
  assert.equal(byName.get('tracker')!.login, 'tracker');
  assert.equal(byName.get('files')!.login, undefined);
  // A shelf command starts where inline servers start, never in the turn's workspace.
  assert.equal(byName.get('files')!.cwd, '/neutral');
  assert.match(byName.get('docs')!.source, /^shelf \(agent agent-a\)/);
});

void test('the agent is part of what the proof signs: the same proof with another agent is refused', async () => {
  const shelf = shelfReader(shelfText);
  const proofForA = refsProof(KEY, SESSION, refs({ agent: 'agent-a' }));
  const loaded = await load({ ...refs({ agent: 'agent-b' }), proof: proofForA }, { shelf: shelf.read });
  assert.deepEqual(shelf.asked, []);
  assert.deepEqual(loaded.servers.map((s) => s.name).sort(), ['base', 'linear']);
  assert.ok(
    loaded.warnings.some((w) => /^agent agent-b: shelf servers not used: the turn carries no valid proof/.test(w)),
    loaded.warnings.join('\n'),
  );
});

void test('an unsigned turn naming an agent gets no shelf servers, and says why', async () => {
  const shelf = shelfReader(shelfText);
  const loaded = await load(refs({ agent: 'agent-a' }), { shelf: shelf.read });
  assert.deepEqual(shelf.asked, []);
  assert.ok(loaded.warnings.some((w) => /agent agent-a: shelf servers not used/.test(w)));
});

void test('a turn without an agent signs what it signed before agents existed (v1), so older proofs hold', () => {
  const r = refs({ inlineSpecs: ['x:cmd'] });
  assert.equal(refsProofText(SESSION, r), JSON.stringify(['durable-mcp turn refs v1', SESSION, WS, [], ['x:cmd'], []]));
  assert.match(refsProofText(SESSION, { ...r, agent: 'a' }), /^\["durable-mcp turn refs v2",.*,"a"\]$/);
});

void test('a malformed agent ID is a warning naming the rule; the rest of the turn loads', async () => {
  const shelf = shelfReader(shelfText);
  const loaded = await load(signed(refs({ agent: '../etc' })), { shelf: shelf.read });
  assert.deepEqual(shelf.asked, []);
  assert.deepEqual(loaded.servers.map((s) => s.name).sort(), ['base', 'linear']);
  assert.ok(
    loaded.warnings.some((w) => /^agent: shelf servers not used: agent ID "\.\.\/etc" is not valid/.test(w)),
    loaded.warnings.join('\n'),
  );
});

void test('the shelf cannot be read: a warning, and the turn goes on without its shelf servers', async () => {
  const loaded = await load(signed(refs({ agent: 'agent-a' })), {
    shelf: async () => {
      throw new Error('workflow not found');
    },
  });
  assert.deepEqual(loaded.servers.map((s) => s.name).sort(), ['base', 'linear']);
  assert.ok(
    loaded.warnings.some((w) => /shelf: could not read the servers of agent agent-a \(workflow not found\)/.test(w)),
  );
});

void test("the reader's warnings (a bad proof on one entry) reach the status; no servers is no layer", async () => {
  const loaded = await load(signed(refs({ agent: 'agent-a' })), {
    shelf: shelfReader(undefined, ['shelf: server "evil" not used: its proof does not hold']).read,
  });
  assert.deepEqual(loaded.servers.map((s) => s.name).sort(), ['base', 'linear']);
  assert.ok(loaded.warnings.includes('shelf: server "evil" not used: its proof does not hold'));
});

void test('a shelf server replaces a config-dir server of the same name (both trusted, the shelf comes later)', async () => {
  const loaded = await load(signed(refs({ agent: 'agent-a' })), {
    shelf: shelfReader(configText(['"linear": { "type": "http", "url": "https://mcp.linear.example/mcp" }'])).read,
  });
  const linear = loaded.servers.find((s) => s.name === 'linear')!;
  assert.equal(linear.layer, 'shelf');
  assert.equal(linear.url, 'https://mcp.linear.example/mcp');
});

void test('$(command) in a shelf entry is not run', async () => {
  const io = fakeIO(files, { 'touch pwned': '' });
  const loaded = await loadConfig(signed(refs({ agent: 'agent-a' })), { DMCP_CONFIG_DIR: '/cfg' }, io, {
    sessionId: SESSION,
    boundary,
    shelf: shelfReader(configText(['"x": { "command": "$(touch pwned)" }'])).read,
  });
  assert.deepEqual(io.calls, []);
  assert.ok(!loaded.servers.some((s) => s.name === 'x'));
  assert.match(
    loaded.refused.find((r) => r.name === 'x')?.reason ?? '',
    /command expressions "\$\(\.\.\.\)" are not run for shelf servers; it was not run/,
  );
});

void test('the client pre-check (no boundary) never reads the shelf', async () => {
  const shelf = shelfReader(shelfText);
  await loadConfig(refs({ agent: 'agent-a' }), { DMCP_CONFIG_DIR: '/cfg' }, fakeIO(files), { shelf: shelf.read });
  assert.deepEqual(shelf.asked, []);
});
