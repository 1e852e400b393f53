import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallOutcome, TurnInput } from '../../contract/index.js';
import { DETAILS_CALLS_SHOWN } from '../../workflows/details.js';
import { DetailsBoard } from '../../workflows/detailsBoard.js';

const input: TurnInput = { sessionId: 's1', refs: { workspace: '/w', mcpConfigFiles: [], inlineSpecs: ['fs:cmd'] } };
const ok: CallOutcome = {
  status: 'ok',
  content: [{ type: 'text', text: 'secret-result' }],
  isError: false,
  startedAt: '',
  durationMs: 1,
  attempts: 1,
};

function board(): { board: DetailsBoard; shown: string[] } {
  const shown: string[] = [];
  return { board: new DetailsBoard((text) => shown.push(text)), shown };
}

test('a call waits for input, is answered, runs again and ends: each step is shown', () => {
  const { board: b, shown } = board();
  b.servers({
    mcp: 'on',
    servers: [
      {
        name: 'fs',
        layer: 'inline',
        source: '--mcp #1',
        transport: 'stdio',
        state: 'ready',
        tools: [],
        warnings: [],
        era: 'modern',
      },
    ],
    warnings: [],
    reportedAt: '',
  });
  b.ready(input);
  b.callStarted('c1', 'mcp__fs__write');
  b.callAttempt('c1');
  const before = shown.length;
  b.callWaitsForInput('c1', { requestId: 'r1', mode: 'form', fields: ['path'] });
  assert.equal(shown.length, before + 1);
  assert.match(
    shown.at(-1)!,
    /- `c1` `mcp__fs__write` \*\*waiting\*\* · waiting for input: form asking for `path` \(request `r1`\)/,
  );
  assert.match(shown.at(-1)!, /0 running · 1 waiting · 0 done/);
  b.callWaitsForInput('c1', undefined);
  b.callAttempt('c1');
  assert.match(shown.at(-1)!, /- `c1` `mcp__fs__write` \*\*running\*\* · attempt 2$/);
  b.callWaitsOnTask('c1', { taskId: 't1', status: 'working' });
  assert.match(shown.at(-1)!, /\*\*waiting\*\* · attempt 2 · task `t1` `working`/);
  b.callEnded('c1', 'mcp__fs__write', { ...ok, attempts: 2 });
  b.ended('endTurn');
  assert.match(shown.at(-1)!, /^\*\*Turn\*\* ended \(endTurn\) · \*\*Servers\*\* `fs` ready \(modern\)/);
  assert.match(shown.at(-1)!, /- `c1` `mcp__fs__write` \*\*ok\*\* · attempt 2$/);
  assert.ok(shown.every((t) => !t.includes('secret-result')));
});

test("a first attempt shows nothing new; a call ended by the turn's cancellation shows as cancelled", () => {
  const { board: b, shown } = board();
  b.callStarted('c1', 't');
  const before = shown.length;
  b.callAttempt('c1');
  assert.equal(shown.length, before);
  b.callEnded('c1', 't', undefined);
  assert.match(shown.at(-1)!, /1 done \(0 ok, 0 error, 1 cancelled\)\n\n- `c1` `t` \*\*cancelled\*\*$/);
});

test('the board keeps only the rows it shows, however many calls the turn has', () => {
  const { board: b, shown } = board();
  for (let i = 0; i < 1000; i += 1) {
    b.callStarted(`c${i}`, 't');
    b.callEnded(`c${i}`, 't', ok);
  }
  const last = shown.at(-1)!;
  assert.equal(last.split('\n').filter((l) => l.startsWith('- `')).length, DETAILS_CALLS_SHOWN);
  assert.match(last, /1000 done \(1000 ok/);
  assert.match(last, /- … and 980 earlier calls not shown$/);
});
