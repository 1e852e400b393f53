import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallOutcome, ConfigRefs } from '../../contract/index.js';
import { MAX_SUMMARY_LENGTH, turnStaticDetails, turnSummary } from '../../contract/turnMetadata.js';
import {
  DETAILS_CALLS_SHOWN,
  describeWait,
  finishedCall,
  renderTurnDetails,
  type DetailsCall,
  type TurnDetailsView,
} from '../../workflows/details.js';

const SECRET = 'sk-live-4f9a0c1e7d2b';

function refs(fields: Partial<ConfigRefs> = {}): ConfigRefs {
  return { workspace: '/home/someone/project', mcpConfigFiles: [], inlineSpecs: [], ...fields };
}

function outcome(fields: Partial<CallOutcome> = {}): CallOutcome {
  return {
    status: 'ok',
    content: [{ type: 'text', text: `the token is ${SECRET}` }],
    isError: false,
    structuredContent: { token: SECRET },
    startedAt: '2026-01-01T00:00:00.000Z',
    durationMs: 5,
    attempts: 1,
    ...fields,
  };
}

function view(fields: Partial<TurnDetailsView> = {}): TurnDetailsView {
  return { phase: 'ready', open: [], finished: [], callsDone: 0, counts: { ok: 0, error: 0, cancelled: 0 }, ...fields };
}

const summaries: Array<{ name: string; sessionId: string; refs: ConfigRefs; expected: string }> = [
  { name: 'session only', sessionId: 's1', refs: refs(), expected: 'session s1' },
  {
    name: 'agent, inline names (never the command or its token), file and plugin names (never their folders)',
    sessionId: 's1',
    refs: refs({
      agent: 'support-bot',
      inlineSpecs: [`fs:npx server-filesystem --token ${SECRET}`, `remote:https://user:${SECRET}@example.com/mcp`],
      mcpConfigFiles: ['/home/someone/team/mcp.json'],
      plugins: ['/home/someone/plugins/notes'],
    }),
    expected: 'session s1 · agent support-bot · servers fs, remote, mcp.json, plugin notes',
  },
  {
    name: 'an inline spec without a server name is named by position',
    sessionId: 's1',
    refs: refs({ inlineSpecs: [`${SECRET} run`, '9lives:cmd'] }),
    expected: 'session s1 · servers --mcp #1, --mcp #2',
  },
];

for (const row of summaries) {
  test(`turnSummary: ${row.name}`, () => {
    assert.equal(turnSummary(row.sessionId, row.refs), row.expected);
  });
}

test('turnSummary is bounded for the list column', () => {
  const many = refs({ inlineSpecs: Array.from({ length: 40 }, (_, i) => `server${i}:cmd`) });
  const text = turnSummary('s1', many);
  assert.equal(text.length, MAX_SUMMARY_LENGTH);
  assert.ok(text.endsWith('…'));
});

test('turnStaticDetails names the drive mode and the references by name only', () => {
  const text = turnStaticDetails(
    's1',
    refs({ agent: 'a1', inlineSpecs: [`fs:cmd --key ${SECRET}`], mcpConfigFiles: ['/home/someone/x/team.json'] }),
    3,
  );
  assert.match(text, /batch of 3 calls/);
  assert.equal(text.split('  \n')[1], 'session `s1` · agent `a1`');
  assert.match(text, /servers given inline: `fs`/);
  assert.match(text, /config files: `team.json`/);
  assert.ok(!text.includes(SECRET));
  assert.ok(!text.includes('/home/someone'));
});

const calls: Array<{ name: string; row: DetailsCall; expected: string }> = [
  { name: 'ok', row: finishedCall('c1', 'mcp__fs__read', outcome()), expected: '- `c1` `mcp__fs__read` **ok**' },
  {
    name: 'tool error',
    row: finishedCall('c1', 'mcp__fs__read', outcome({ isError: true })),
    expected: '- `c1` `mcp__fs__read` **ok · tool error**',
  },
  {
    name: 'error with its kind, never its message',
    row: finishedCall(
      'c1',
      't',
      outcome({ status: 'error', errorKind: 'timeout', errorMessage: `timed out reading ${SECRET}`, attempts: 3 }),
    ),
    expected: '- `c1` `t` **error · timeout** · attempt 3',
  },
  {
    name: 'cancelled',
    row: finishedCall('c1', 't', outcome({ status: 'error', errorKind: 'cancelled' })),
    expected: '- `c1` `t` **cancelled**',
  },
  { name: 'running', row: { id: 'c2', name: 't', status: 'running', attempt: 1 }, expected: '- `c2` `t` **running**' },
  {
    name: 'waiting for a form answer: field names, never the message',
    row: {
      id: 'c3',
      name: 't',
      status: 'waiting',
      attempt: 1,
      input: { requestId: 'r1', mode: 'form', fields: ['name', 'email'] },
    },
    expected: '- `c3` `t` **waiting** · waiting for input: form asking for `name`, `email` (request `r1`)',
  },
  {
    name: 'waiting for a URL-mode answer: never the URL',
    row: { id: 'c3', name: 't', status: 'waiting', attempt: 2, input: { requestId: 'r2', mode: 'url' } },
    expected: '- `c3` `t` **waiting** · attempt 2 · waiting for input: a page to open (URL mode) (request `r2`)',
  },
  {
    name: 'waiting on a task',
    row: { id: 'c4', name: 't', status: 'waiting', attempt: 1, task: { taskId: 'task-9', status: 'working' } },
    expected: '- `c4` `t` **waiting** · task `task-9` `working`',
  },
  {
    name: 'a caller-chosen ID cannot break out of its code span or its line',
    row: { id: 'a`b\nc', name: 't', status: 'running', attempt: 0 },
    expected: '- `a?b?c` `t` **running**',
  },
];

for (const row of calls) {
  test(`call row: ${row.name}`, () => {
    const text = renderTurnDetails(view({ open: [row.row], callsDone: 0 }));
    assert.equal(text.split('\n').at(-1), row.expected);
  });
}

test('describeWait names at most a few fields', () => {
  const fields = Array.from({ length: 12 }, (_, i) => `f${i}`);
  assert.match(describeWait({ input: { requestId: 'r', mode: 'form', fields } })!, /`f7` and 4 more/);
  assert.equal(describeWait({}), undefined);
});

test('the details show servers with state and era, and counts', () => {
  const text = renderTurnDetails(
    view({
      servers: [
        { name: 'fs', state: 'ready', era: 'legacy' },
        { name: 'web', state: 'failed' },
      ],
      finished: [finishedCall('c1', 'mcp__fs__read', outcome())],
      callsDone: 1,
      counts: { ok: 1, error: 0, cancelled: 0 },
      callsBefore: 500,
    }),
  );
  assert.equal(
    text,
    [
      '**Turn** ready · **Servers** `fs` ready (legacy), `web` failed',
      '',
      '**Calls** · 0 running · 1 done (1 ok, 0 error, 0 cancelled) · 500 in earlier runs',
      '',
      '- `c1` `mcp__fs__read` **ok**',
    ].join('\n'),
  );
});

test('phases: not reconciled, MCP off, ended', () => {
  assert.match(
    renderTurnDetails(view({ phase: 'starting' })),
    /^\*\*Turn\*\* starting · \*\*Servers\*\* not reconciled yet\n/,
  );
  assert.match(renderTurnDetails(view({ mcpOff: true, servers: [] })), /MCP is off on the worker/);
  assert.match(renderTurnDetails(view({ servers: [] })), /\*\*Servers\*\* none/);
  const many = Array.from({ length: 15 }, (_, i) => ({ name: `s${i}`, state: 'ready' as const }));
  assert.match(renderTurnDetails(view({ servers: many })), /`s11` ready and 3 more\n/);
  assert.match(renderTurnDetails(view({ phase: 'ended', endedBy: 'idle' })), /^\*\*Turn\*\* ended \(idle\)/);
});

test('a turn of 1000 calls shows the newest rows and counts the rest', () => {
  const finished = Array.from({ length: 1000 }, (_, i) => finishedCall(`c${i}`, 't', outcome()));
  const open: DetailsCall[] = [{ id: 'o1', name: 't', status: 'running', attempt: 1 }];
  const text = renderTurnDetails(
    view({ open, finished, callsDone: 1000, counts: { ok: 1000, error: 0, cancelled: 0 } }),
  );
  const rows = text.split('\n').filter((l) => l.startsWith('- `'));
  assert.equal(rows.length, DETAILS_CALLS_SHOWN);
  assert.equal(rows[0], '- `o1` `t` **running**');
  assert.equal(rows[1], '- `c999` `t` **ok**');
  assert.match(text, /- … and 981 earlier calls not shown$/);
  assert.ok(text.length < 2000, `bounded: ${text.length} characters`);
});

test('no argument, result, error message or input message value ever appears', () => {
  const finished = [
    finishedCall('c1', 'mcp__fs__read', outcome()),
    finishedCall(
      'c2',
      'mcp__fs__read',
      outcome({ status: 'error', errorKind: 'transport', errorMessage: SECRET, content: [] }),
    ),
    finishedCall('c3', 'mcp__fs__read', outcome({ isError: true })),
  ];
  const text = renderTurnDetails(view({ finished, callsDone: 3, counts: { ok: 2, error: 1, cancelled: 0 } }));
  assert.ok(!text.includes(SECRET), text);
  assert.ok(!text.includes('sk-live'), text);
});

test('a run made by continue-as-new carries the summary line it has no static summary for', () => {
  const text = renderTurnDetails(view({ continuedSummary: 'session s1 · servers fs', callsBefore: 2 }));
  assert.equal(
    text.split('\n').slice(0, 3).join('\n'),
    '**Turn** ready · **Servers** not reconciled yet  \nsession s1 · servers fs · continued from an earlier run\n',
  );
});

test("a model turn's details name the model and count its steps, never its text", () => {
  const text = renderTurnDetails(view({ model: { name: 'local', steps: 3, lastCalls: 2 } }));
  assert.equal(
    text.split('\n').slice(0, 4).join('\n'),
    '**Turn** ready · **Servers** not reconciled yet\n\n**Model** `local` · 3 steps · the latest asked for 2 calls\n',
  );
});
