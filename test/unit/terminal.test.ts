import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stripTerminalControls, terminalJson } from '../../text/terminal.js';
import type { Transcript } from '../../client/transcript.js';
import { renderTranscript } from '../../client/transcriptText.js';

/** ESC, BEL or the 8-bit CSI: any of them in printed output could drive a terminal. */
const hasTerminalControl = (s: string) => /[\u001b\u0007\u009b]/.test(s); // eslint-disable-line no-control-regex

const rows: [name: string, input: string, expected: string][] = [
  ['plain text stays', 'hello\tworld\nnext line', 'hello\tworld\nnext line'],
  ['colour (CSI SGR)', '\u001b[31mred\u001b[0m', 'red'],
  ['cursor up and erase line: rewriting earlier output', 'ok\u001b[1A\u001b[2Kfake line', 'okfake line'],
  ['window title (OSC ... BEL)', '\u001b]0;pwned\u0007title', 'title'],
  ['clipboard write (OSC 52 ... ST)', '\u001b]52;c;ZXZpbA==\u001b\\after', 'after'],
  ['hyperlink (OSC 8)', '\u001b]8;;http://evil\u001b\\link\u001b]8;;\u001b\\', 'link'],
  ['device control string', '\u001bPq#0;2;0;0;0\u001b\\x', 'x'],
  ['8-bit CSI', '\u009b2Jcleared', 'cleared'],
  ['bare ESC and two-char sequences', 'a\u001bcb\u001b', 'ab'],
  ['other C0 controls, carriage return and DEL', 'a\u0007b\rc\u0000d\u007fe', 'abcde'],
  ['unicode text stays', 'héllo → 世界 🙂', 'héllo → 世界 🙂'],
];
for (const [name, input, expected] of rows) {
  void test(`stripTerminalControls: ${name}`, () => assert.equal(stripTerminalControls(input), expected));
}

test('a rendered transcript carries no escape sequence from a server', () => {
  const evil = '\u001b]0;title\u0007\u001b[2J\u001b[1;1Hgood';
  const t: Transcript = {
    turnId: 's/turn-1',
    sessionId: 's',
    tools: [{ name: 'mcp__x__t', server: 'x', tool: 't', description: evil, inputSchema: {} }],
    status: {
      mcp: 'on',
      reportedAt: '2026-01-01T00:00:00.000Z',
      warnings: [evil],
      servers: [
        {
          name: 'x',
          layer: 'inline',
          source: '--mcp #1',
          transport: 'stdio',
          state: 'failed',
          tools: [],
          error: evil,
          warnings: [evil],
        },
      ],
    },
    calls: [
      {
        id: 'c1',
        name: 'mcp__x__t',
        arguments: { a: evil },
        failures: [evil],
        outcome: {
          status: 'ok',
          isError: false,
          content: [{ type: 'text', text: evil }],
          startedAt: '',
          durationMs: 1,
          attempts: 1,
        },
      },
    ],
    state: 'completed',
    failure: evil,
  };
  const out = renderTranscript(t);
  assert.ok(out.includes('good'), out);
  assert.ok(!hasTerminalControl(out), out);
});

test('terminalJson: JSON for a terminal escapes what JSON.stringify lets through (DEL, C1, bidi, line separators)', () => {
  const value = {
    text: 'a\u009b2Jb\u0085c\u007f\u202eevil\u2066\u2069\u200e\u061c\u2028\u2029',
    plain: 'héllo → 世界 🙂',
    n: 1,
  };
  const out = terminalJson(value, 2);
  assert.ok(!/[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(out), out);
  assert.ok(out.includes('\\u009b2J') && out.includes('\\u202e'), out);
  assert.deepEqual(JSON.parse(out), value, 'the same JSON');
  assert.equal(terminalJson({ a: [1] }), JSON.stringify({ a: [1] }));
});
