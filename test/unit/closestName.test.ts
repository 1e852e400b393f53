import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closestName, editDistance } from '../../contract/index.js';
import { unknownToolOutcome } from '../../workflows/failures.js';

const tools = ['mcp__everything__echo', 'mcp__everything__add', 'mcp__fixture__echo', 'mcp__fixture__sleep'];

const cases: { name: string; meant: string | undefined; why: string }[] = [
  { name: 'MCP__everything__Echo', meant: 'mcp__everything__echo', why: 'another case' },
  { name: 'sleep', meant: 'mcp__fixture__sleep', why: 'the tool without its server, one server has it' },
  { name: 'echo', meant: undefined, why: 'two servers have that tool: no guess' },
  { name: 'mcp__everything__ecko', meant: 'mcp__everything__echo', why: 'one edit' },
  { name: 'mcp__fixture__slep', meant: 'mcp__fixture__sleep', why: 'one edit' },
  { name: 'mcp__everythin__add', meant: 'mcp__everything__add', why: 'one edit in the server' },
  { name: 'mcp__other__echo', meant: undefined, why: 'too far from every name' },
  { name: 'mcp__fixture__ech', meant: 'mcp__fixture__echo', why: "nearer than the other server's echo" },
];

for (const c of cases)
  void test(`closestName(${JSON.stringify(c.name)}): ${c.why}`, () => {
    assert.equal(closestName(c.name, tools), c.meant);
  });

void test('editDistance counts single-character edits', () => {
  assert.equal(editDistance('', ''), 0);
  assert.equal(editDistance('comand', 'command'), 1);
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('abc', ''), 3);
});

void test('an unknown tool outcome names the tool it most likely meant, and only then', () => {
  const near = unknownToolOutcome('mcp__everything__ecko', tools);
  assert.equal(near.errorKind, 'bad_request');
  assert.equal(
    near.errorMessage,
    'unknown tool "mcp__everything__ecko": it is not in this turn\'s tool list (did you mean "mcp__everything__echo"?)',
  );
  const far = unknownToolOutcome('nothing_like_it', tools);
  assert.equal(far.errorMessage, 'unknown tool "nothing_like_it": it is not in this turn\'s tool list');
});
