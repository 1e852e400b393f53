import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Payload } from '@temporalio/common';
import { isStoredReference as isReferencePayload } from '../../payloads/decodePayload.js';
import { TurnClient } from '../../client/turnClient.js';
import { startCodecServer, type CodecServer } from '../../payloads/codecServer.js';
import { createDataConverter } from '../../payloads/dataConverter.js';
import type { RunningWorker } from '../../worker/index.js';
import { bigText, fakePng } from '../fixtures/bigServer.js';
import { startHarness, tempDir } from '../support/harness.js';
import { textOf, dataOf } from '../support/content.js';

const bigServer = fileURLToPath(new URL('../fixtures/bigServer.js', import.meta.url));
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** Every payload object in a raw (not decoded) history, with where it was. */
function payloadsOf(node: unknown, out: Payload[] = [], paths: string[] = [], path = ''): Payload[] {
  if (Array.isArray(node)) node.forEach((n, i) => payloadsOf(n, out, paths, `${path}[${i}]`));
  else if (typeof node === 'object' && node !== null && !(node instanceof Uint8Array)) {
    const v = node as { data?: unknown; metadata?: unknown };
    if (v.data instanceof Uint8Array && typeof v.metadata === 'object') {
      out.push(v as Payload);
      paths.push(path);
    } else Object.entries(node).forEach(([k, n]) => payloadsOf(n, out, paths, `${path}.${k}`));
  }
  return out;
}

interface Setup {
  client: TurnClient;
  worker: RunningWorker;
  payloadDir: string;
  /** The turn workspace (exists; the payload dir appears on the first store). */
  workspace: string;
  stop(): Promise<void>;
}

async function setup(name: string, encryptionKey?: string): Promise<Setup> {
  const dir = await tempDir();
  const payloadDir = join(dir, 'payloads');
  const dataConverter = createDataConverter({ payloadDir, encryptionKey });
  const { client, worker, stop } = await startHarness(name, {}, { dataConverter });
  return {
    client,
    worker,
    payloadDir,
    workspace: dir,
    stop,
  };
}

const spec = () => `big:${process.execPath} ${bigServer}`;

describe('big payloads go to external storage; history keeps references', () => {
  let s: Setup;
  before(async () => {
    s = await setup('payloads');
  });
  after(async () => {
    await s?.stop();
  });

  test('a 10 MB image and 3 MB of text do not fail the turn, and come back intact', async () => {
    const result = await s.client.runBatch({
      sessionId: `big-${Date.now()}`,
      workspace: s.workspace,
      servers: { inlineSpecs: [spec()] },
      calls: [
        [{ id: 'img', name: 'mcp__big__image', arguments: { bytes: 10 * 1024 * 1024, seed: 'a' } }],
        [{ id: 'txt', name: 'mcp__big__text', arguments: { bytes: 3 * 1024 * 1024, seed: 'b' } }],
      ],
    });
    const [img, txt] = result.calls;
    assert.equal(img?.outcome.status, 'ok', JSON.stringify(img?.outcome.errorMessage));
    assert.equal(
      sha(Buffer.from(String(dataOf(img.outcome.content[0])), 'base64')),
      sha(fakePng(10 * 1024 * 1024, 'a')),
    );
    assert.equal(txt?.outcome.status, 'ok');
    assert.equal(sha(String(textOf(txt.outcome.content[0]))), sha(bigText(3 * 1024 * 1024, 'b')));

    const raw = await s.client.client.workflow.getHandle(result.turnId).fetchHistory();
    const payloads = payloadsOf(raw);
    const references = payloads.filter((p) => isReferencePayload(p));
    assert.ok(references.length >= 2, `expected external references in history, found ${references.length}`);
    const largest = Math.max(...payloads.map((p) => p.data?.byteLength ?? 0));
    assert.ok(largest < 256 * 1024, `every payload in history is under Temporal's 256 KB warning (largest ${largest})`);
    assert.ok((await readdir(s.payloadDir)).length >= 2, 'the payloads are on disk');

    const transcript = await s.client.transcript(result.turnId);
    const recorded = transcript.calls.find((c) => c.id === 'img')?.outcome?.content[0];
    assert.equal(
      sha(Buffer.from(String(dataOf(recorded)), 'base64')),
      sha(fakePng(10 * 1024 * 1024, 'a')),
      'the transcript reads the image back',
    );
  });

  test('200 calls of 100 KB each stay far below the history limits', async () => {
    const calls = Array.from({ length: 200 }, (_, i) => [
      { id: `c${i}`, name: 'mcp__big__text', arguments: { bytes: 100 * 1024, seed: `s${i}` } },
    ]);
    const result = await s.client.runBatch({
      sessionId: `many-${Date.now()}`,
      workspace: s.workspace,
      servers: { inlineSpecs: [spec()] },
      calls,
    });
    assert.equal(result.calls.filter((c) => c.outcome.status === 'ok').length, 200);
    const raw = await s.client.client.workflow.getHandle(result.turnId).fetchHistory();
    const events = raw.events?.length ?? 0;
    const bytes = payloadsOf(raw).reduce((n, p) => n + (p.data?.byteLength ?? 0), 0);
    process.stderr.write(`200 x 100 KB calls: ${events} events, ${bytes} payload bytes in history\n`);
    assert.ok(events < 10_240 / 4, `${events} events`);
    assert.ok(bytes < 2 * 1024 * 1024, `${bytes} bytes of payloads in history (Temporal warns at 10 MB)`);
  });
});

describe('encryption: with DMCP_ENCRYPTION_KEY the raw history holds no plaintext', () => {
  let s: Setup;
  let codec: CodecServer;
  const key = randomBytes(32).toString('base64');
  before(async () => {
    s = await setup('encrypted', key);
  });
  after(async () => {
    await codec?.close();
    await s?.stop();
  });

  test('tool results are unreadable in raw history, readable through the transcript and the codec server', async () => {
    const marker = `plaintext-marker-${randomBytes(8).toString('hex')}`;
    const result = await s.client.runBatch({
      sessionId: `enc-${Date.now()}`,
      workspace: s.workspace,
      servers: { inlineSpecs: [spec()] },
      calls: [
        [{ id: 'e1', name: 'mcp__big__secret_echo', arguments: { text: marker } }],
        [{ id: 'e2', name: 'mcp__big__text', arguments: { bytes: 300 * 1024, seed: marker } }],
        [{ id: 'e3', name: 'mcp__big__read_echo', arguments: { text: marker } }],
      ],
    });
    assert.equal(textOf(result.calls[0]?.outcome.content[0]), marker);
    assert.equal(textOf(result.calls[2]?.outcome.content[0]), marker);

    const raw = await s.client.client.workflow.getHandle(result.turnId).fetchHistory();
    const paths: string[] = [];
    const payloads = payloadsOf(raw, [], paths);
    payloads.forEach((p, i) => {
      const bytes = Buffer.from(p.data ?? new Uint8Array());
      assert.ok(!bytes.includes(marker), `payload at ${paths[i]} holds the plaintext`);
      const encoding = Buffer.from(p.metadata?.encoding ?? new Uint8Array()).toString();
      // Search attributes stay plain by design: the server indexes them. Nothing else may.
      if (paths[i]!.includes('searchAttributes')) return;
      // A patch marker's data is written by the SDK's core, outside the data converter, and holds
      // only the patch ID (a name in the workflow code).
      if (paths[i]!.includes('markerRecordedEventAttributes.details.patch-data')) {
        assert.match(bytes.toString(), /^\{"id":"[a-z-]+","deprecated":(true|false)\}$/, `patch marker ${paths[i]}`);
        return;
      }
      // A local activity marker's data (the fast path) is the SDK core's too: its sequence number,
      // attempt, type and times. The call's arguments are not in the marker; its result is, encrypted.
      if (paths[i]!.includes('markerRecordedEventAttributes.details.data')) {
        const data = JSON.parse(bytes.toString()) as Record<string, unknown>;
        assert.deepEqual(
          Object.keys(data).filter(
            (k) =>
              ![
                'seq',
                'attempt',
                'activity_id',
                'activity_type',
                'complete_time',
                'backoff',
                'original_schedule_time',
              ].includes(k),
          ),
          [],
          `local activity marker ${paths[i]}`,
        );
        assert.ok(
          ['callToolLocal', 'workerInfo'].includes(String(data.activity_type)),
          `local activity marker ${paths[i]}: ${String(data.activity_type)}`,
        );
        return;
      }
      assert.ok(encoding === 'binary/dmcp-aes256gcm' || isReferencePayload(p), `payload at ${paths[i]} is ${encoding}`);
    });
    for (const file of await readdir(s.payloadDir)) {
      const { readFile } = await import('node:fs/promises');
      assert.ok(
        !(await readFile(join(s.payloadDir, file))).includes(marker.slice(0, 16)),
        'external files are encrypted too',
      );
    }
    const transcript = await s.client.transcript(result.turnId);
    assert.equal(textOf(transcript.calls.find((c) => c.id === 'e1')?.outcome?.content[0]), marker);
    assert.ok(
      paths.some((p) => p.includes('markerRecordedEventAttributes.details.result')),
      "the read-only call's result is in a local activity marker",
    );
    assert.equal(textOf(transcript.calls.find((c) => c.id === 'e3')?.outcome?.content[0]), marker);

    const converter = s.client.client.options.loadedDataConverter;
    codec = await startCodecServer({ codecs: converter.payloadCodecs, externalStorage: converter.externalStorage });
    const encrypted = payloads.find(
      (p) => Buffer.from(p.metadata?.encoding ?? new Uint8Array()).toString() === 'binary/dmcp-aes256gcm',
    )!;
    const body = {
      payloads: [
        {
          metadata: Object.fromEntries(
            Object.entries(encrypted.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')]),
          ),
          data: Buffer.from(encrypted.data!).toString('base64'),
        },
      ],
    };
    const res = await fetch(`${codec.url}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://127.0.0.1:8233', 'x-namespace': 'default' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), 'http://127.0.0.1:8233');
    const decoded = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    assert.equal(Buffer.from(decoded.payloads[0]!.metadata.encoding!, 'base64').toString(), 'json/plain');
  });
});
