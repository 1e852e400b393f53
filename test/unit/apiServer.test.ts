/**
 * The API server's limits over real sockets on 127.0.0.1: the token before the body, header and
 * request timeouts, the connection cap and the event stream caps. No route here reaches Temporal:
 * the streams' session has no turns.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import pino from 'pino';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type ApiServerOptions, type RunningApi } from '../../api/server.js';
import type { TurnClient } from '../../client/turnClient.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';

const TOKEN_A = 'limits-token-a-0123456789';
const TOKEN_B = 'limits-token-b-0123456789';

/** A session without turns: its event stream lists turns and waits. */
const noTurns = { sessionTurns: async () => [] } as unknown as TurnClient;

async function serve(limits: Partial<ApiServerOptions> & Record<string, unknown>): Promise<RunningApi> {
  return startApiServer({
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    turns: noTurns,
    tokens: parseTokens(`${hashToken(TOKEN_A)} *\n${hashToken(TOKEN_B)} *`, 'DMCP_API_TOKENS'),
    boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
    maxBodyBytes: 64 * 1024,
    callWaitMs: 1000,
    shapeLimits: DEFAULT_SHAPE_LIMITS,
    eventsPollMs: 50,
    closeGraceMs: 500,
    ...limits,
  });
}

/** A raw connection: what it has received, and when it closed (ms after it opened). */
interface RawConnection {
  socket: Socket;
  received: () => string;
  closed: Promise<number>;
}

async function open(api: RunningApi): Promise<RawConnection> {
  const socket = connect(api.port, '127.0.0.1');
  let data = '';
  socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const opened = Date.now();
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - opened)));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => data, closed };
}

function settleWithin<T>(ms: number, p: Promise<T>): Promise<T | 'still pending'> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<'still pending'>((resolve) => (timer = setTimeout(() => resolve('still pending'), ms))),
  ]).finally(() => clearTimeout(timer));
}

async function waitFor(what: string, check: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('an unauthenticated chunked POST whose body never finishes gets 401 at once, before any of the body is read', async () => {
  const api = await serve({});
  try {
    for (const auth of ['', `Authorization: Bearer not-a-known-token\r\n`]) {
      const c = await open(api);
      const host = `127.0.0.1:${api.port}`;
      c.socket.write(
        `POST /api/v1/sessions/s1/turns HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{"works"\r\n`,
      );
      await waitFor(
        `the 401 (${auth ? 'unknown token' : 'no token'}); received ${JSON.stringify(c.received())}`,
        () => c.received().includes('\r\n\r\n{'),
        3000,
      );
      assert.match(c.received(), /^HTTP\/1\.1 401 /);
      assert.match(c.received(), /"code":"unauthorized"/);
      c.socket.destroy();
    }
  } finally {
    await api.close();
  }
});

test('a connection that sends nothing, or half a request, is closed within the header timeout; a body that never ends, within the request timeout', async () => {
  const api = await serve({ headersTimeoutMs: 1000, requestTimeoutMs: 2000 });
  try {
    const silent = await open(api);
    const half = await open(api);
    half.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${api.port}\r\n`);
    const slowBody = await open(api);
    slowBody.socket.write(
      `POST /api/v1/sessions/s1/turns HTTP/1.1\r\nHost: 127.0.0.1:${api.port}\r\nAuthorization: Bearer ${TOKEN_A}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n`,
    );
    for (const [name, c, bound] of [
      ['silent', silent, 1000],
      ['half a request', half, 1000],
      ['a body that never ends', slowBody, 2000],
    ] as const) {
      const after = await settleWithin(bound + 3000, c.closed);
      assert.notEqual(after, 'still pending', `${name}: the connection is still open ${bound + 3000} ms later`);
      assert.ok(
        typeof after === 'number' && after >= bound - 100,
        `${name}: closed after ${after} ms, not before its timeout`,
      );
    }
    assert.match(half.received(), /^HTTP\/1\.1 408 /, 'half a request is told it timed out');
    // An event stream is a request that was received whole: it outlives the request timeout.
    const stream = await fetch(`${api.url}/api/v1/sessions/s1/events`, {
      headers: { authorization: `Bearer ${TOKEN_A}` },
    });
    assert.equal(stream.status, 200);
    const reader = stream.body!.getReader();
    await new Promise((resolve) => setTimeout(resolve, 3500));
    assert.equal(
      await settleWithin(200, reader.closed),
      'still pending',
      'the event stream is still open after the request timeout',
    );
    await reader.cancel();
  } finally {
    await api.close();
  }
});

test('connections beyond the cap are closed at once; a freed slot serves again', async () => {
  const api = await serve({ maxConnections: 3 });
  try {
    const held = await Promise.all([open(api), open(api), open(api)]);
    const extra = await open(api);
    assert.notEqual(await settleWithin(2000, extra.closed), 'still pending', 'the connection over the cap is closed');
    held[0]!.socket.destroy();
    await held[0]!.closed;
    const res = await fetch(`${api.url}/healthz`, { headers: { connection: 'close' } });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    for (const c of held) c.socket.destroy();
  } finally {
    await api.close();
  }
});

test('event streams beyond the cap per token, or the cap overall, get 429 with a JSON error; an ended stream frees its place', async () => {
  const api = await serve({ maxEventStreams: { total: 3, perToken: 2 } });
  const streams: AbortController[] = [];
  const openStream = async (token: string) => {
    const stop = new AbortController();
    const res = await fetch(`${api.url}/api/v1/sessions/s1/events`, {
      headers: { authorization: `Bearer ${token}` },
      signal: stop.signal,
    });
    if (res.status === 200) streams.push(stop);
    const body = res.status === 200 ? undefined : ((await res.json()) as { error: { code: string; message: string } });
    return { status: res.status, stop, retryAfter: res.headers.get('retry-after'), body };
  };
  try {
    assert.equal((await openStream(TOKEN_A)).status, 200);
    const second = await openStream(TOKEN_A);
    assert.equal(second.status, 200);
    const third = await openStream(TOKEN_A);
    assert.equal(third.status, 429, 'a third stream of one token');
    assert.equal(third.body?.error.code, 'rate_limited');
    assert.match(third.body?.error.message ?? '', /2 event streams per token/);
    assert.ok(third.retryAfter, 'Retry-After says when to try again');
    assert.equal((await openStream(TOKEN_B)).status, 200, 'another token has its own share');
    const overall = await openStream(TOKEN_B);
    assert.equal(overall.status, 429, 'a fourth stream overall');
    assert.match(overall.body?.error.message ?? '', /3 event streams at once/);
    second.stop.abort();
    let again = 0;
    for (let i = 0; i < 50 && again !== 200; i++) {
      again = (await openStream(TOKEN_A)).status;
      if (again !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(again, 200, 'an ended stream frees its place');
  } finally {
    for (const s of streams) s.abort();
    await api.close();
  }
});
