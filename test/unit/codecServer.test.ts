/**
 * The codec server over real HTTP on 127.0.0.1, and the payload store's file modes. The codec
 * server runs in the worker's process: anything it accepts, a web page or another local user
 * could make it do.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlib } from 'node:zlib';
import { startCodecServer, type CodecServer } from '../../payloads/codecServer.js';
import type { Payload } from '@temporalio/common';
import proto from '@temporalio/proto';
import {
  CompressionCodec,
  FilesystemStorageDriver,
  MAX_DECOMPRESSED_BYTES,
  MIN_COMPRESS_BYTES,
  createPayloadCodecs,
  encodedSizeAtMost,
} from '../../payloads/dataConverter.js';

const brotli = promisify(brotliCompress);
const compress = (b: Buffer) => brotli(b, { params: { [zlib.BROTLI_PARAM_QUALITY]: 1 } });
/** A small limit keeps the bombs cheap to build; the default is checked for its size. */
const LIMIT = 1024 * 1024;

interface Reply {
  status: number;
  body: string;
}

/** One POST with exactly the headers given (node:http, so Host can be set as a browser would). */
function post(
  server: CodecServer,
  path: string,
  body: string | Buffer,
  headers: Record<string, string>,
): Promise<Reply> {
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.setTimeout(20_000, () => req.destroy(new Error('no answer within 20 s')));
    // The server may answer and close before the whole body is written (413).
    req.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'EPIPE' || err.code === 'ECONNRESET' ? resolve({ status: -1, body: err.code }) : reject(err),
    );
    req.end(body);
  });
}

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');
const plainPayload = { metadata: { encoding: b64('json/plain') }, data: b64('"hello"') };
const json = { 'content-type': 'application/json' };

describe('codec server', { timeout: 60_000 }, () => {
  let server: CodecServer;
  let host: string;
  before(async () => {
    server = await startCodecServer({
      codecs: [new CompressionCodec({ maxDecompressedBytes: LIMIT })],
      port: 0,
      maxBodyBytes: 1024 * 1024,
    });
    host = new URL(server.url).host;
  });
  after(async () => {
    await server?.close();
  });

  test('a loopback client with JSON is served', async () => {
    const reply = await post(server, '/encode', JSON.stringify({ payloads: [plainPayload] }), { ...json, host });
    assert.equal(reply.status, 200, reply.body);
    const decoded = await post(server, '/decode', reply.body, { ...json, host, origin: 'http://localhost:8233' });
    assert.equal(decoded.status, 200, decoded.body);
    assert.deepEqual(JSON.parse(decoded.body), { payloads: [plainPayload] });
  });

  test('a request for another host name (DNS rebinding) is refused', async () => {
    const port = new URL(server.url).port;
    const reply = await post(server, '/decode', JSON.stringify({ payloads: [plainPayload] }), {
      ...json,
      host: `attacker.example:${port}`,
    });
    assert.equal(reply.status, 403, reply.body);
    assert.match(reply.body, /host/i);
  });

  test('a request from a foreign web origin is refused, not just left without CORS headers', async () => {
    const reply = await post(server, '/decode', JSON.stringify({ payloads: [plainPayload] }), {
      ...json,
      host,
      origin: 'https://attacker.example',
    });
    assert.equal(reply.status, 403, reply.body);
    assert.match(reply.body, /origin/i);
  });

  test('a text/plain POST (a cross-site "simple" request, no preflight) is refused', async () => {
    const reply = await post(server, '/decode', JSON.stringify({ payloads: [plainPayload] }), {
      'content-type': 'text/plain',
      host,
      origin: 'http://127.0.0.1:8233',
    });
    assert.equal(reply.status, 415, reply.body);
  });

  test('a body over the default limit (16 MiB) is refused from its Content-Length, before it is read', async () => {
    const plain = await startCodecServer({ codecs: createPayloadCodecs({}), port: 0 });
    try {
      const big = Buffer.alloc(17 * 1024 * 1024, 0x20);
      const reply = await post(plain, '/decode', big, { ...json, host: new URL(plain.url).host });
      assert.ok(reply.status === 413 || reply.status === -1, `status ${reply.status}: ${reply.body}`);
    } finally {
      await plain.close();
    }
  });

  test('a brotli bomb is refused without being inflated', async () => {
    // Four copies of a payload that inflates past the limit: a few hundred bytes of request.
    const zeros = Buffer.alloc(8 * LIMIT);
    const bomb = {
      metadata: { encoding: b64('binary/dmcp-brotli') },
      data: (await compress(zeros)).toString('base64'),
    };
    const body = JSON.stringify({ payloads: [bomb, bomb, bomb, bomb] });
    assert.ok(body.length < 16 * 1024, `the bomb is small (${body.length} bytes)`);
    const reply = await post(server, '/decode', body, { ...json, host });
    assert.equal(reply.status, 413, reply.body);
    assert.match(reply.body, /larger than/);
  });

  test('with a token, requests without it are refused', async () => {
    const guarded = await startCodecServer({ codecs: createPayloadCodecs({}), port: 0, token: 'codec-secret-123' });
    try {
      const h = new URL(guarded.url).host;
      const body = JSON.stringify({ payloads: [plainPayload] });
      assert.equal((await post(guarded, '/encode', body, { ...json, host: h })).status, 401);
      assert.equal(
        (await post(guarded, '/encode', body, { ...json, host: h, authorization: 'Bearer wrong-secret-123' })).status,
        401,
      );
      assert.equal(
        (await post(guarded, '/encode', body, { ...json, host: h, authorization: 'Bearer codec-secret-123' })).status,
        200,
      );
    } finally {
      await guarded.close();
    }
  });
});

test(
  'the compression codec refuses a payload that inflates past its limit, and keeps one under it',
  { timeout: 30_000 },
  async () => {
    const encoding = new TextEncoder().encode('binary/dmcp-brotli');
    const codec = new CompressionCodec({ maxDecompressedBytes: LIMIT });
    await assert.rejects(
      codec.decode([{ metadata: { encoding }, data: await compress(Buffer.alloc(LIMIT + 1)) }]),
      /larger than/,
    );
    const [fine] = await codec.encode([{ metadata: {}, data: Buffer.alloc(LIMIT / 2, 0x61) }]);
    assert.equal((await codec.decode([fine!]))[0]?.data?.length, LIMIT / 2);
    // The default fits the largest payload the project writes (a 10 MiB image result, base64) with room.
    assert.ok(MAX_DECOMPRESSED_BYTES >= 64 * 1024 * 1024 && MAX_DECOMPRESSED_BYTES <= 512 * 1024 * 1024);
  },
);

test('the payload store is private to its user: directory 0700, files 0600', { timeout: 30_000 }, async () => {
  const root = await mkdtemp(join(tmpdir(), 'dmcp-store-'));
  const prevMask = process.umask(0o022);
  try {
    const dir = join(root, 'data', 'payloads');
    const driver = new FilesystemStorageDriver(dir);
    await driver.store(undefined, [{ metadata: {}, data: new TextEncoder().encode('secret tool output') }]);
    assert.equal((await stat(dir)).mode & 0o777, 0o700, 'payload dir');
    assert.equal((await stat(join(root, 'data'))).mode & 0o777, 0o700, 'data dir created for it');
    const [file] = await readdir(dir);
    assert.equal((await stat(join(dir, file!))).mode & 0o777, 0o600, 'payload file');
  } finally {
    process.umask(prevMask);
    await rm(root, { recursive: true, force: true });
  }
});

test("the codec's size bound is never below a payload's encoded size, so it skips compressing only what is too small", async () => {
  const Payload = proto.temporal.api.common.v1.Payload;
  const json = new TextEncoder().encode('json/plain');
  const rows: Payload[] = [
    { metadata: {}, data: new Uint8Array(0) },
    { metadata: { encoding: json }, data: Buffer.alloc(10, 0x61) },
    { metadata: { encoding: json, 'ünïcode-key': Buffer.alloc(200, 0x62) }, data: Buffer.alloc(127, 0x61) },
    { metadata: { encoding: json, a: Buffer.alloc(128), b: Buffer.alloc(16_383) }, data: Buffer.alloc(16_384, 0x61) },
    { metadata: { encoding: json }, data: Buffer.alloc(2 * 1024 * 1024 - 1, 0x61) },
  ];
  for (const payload of rows) {
    assert.ok(
      encodedSizeAtMost(payload) >= Payload.encode(payload).finish().byteLength,
      `bound for ${payload.data?.byteLength} bytes of data`,
    );
  }
  const codec = new CompressionCodec();
  // Both sides of the bound, by the exact encoded size (data of 128 bytes to 16 KiB: the same framing).
  const framing = Payload.encode({ metadata: { encoding: json }, data: Buffer.alloc(500) }).finish().byteLength - 500;
  const near = (size: number): Payload => ({ metadata: { encoding: json }, data: Buffer.alloc(size - framing, 0x61) });
  assert.equal(Payload.encode(near(MIN_COMPRESS_BYTES)).finish().byteLength, MIN_COMPRESS_BYTES);
  const [under] = await codec.encode([near(MIN_COMPRESS_BYTES - 1)]);
  assert.equal(
    new TextDecoder().decode(under!.metadata!.encoding!),
    'json/plain',
    'one byte under the bound: left as it is',
  );
  const [at] = await codec.encode([near(MIN_COMPRESS_BYTES)]);
  assert.equal(new TextDecoder().decode(at!.metadata!.encoding!), 'binary/dmcp-brotli', 'at the bound: compressed');
});
