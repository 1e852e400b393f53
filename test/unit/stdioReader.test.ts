import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LineReader } from '../../mcp/stdioTransport.js';

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
