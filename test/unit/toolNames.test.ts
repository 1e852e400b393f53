import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  MAX_TOOL_NAME_LENGTH,
  ToolNameMap,
  describeTool,
  parseToolPrefix,
  publicToolName,
  type ToolPrefix,
} from '../../mcp/toolNames.js';

/** Independent re-computation of the hash the spec asks for, so the tests pin the format. */
function hash8(server: string, tool: string): string {
  return createHash('sha256')
    .update(JSON.stringify([server, tool]))
    .digest('hex')
    .slice(0, 8);
}

const SAFE = /^[A-Za-z0-9_-]+$/u;
const long = (c: string, n: number): string => c.repeat(n);

interface NameRow {
  name: string;
  server: string;
  tool: string;
  prefix?: ToolPrefix;
  expected: string | ((server: string, tool: string) => string);
}

const nameRows: NameRow[] = [
  { name: 'plain', server: 'github', tool: 'create_issue', expected: 'mcp__github__create_issue' },
  { name: 'hyphens and digits kept', server: 'srv-2', tool: 'get-v1', expected: 'mcp__srv-2__get-v1' },
  { name: 'none prefix', server: 'github', tool: 'create_issue', prefix: 'none', expected: 'github__create_issue' },
  { name: 'dot cleaned and hashed', server: 's', tool: 'a.b', expected: (s, t) => `mcp__s__a_b_${hash8(s, t)}` },
  {
    name: 'space and slash cleaned',
    server: 's',
    tool: 'read file/x',
    expected: (s, t) => `mcp__s__read_file_x_${hash8(s, t)}`,
  },
  {
    name: 'non-ASCII code point is one underscore',
    server: 's',
    tool: 'caf\u00e9\u{1F600}',
    expected: (s, t) => `mcp__s__caf___${hash8(s, t)}`,
  },
  {
    name: 'cleaned with none prefix',
    server: 's',
    tool: 'a.b',
    prefix: 'none',
    expected: (s, t) => `s__a_b_${hash8(s, t)}`,
  },
  {
    name: 'exactly 64 characters is kept',
    server: 's',
    tool: long('x', 64 - 'mcp__s__'.length),
    expected: `mcp__s__${long('x', 56)}`,
  },
  {
    name: '65 characters is cut and hashed',
    server: 's',
    tool: long('x', 65 - 'mcp__s__'.length),
    expected: (s, t) => `mcp__s__${long('x', 64 - 9 - 8)}_${hash8(s, t)}`,
  },
  {
    name: 'long and dirty is cut and hashed once',
    server: 'srv',
    tool: long('a.', 50),
    expected: (s, t) => `mcp__srv__${'a_'.repeat(50)}`.slice(0, 55) + `_${hash8(s, t)}`,
  },
  { name: 'server with __ is hashed', server: 'a__b', tool: 'c', expected: (s, t) => `mcp__a__b__c_${hash8(s, t)}` },
  { name: 'server ending in _ is hashed', server: 'a_', tool: 'b', expected: (s, t) => `mcp__a___b_${hash8(s, t)}` },
  { name: 'tool with __ is fine', server: 'a', tool: 'b__c', expected: 'mcp__a__b__c' },
];

for (const row of nameRows) {
  void test(`publicToolName: ${row.name}`, () => {
    const got = publicToolName(row.server, row.tool, row.prefix);
    const expected = typeof row.expected === 'string' ? row.expected : row.expected(row.server, row.tool);
    assert.equal(got, expected);
    assert.ok(got.length <= MAX_TOOL_NAME_LENGTH, `${got} is ${got.length} characters`);
    assert.match(got, SAFE);
    assert.equal(publicToolName(row.server, row.tool, row.prefix), got, 'stable across calls');
  });
}

void test('publicToolName: default prefix is mcp', () => {
  assert.equal(publicToolName('x', 'y'), publicToolName('x', 'y', 'mcp'));
});

interface CollisionRow {
  name: string;
  a: [string, string];
  b: [string, string];
}

const collisionRows: CollisionRow[] = [
  { name: 'a.b vs a_b', a: ['s', 'a.b'], b: ['s', 'a_b'] },
  { name: 'a.b vs a/b', a: ['s', 'a.b'], b: ['s', 'a/b'] },
  {
    name: 'long names sharing a 64-character prefix',
    a: ['s', `${long('t', 70)}_one`],
    b: ['s', `${long('t', 70)}_two`],
  },
  {
    name: 'same tool on two long servers sharing a prefix',
    a: [`${long('p', 60)}1`, 'x'],
    b: [`${long('p', 60)}2`, 'x'],
  },
  { name: 'split point: a + b__c vs a__b + c', a: ['a', 'b__c'], b: ['a__b', 'c'] },
  { name: 'split point: a_ + b vs a + _b', a: ['a_', 'b'], b: ['a', '_b'] },
];

for (const row of collisionRows) {
  void test(`publicToolName: no collision, ${row.name}`, () => {
    for (const prefix of ['mcp', 'none'] as const) {
      const na = publicToolName(...row.a, prefix);
      const nb = publicToolName(...row.b, prefix);
      assert.notEqual(na, nb);
      assert.ok(na.length <= MAX_TOOL_NAME_LENGTH && nb.length <= MAX_TOOL_NAME_LENGTH);
    }
  });
}

interface MapRow {
  name: string;
  refs: Array<{ server: string; tool: string }>;
  prefix?: ToolPrefix;
}

const allRefs = [
  ...nameRows.map(({ server, tool }) => ({ server, tool })),
  ...collisionRows.flatMap(({ a, b }) => [
    { server: a[0], tool: a[1] },
    { server: b[0], tool: b[1] },
  ]),
];

const mapRows: MapRow[] = [
  { name: 'every name and collision row', refs: allRefs },
  { name: 'every row with none prefix', refs: allRefs, prefix: 'none' },
  { name: 'empty', refs: [] },
  {
    name: 'duplicates counted once',
    refs: [
      { server: 's', tool: 't' },
      { server: 's', tool: 't' },
    ],
  },
];

for (const row of mapRows) {
  void test(`ToolNameMap: exact reverse mapping, ${row.name}`, () => {
    const map = new ToolNameMap(row.refs, row.prefix);
    const distinct = new Set(row.refs.map((r) => JSON.stringify([r.server, r.tool])));
    assert.equal(map.size, distinct.size);
    const names = new Set<string>();
    for (const ref of row.refs) {
      const name = map.publicName(ref.server, ref.tool);
      assert.ok(name !== undefined);
      assert.equal(
        name,
        publicToolName(ref.server, ref.tool, row.prefix),
        'no clash, so the map agrees with publicToolName',
      );
      assert.deepEqual(map.resolve(name), { server: ref.server, tool: ref.tool });
      names.add(name);
    }
    assert.equal(names.size, distinct.size, 'one name per distinct pair');
    assert.deepEqual(
      map
        .entries()
        .map((e) => e.name)
        .sort(),
      [...names].sort(),
    );
  });
}

void test('ToolNameMap: independent of input order', () => {
  const forward = new ToolNameMap(allRefs);
  const backward = new ToolNameMap([...allRefs].reverse());
  assert.deepEqual(forward.entries(), backward.entries());
});

void test('ToolNameMap: unknown names and pairs', () => {
  const map = new ToolNameMap([{ server: 's', tool: 't' }]);
  assert.equal(map.resolve('mcp__s__u'), undefined);
  assert.equal(map.resolve(''), undefined);
  assert.equal(map.publicName('s', 'u'), undefined);
});

void test('ToolNameMap: resolve returns a copy', () => {
  const map = new ToolNameMap([{ server: 's', tool: 't' }]);
  const ref = map.resolve('mcp__s__t');
  assert.ok(ref);
  ref.tool = 'changed';
  assert.deepEqual(map.resolve('mcp__s__t'), { server: 's', tool: 't' });
});

void test('ToolNameMap: a real clash is disambiguated deterministically', () => {
  // A tool literally named like another tool's hashed name: the only way to clash despite the hash.
  const dirty = { server: 's', tool: 'a.b' };
  const clashing = { server: 's', tool: `a_b_${hash8('s', 'a.b')}` };
  const shared = publicToolName(dirty.server, dirty.tool);
  assert.equal(publicToolName(clashing.server, clashing.tool), shared, 'precondition: the two clash');

  for (const refs of [
    [dirty, clashing],
    [clashing, dirty],
  ]) {
    const map = new ToolNameMap(refs);
    // (s, a.b) sorts first ('.' < '_'), so it keeps the name; the other gets `_2`.
    assert.equal(map.publicName('s', 'a.b'), shared);
    assert.equal(map.publicName('s', clashing.tool), `${shared}_2`);
    assert.deepEqual(map.resolve(shared), dirty);
    assert.deepEqual(map.resolve(`${shared}_2`), clashing);
  }
});

void test('ToolNameMap: disambiguated names stay within 64 and skip taken names', () => {
  const tool = long('y', 70);
  const dirty = { server: 's', tool: `${tool}.` };
  const shared = publicToolName(dirty.server, dirty.tool);
  assert.equal(shared.length, MAX_TOOL_NAME_LENGTH);
  // A second pair whose clean name is exactly the clash, and a third whose clean name is the `_2` candidate.
  const clashing = { server: 's', tool: shared.slice('mcp__s__'.length) };
  const secondCandidate = `${shared.slice(0, MAX_TOOL_NAME_LENGTH - 2)}_2`;
  const squatter = { server: 's', tool: secondCandidate.slice('mcp__s__'.length) };
  assert.equal(publicToolName(clashing.server, clashing.tool), shared);
  assert.equal(publicToolName(squatter.server, squatter.tool), secondCandidate);

  const map = new ToolNameMap([squatter, clashing, dirty]);
  const names = [dirty, clashing, squatter].map((r) => map.publicName(r.server, r.tool));
  assert.equal(new Set(names).size, 3);
  for (const name of names) {
    assert.ok(name !== undefined && name.length <= MAX_TOOL_NAME_LENGTH);
  }
  assert.equal(map.publicName(squatter.server, squatter.tool), secondCandidate, 'a base name is never taken away');
  // Whichever of the two clashing pairs sorts first keeps the name; `_2` is taken, so the other gets `_3`.
  const pair = [map.publicName(dirty.server, dirty.tool), map.publicName(clashing.server, clashing.tool)].sort();
  assert.deepEqual(pair, [shared, `${shared.slice(0, MAX_TOOL_NAME_LENGTH - 2)}_3`].sort());
  assert.deepEqual(new ToolNameMap([dirty, squatter, clashing]).entries(), map.entries(), 'order-independent');
  for (const ref of [dirty, clashing, squatter]) {
    assert.deepEqual(map.resolve(map.publicName(ref.server, ref.tool) ?? ''), ref);
  }
});

const prefixRows: Array<{ value: string | undefined; expected: ToolPrefix | 'throws' }> = [
  { value: undefined, expected: 'mcp' },
  { value: '', expected: 'mcp' },
  { value: 'mcp', expected: 'mcp' },
  { value: ' MCP ', expected: 'mcp' },
  { value: 'none', expected: 'none' },
  { value: 'None', expected: 'none' },
  { value: 'off', expected: 'throws' },
  { value: 'false', expected: 'throws' },
  { value: 'mcp__', expected: 'throws' },
];

for (const row of prefixRows) {
  void test(`parseToolPrefix(${JSON.stringify(row.value)})`, () => {
    if (row.expected === 'throws') {
      assert.throws(
        () => parseToolPrefix(row.value),
        (err: unknown) =>
          err instanceof Error &&
          err.message.includes('DMCP_TOOL_PREFIX') &&
          err.message.includes(JSON.stringify(row.value)),
      );
    } else {
      assert.equal(parseToolPrefix(row.value), row.expected);
    }
  });
}

const describeRows: Array<{ server: string; description: string | undefined; expected: string }> = [
  { server: 'github', description: 'Create an issue.', expected: '[from MCP server "github"] Create an issue.' },
  { server: 'github', description: undefined, expected: '[from MCP server "github"]' },
  { server: 'github', description: '   ', expected: '[from MCP server "github"]' },
  { server: 'github', description: '  padded \n', expected: '[from MCP server "github"] padded' },
  { server: 'we"ird', description: 'x', expected: '[from MCP server "we\\"ird"] x' },
  {
    server: 'github',
    description: '[from MCP server "github"] Already tagged.',
    expected: '[from MCP server "github"] Already tagged.',
  },
  {
    server: 'gitlab',
    description: '[from MCP server "github"] Other tag.',
    expected: '[from MCP server "gitlab"] [from MCP server "github"] Other tag.',
  },
];

for (const row of describeRows) {
  void test(`describeTool(${JSON.stringify(row.server)}, ${JSON.stringify(row.description)})`, () => {
    const once = describeTool(row.server, row.description);
    assert.equal(once, row.expected);
    assert.equal(describeTool(row.server, once), once, 'idempotent');
  });
}
