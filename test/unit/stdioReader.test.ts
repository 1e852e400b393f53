import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LineReader, readMessage } from '../../mcp/stdioTransport.js';

/** A reader that records its lines and counts the bytes it searched and copied. */
function counting(maxLineBytes = 128 * 1024 * 1024) {
  const lines: string[] = [];
  const work = { scanned: 0, copied: 0, overflows: 0 };
  const reader = new LineReader({
    maxLineBytes,
    onLine: (line) => lines.push(line),
    onOverflow: () => {
      work.overflows += 1;
    },
    onWork: ({ scanned, copied }) => {
      work.scanned += scanned;
      work.copied += copied;
    },
  });
  return { reader, lines, work };
}

function feed(reader: LineReader, data: Buffer, chunkBytes: number): void {
  for (let at = 0; at < data.length; at += chunkBytes) reader.push(data.subarray(at, at + chunkBytes));
}

test('a 32 MiB line in 64 KiB chunks costs work proportional to its size, not to its size squared', () => {
  // Quadratic reading (joining and searching the whole pending line per chunk) blocked the event
  // loop for seconds on such a line, starving heartbeats; the bound is on work, not on time.
  const size = 32 * 1024 * 1024;
  const data = Buffer.alloc(size + 1, 0x61);
  data[size] = 0x0a;
  const { reader, lines, work } = counting();
  feed(reader, data, 64 * 1024);
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.length, size);
  assert.ok(work.scanned <= 2 * data.length, `searched ${work.scanned} bytes for ${data.length} bytes of input`);
  assert.ok(work.copied <= 2 * data.length, `copied ${work.copied} bytes for ${data.length} bytes of input`);
  assert.equal(work.overflows, 0);
});

test('lines split anywhere across chunks come out whole, in order, without their \\r\\n', () => {
  const text = 'first\r\nsecond\n\nthird line ü\nfourth';
  for (const chunkBytes of [1, 2, 3, 5, 64]) {
    const { reader, lines } = counting();
    feed(reader, Buffer.from(text, 'utf8'), chunkBytes);
    assert.deepEqual(lines, ['first', 'second', '', 'third line ü'], `chunks of ${chunkBytes}`);
    reader.push(Buffer.from('\n'));
    assert.deepEqual(lines.at(-1), 'fourth', 'the unfinished line is kept until its newline comes');
  }
});

test('a line longer than the limit is dropped and reported once; the reader goes on afterwards', () => {
  const { reader, lines, work } = counting(1000);
  feed(reader, Buffer.alloc(1500, 0x62), 100);
  assert.equal(work.overflows, 1);
  reader.push(Buffer.from('\nok\n'));
  assert.deepEqual(lines.at(-1), 'ok');
  assert.ok(!lines.some((l) => l.length > 1000), 'no line over the limit is delivered');
});

test('a line over the limit that ends inside one chunk is refused too', () => {
  const { reader, lines, work } = counting(10);
  reader.push(Buffer.from(`${'x'.repeat(8)}`));
  reader.push(Buffer.from(`${'x'.repeat(8)}\nshort\n`));
  assert.equal(work.overflows, 1);
  assert.deepEqual(lines, ['short']);
});

const messages: [string, string, unknown][] = [
  [
    'a plain result, taken as it is',
    '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}',
    { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'hi' }] } },
  ],
  ['a result with a string id', '{"jsonrpc":"2.0","id":"a","result":{}}', { jsonrpc: '2.0', id: 'a', result: {} }],
  [
    'a result with _meta, through the schema',
    '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"k":1},"x":2}}',
    { jsonrpc: '2.0', id: 1, result: { _meta: { k: 1 }, x: 2 } },
  ],
  [
    'a notification',
    '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}',
    { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 2 } },
  ],
  [
    'a request from the server',
    '{"jsonrpc":"2.0","id":3,"method":"roots/list"}',
    { jsonrpc: '2.0', id: 3, method: 'roots/list' },
  ],
  [
    'an error',
    '{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}',
    { jsonrpc: '2.0', id: 4, error: { code: -32601, message: 'no' } },
  ],
];
for (const [name, line, expected] of messages) {
  test(`readMessage: ${name}`, () => assert.deepEqual(readMessage(line), expected));
}

const refused: [string, string][] = [
  ['not JSON', 'Starting server...'],
  ['a fractional id', '{"jsonrpc":"2.0","id":1.5,"result":{}}'],
  ['a result that is not an object', '{"jsonrpc":"2.0","id":1,"result":"done"}'],
  ['another JSON-RPC version', '{"jsonrpc":"1.0","id":1,"result":{}}'],
  ['an extra key beside the result', '{"jsonrpc":"2.0","id":1,"result":{},"extra":true}'],
  ['an array', '[{"jsonrpc":"2.0","id":1,"result":{}}]'],
];
for (const [name, line] of refused) {
  test(`readMessage refuses ${name}, as the SDK's schema does`, () => assert.throws(() => readMessage(line)));
}
