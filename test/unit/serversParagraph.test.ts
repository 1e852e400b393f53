import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderServersParagraph } from '../../shaping/index.js';
import type { ServerStatus, TurnStatus } from '../../contract/index.js';

const HEADER = 'MCP servers for this turn (this list is current; ignore MCP server lists from earlier turns):';

function server(name: string, fields: Partial<ServerStatus> = {}): ServerStatus {
  return {
    name,
    layer: 'explicit',
    source: 'mcp.json',
    transport: 'stdio',
    state: 'ready',
    tools: [],
    warnings: [],
    ...fields,
  };
}

function status(servers: ServerStatus[], fields: Partial<TurnStatus> = {}): TurnStatus {
  return { mcp: 'on', servers, warnings: [], reportedAt: '2025-01-01T00:00:00.000Z', ...fields };
}

const longError = `boom ${'x'.repeat(300)}`;

const rows: Array<{ name: string; status: TurnStatus; expected: string[] }> = [
  {
    name: 'all ready, sorted by name',
    status: status([
      server('memory', { tools: ['mcp__memory__read_graph', 'mcp__memory__create_entities'] }),
      server('everything', { tools: ['mcp__everything__echo'] }),
    ]),
    expected: [
      HEADER,
      '- everything: connected, 1 tool, named mcp__everything__*',
      '- memory: connected, 2 tools, named mcp__memory__*',
    ],
  },
  {
    name: 'none prefix is read from the tool names',
    status: status([server('github', { tools: ['github__a', 'github__b'] })]),
    expected: [HEADER, '- github: connected, 2 tools, named github__*'],
  },
  {
    name: 'ready with no tools',
    status: status([server('quiet')]),
    expected: [HEADER, '- quiet: connected, no tools'],
  },
  {
    name: 'one failed with HTTP 401',
    status: status([
      server('github', { transport: 'http', state: 'failed', error: 'HTTP 401: unauthorized' }),
      server('everything', { tools: ['mcp__everything__echo'] }),
    ]),
    expected: [
      HEADER,
      '- everything: connected, 1 tool, named mcp__everything__*',
      '- github: not available, failed to start or answer: HTTP 401: unauthorized',
    ],
  },
  {
    name: 'a shelf server that wants a login says who must act',
    status: status([
      server('linear', {
        layer: 'shelf',
        transport: 'http',
        state: 'failed',
        login: 'wanted',
        error: 'wants an account first: durable-mcp mcp login linear',
      }),
    ]),
    expected: [
      HEADER,
      '- linear: not available until its operator logs in: wants an account first: durable-mcp mcp login linear',
    ],
  },
  {
    name: 'a failed refresh is passing: the model is not told to wait for a login',
    status: status([
      server('linear', {
        layer: 'shelf',
        transport: 'http',
        state: 'failed',
        login: 'refresh_failed',
        error: 'could not refresh its login (fetch failed); tried again next turn, or durable-mcp mcp login linear',
      }),
    ]),
    expected: [
      HEADER,
      '- linear: not available this turn: could not refresh its login (fetch failed); tried again next turn, or durable-mcp mcp login linear',
    ],
  },
  {
    name: 'failed with a multi-line, long error',
    status: status([server('bad', { state: 'failed', error: `line one\n  line two\r\n${longError}` })]),
    expected: [
      HEADER,
      `- bad: not available, failed to start or answer: ${`line one line two ${longError}`.slice(0, 199)}…`,
    ],
  },
  {
    name: 'failed without a reason',
    status: status([server('bad', { state: 'failed' })]),
    expected: [HEADER, '- bad: not available, failed to start or answer: no reason given'],
  },
  {
    name: 'degraded with a warning',
    status: status([
      server('fs', {
        state: 'degraded',
        tools: ['mcp__fs__read_file'],
        warnings: ['tool "write_file" listed in "tools" is not offered by the server'],
      }),
    ]),
    expected: [
      HEADER,
      '- fs: connected, 1 tool, named mcp__fs__*; warning: tool "write_file" listed in "tools" is not offered by the server',
    ],
  },
  {
    name: 'degraded with many warnings',
    status: status([
      server('fs', { state: 'degraded', tools: ['mcp__fs__a'], warnings: ['w1', 'w2\nsecond line', 'w3', 'w4', 'w5'] }),
    ]),
    expected: [HEADER, '- fs: connected, 1 tool, named mcp__fs__*; warnings: w1; w2 second line; w3 (+2 more)'],
  },
  {
    name: 'disabled',
    status: status([server('old', { state: 'disabled' }), server('a', { tools: ['mcp__a__t'] })]),
    expected: [HEADER, '- a: connected, 1 tool, named mcp__a__*', '- old: disabled in the configuration'],
  },
  {
    name: 'tool names that do not share the server prefix are listed',
    status: status([server('p', { tools: ['mcp__p__b', `mcp__${'q'.repeat(50)}_0123abcd`] })]),
    expected: [HEADER, `- p: connected, 2 tools: mcp__p__b, mcp__${'q'.repeat(50)}_0123abcd`],
  },
  {
    name: 'MCP off',
    status: status([], { mcp: 'off' }),
    expected: ['MCP is off for this turn: there are no MCP servers and no MCP tools.'],
  },
  {
    name: 'MCP off ignores any listed servers',
    status: status([server('x', { state: 'off' })], { mcp: 'off' }),
    expected: ['MCP is off for this turn: there are no MCP servers and no MCP tools.'],
  },
  {
    name: 'empty',
    status: status([]),
    expected: ['There are no MCP servers for this turn, so there are no MCP tools.'],
  },
];

for (const row of rows) {
  void test(`renderServersParagraph: ${row.name}`, () => {
    const text = renderServersParagraph(row.status);
    assert.equal(text, row.expected.join('\n'));
    assert.equal(renderServersParagraph(structuredClone(row.status)), text, 'deterministic');
    const reversed = { ...row.status, servers: [...row.status.servers].reverse() };
    assert.equal(renderServersParagraph(reversed), text, 'independent of server order');
    for (const line of text.split('\n')) assert.ok(line.length <= 400, `line too long: ${line.length}`);
  });
}

void test('renderServersParagraph: does not mutate its input', () => {
  const input = status([server('b', { tools: ['mcp__b__y', 'mcp__b__x'] }), server('a')]);
  const copy = structuredClone(input);
  renderServersParagraph(input);
  assert.deepEqual(input, copy);
});
