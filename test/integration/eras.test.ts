/**
 * MCP protocol eras per server: a 2026-07-28 server (the SDK's v2 server, refusing 2025 traffic
 * where a test must prove the modern path) and 2025-era servers (the v1 SDK fixtures) in the same
 * turns, `protocol` pinning either era, sampling refused, and listings whose bad tools are left out
 * while schemas pass through verbatim. Real Temporal, real server processes on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { probeServer } from '../../cli/commands/mcp/list.js';
import { renderTranscript } from '../../client/transcriptText.js';
import type { ServerEntry } from '../../config/types.js';
import { STDIO_PROBE_TIMEOUT_MS } from '../../mcp/era.js';
import { ManagedServer } from '../../mcp/managedServer.js';
import {
  configFiles,
  fixtureServer,
  type Harness,
  lifecycleEntry,
  readLines,
  serverStatus,
  startHarness,
  startListening,
  tempDir,
  within,
} from '../support/harness.js';

const modernFixture = fileURLToPath(new URL('../fixtures/modernServer.js', import.meta.url));
const legacyHttpFixture = fileURLToPath(new URL('../fixtures/httpFixtureServer.js', import.meta.url));

const started = new Set<number>();

const modernHttp = (...flags: string[]) =>
  startListening([modernFixture, 'http', ...flags], /\{"url":"([^"]+)"\}/, started);
const legacyHttp = async () =>
  `http://127.0.0.1:${await startListening([legacyHttpFixture, 'http'], /\{"port":(\d+)\}/, started)}/mcp`;

function text(outcome: { content: unknown[] }): string {
  return outcome.content.map((c) => (c as { text?: string }).text ?? '').join('');
}

describe('protocol eras: modern and legacy servers side by side', { timeout: 180_000 }, () => {
  let h: Harness;
  let dir: string;

  before(async () => {
    dir = await tempDir('dmcp-eras-');
    config = configFiles(dir);
    h = await startHarness('eras');
  });
  after(async () => {
    for (const pid of started) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await h?.stop();
  });

  let config: (mcpServers: Record<string, unknown>) => Promise<string>;
  const session = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;

  test('one turn calls a 2026-07-28 server and two legacy servers; the status and the transcript say which is which', async () => {
    const modernUrl = await modernHttp('--legacy', 'reject');
    const legacyUrl = await legacyHttp();
    const file = await config({
      modern: { url: modernUrl },
      legacy: { url: legacyUrl },
      local: { command: process.execPath, args: [fixtureServer] },
    });
    const sessionId = session('side-by-side');
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
    for (const [name, era] of [
      ['modern', 'modern'],
      ['legacy', 'legacy'],
      ['local', 'legacy'],
    ] as const) {
      const status = serverStatus(turn.status.servers, name);
      assert.equal(status.state, 'ready', `${name}: ${status.error}`);
      assert.equal(status.era, era, name);
    }
    const [modern, legacy, local] = await Promise.all([
      turn.callTool({ id: 'm1', name: 'mcp__modern__era', arguments: {} }),
      turn.callTool({ id: 'l1', name: 'mcp__legacy__echo', arguments: { text: 'from 2025' } }),
      turn.callTool({ id: 's1', name: 'mcp__local__echo', arguments: { text: 'over stdio' } }),
    ]);
    assert.equal(text(modern), 'modern', 'the modern server served the call in its own era');
    assert.equal(text(legacy), 'from 2025');
    assert.equal(text(local), 'over stdio');
    const counted = await turn.callTool({ id: 'm2', name: 'mcp__modern__count', arguments: {} });
    assert.equal(counted.status, 'ok', counted.errorMessage);
    await turn.end();

    const transcript = renderTranscript(await h.client.transcript(turn.turnId));
    assert.match(transcript, /modern \[ready\] http \(MCP 2026-07-28\)/);
    assert.match(transcript, /legacy \[ready\] http \(legacy MCP\)/);

    // A later turn of the session keeps both (refresh asks the modern server server/discover, not ping).
    // `durable-mcp mcp list` tells the two apart too.
    assert.deepEqual(await probeServer({ type: 'http', url: modernUrl }, 3000), { kind: 'reachable', era: 'modern' });
    assert.deepEqual(await probeServer({ type: 'http', url: legacyUrl }, 3000), { kind: 'reachable', era: 'legacy' });
    const next = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
    assert.equal(
      serverStatus(next.status.servers, 'modern').state,
      'ready',
      serverStatus(next.status.servers, 'modern').error,
    );
    assert.equal(text(await next.callTool({ id: 'm3', name: 'mcp__modern__count', arguments: {} })), '2');
    await next.end();
  });

  test('"protocol": "legacy" speaks 2025 to a server that offers both eras', async () => {
    const url = await modernHttp();
    const file = await config({ both: { url, protocol: 'legacy' }, negotiated: { url } });
    const turn = await h.client.startTurn({
      sessionId: session('pin-legacy'),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    assert.equal(serverStatus(turn.status.servers, 'both').era, 'legacy');
    assert.equal(serverStatus(turn.status.servers, 'negotiated').era, 'modern', 'auto finds the newer era');
    assert.equal(text(await turn.callTool({ id: 'b1', name: 'mcp__both__era', arguments: {} })), 'legacy');
    assert.equal(text(await turn.callTool({ id: 'n1', name: 'mcp__negotiated__era', arguments: {} })), 'modern');
    await turn.end();
  });

  test('"protocol": "2026-07-28" against a 2025-only server fails that server, saying why; the others start', async () => {
    const legacyUrl = await legacyHttp();
    const modernUrl = await modernHttp('--legacy', 'reject');
    const file = await config({
      pinned: { url: legacyUrl, protocol: '2026-07-28' },
      fine: { url: modernUrl, protocol: '2026-07-28' },
    });
    const turn = await within(
      30_000,
      'turn',
      h.client.startTurn({ sessionId: session('pin-modern'), workspace: dir, servers: { mcpConfigFiles: [file] } }),
    );
    const pinned = serverStatus(turn.status.servers, 'pinned');
    assert.equal(pinned.state, 'failed');
    assert.match(pinned.error ?? '', /2026-07-28/, pinned.error);
    assert.match(pinned.error ?? '', /negotiation|did not offer/i, pinned.error);
    assert.equal(serverStatus(turn.status.servers, 'fine').state, 'ready');
    assert.equal(serverStatus(turn.status.servers, 'fine').era, 'modern');
    await turn.end();
  });

  test('a modern stdio server that refuses 2025 traffic lands on 2026-07-28; its restart skips the probe', async () => {
    const log = join(dir, `stdio-${randomBytes(3).toString('hex')}.log`);
    const file = await config({
      m: { command: process.execPath, args: [modernFixture, 'stdio', '--legacy', 'reject'], env: { FIXTURE_LOG: log } },
    });
    const sessionId = session('modern-stdio');
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
    const status = serverStatus(turn.status.servers, 'm');
    assert.equal(status.state, 'ready', status.error);
    assert.equal(status.era, 'modern');
    assert.equal(text(await turn.callTool({ id: 'e1', name: 'mcp__m__echo', arguments: { text: 'hi' } })), 'hi');
    assert.equal(text(await turn.callTool({ id: 'c1', name: 'mcp__m__count', arguments: {} })), '1');
    await turn.end();
    const events = (await readLines(log)).map((l) => JSON.parse(l) as { era: string });
    assert.deepEqual(
      events.map((e) => e.era),
      ['modern', 'modern'],
    );

    // A new session of the same config: the remembered verdict connects without a probe.
    const again = await h.client.startTurn({
      sessionId: session('modern-stdio-2'),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    assert.equal(serverStatus(again.status.servers, 'm').era, 'modern');
    assert.equal(text(await again.callTool({ id: 'c2', name: 'mcp__m__count', arguments: {} })), '1', 'a new process');
    await again.end();
  });

  for (const [ttl, relisted] of [
    [undefined, true],
    ['600000', false],
  ] as const) {
    test(`a modern listing with ttlMs ${ttl ?? 'left out (0)'} is ${relisted ? 'listed again next turn' : 'kept while fresh'}`, async () => {
      const file = await config({
        m: {
          command: process.execPath,
          args: [modernFixture, 'stdio'],
          env: ttl === undefined ? {} : { FIXTURE_TOOLS_TTL_MS: ttl },
        },
      });
      const sessionId = session('ttl');
      const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
      assert.equal(serverStatus(turn.status.servers, 'm').era, 'modern');
      assert.equal(text(await turn.callTool({ id: 'a1', name: 'mcp__m__add_tool', arguments: {} })), 'added_1');
      await turn.end();
      // No list_changed reaches a client that does not subscribe: only the listing's ttlMs decides.
      const next = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
      assert.equal(
        next.tools.some((t) => t.name === 'mcp__m__added_1'),
        relisted,
        next.tools.map((t) => t.name).join(', '),
      );
      assert.equal(
        serverStatus(next.status.servers, 'm').pid,
        serverStatus(turn.status.servers, 'm').pid,
        'the same process',
      );
      await next.end();
    });
  }

  test('a 2025 stdio server that exits on the probe is started again in the legacy era; later starts skip the probe', async () => {
    const log = join(dir, `exits-${randomBytes(3).toString('hex')}.log`);
    const file = await config({ x: lifecycleEntry('x', '--exit-on-discover', '--start-log', log) });
    const turn = await h.client.startTurn({
      sessionId: session('exits'),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const status = serverStatus(turn.status.servers, 'x');
    assert.equal(status.state, 'ready', status.error);
    assert.equal(status.era, 'legacy');
    assert.equal((await readLines(log)).length, 2, 'the probed process and the legacy one');
    await turn.end();
    const again = await h.client.startTurn({
      sessionId: session('exits-2'),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    assert.equal(serverStatus(again.status.servers, 'x').state, 'ready');
    assert.equal((await readLines(log)).length, 3, 'one start: the verdict was remembered');
    await again.end();
  });

  test('a 2025 stdio server silent on the probe costs at most the probe bound, once per config', async () => {
    const file = await config({ quiet: lifecycleEntry('quiet', '--ignore-discover') });
    const began = Date.now();
    const turn = await h.client.startTurn({
      sessionId: session('quiet'),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const first = Date.now() - began;
    assert.equal(
      serverStatus(turn.status.servers, 'quiet').state,
      'ready',
      serverStatus(turn.status.servers, 'quiet').error,
    );
    assert.equal(serverStatus(turn.status.servers, 'quiet').era, 'legacy');
    assert.ok(first >= STDIO_PROBE_TIMEOUT_MS, `the probe waited its bound (${first} ms)`);
    assert.ok(first < STDIO_PROBE_TIMEOUT_MS + 5000, `and no longer (${first} ms)`);
    await turn.end();
    const again = Date.now();
    const next = await h.client.startTurn({
      sessionId: session('quiet-2'),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    assert.equal(serverStatus(next.status.servers, 'quiet').state, 'ready');
    assert.ok(
      Date.now() - again < STDIO_PROBE_TIMEOUT_MS,
      `a new session of the same config skips the probe (${Date.now() - again} ms)`,
    );
    await next.end();
  });

  test('sampling is not offered: a server that asks is refused in words the model can read', async () => {
    // A 2025 connection over stdio keeps its session, so the server's request reaches this client
    // (a stateless 2025 HTTP endpoint could not route the answer back to the asking instance).
    const url = await modernHttp();
    const file = await config({
      old: { command: process.execPath, args: [modernFixture, 'stdio'], protocol: 'legacy' },
      new: { url },
    });
    const turn = await h.client.startTurn({
      sessionId: session('sampling'),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const legacy = await turn.callTool({ id: 's1', name: 'mcp__old__sample', arguments: {} });
    assert.equal(legacy.status, 'ok', legacy.errorMessage);
    assert.equal(legacy.isError, true);
    assert.match(
      text(legacy),
      /sampling refused: .*sampling \(sampling\/createMessage\) is not supported by this client/,
    );
    const modern = await turn.callTool({ id: 's2', name: 'mcp__new__sample', arguments: {} });
    assert.equal(modern.status, 'error');
    assert.equal(modern.errorKind, 'bad_request', 'not retried: asking again cannot help');
    assert.match(modern.errorMessage ?? '', /sampling/i, modern.errorMessage);
    await turn.end();
  });
});

describe('tool listings: bad tools are left out, schemas pass through verbatim', { timeout: 60_000 }, () => {
  let http: Server;
  let origin: string;
  const seen: string[] = [];
  const schema2020 = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false } },
    properties: { pair: { $ref: '#/$defs/pair' }, remote: { $ref: '' } },
    dependentRequired: { pair: ['remote'] },
    unevaluatedProperties: false,
  };

  before(async () => {
    http = createServer((req, res) => void answer(req, res));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
    origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    schema2020.properties.remote.$ref = `${origin}/schemas/remote.json`;
  });
  after(async () => new Promise<void>((resolve) => http.close(() => resolve())));

  /** A 2025-era server whose listing holds valid and invalid tools. */
  async function answer(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
    seen.push(`${req.method} ${req.url}`);
    if (req.method !== 'POST') return void res.writeHead(req.url?.startsWith('/schemas') ? 200 : 405).end('{}');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      id?: number;
      method: string;
      params?: { protocolVersion?: string };
    };
    if (message.id === undefined) return void res.writeHead(202).end();
    const result = (value: unknown): void =>
      void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: value }));
    if (message.method === 'initialize')
      return result({
        protocolVersion: message.params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'mixed', version: '1' },
      });
    if (message.method === 'tools/list') {
      return result({
        tools: [
          { name: 'good', description: 'fine', inputSchema: schema2020 },
          { description: 'no name', inputSchema: { type: 'object' } },
          { name: 'stringly', inputSchema: 'object' },
          { name: 'numbered', inputSchema: { type: 'object' }, description: 42 },
          { name: 'good', inputSchema: { type: 'object' } },
          { name: 'also_good', inputSchema: { type: 'object' } },
        ],
      });
    }
    if (message.method === 'server/discover')
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }));
    return result({});
  }

  test('the valid tools stay, each invalid one is named with its reason, and no $ref is fetched', async () => {
    const entry: ServerEntry = {
      name: 'mixed',
      layer: 'inline',
      source: '--mcp #1',
      trusted: true,
      type: 'http',
      url: `${origin}/mcp`,
      args: [],
      env: {},
      envFrom: {},
      headers: {},
      enabled: true,
    };
    const server = new ManagedServer(entry, {
      logger: pino({ level: 'silent' }),
      environment: () => ({}),
      scrub: (t) => t,
      startTimeoutMs: 5000,
      clientVersion: '0.0.0',
    });
    await within(10_000, 'start', server.start());
    try {
      assert.equal(server.state, 'ready', server.error);
      assert.equal(server.era, 'legacy');
      assert.deepEqual(
        server.tools.map((t) => t.name),
        ['good', 'also_good'],
      );
      assert.deepEqual(server.tools[0]!.inputSchema, schema2020, 'the schema is kept exactly as listed');
      assert.deepEqual(server.refusedTools, [
        { name: '', reason: 'its "name" is missing, empty or not a string' },
        { name: 'stringly', reason: 'its "inputSchema" is missing or not a JSON object' },
        { name: 'numbered', reason: 'its "description" is not a string' },
        { name: 'good', reason: 'another tool of the listing has the same name' },
      ]);
      const called = await server.callTool('good', { pair: ['a', 1] }, { timeoutMs: 5000 });
      assert.equal(called.isError ?? false, false);
      assert.ok(!seen.some((s) => s.includes('/schemas/')), `nothing fetched the $ref: ${seen.join(', ')}`);
    } finally {
      await server.stop();
    }
  });
});

describe('SSE polling (SEP-1699): a call whose stream the server closes on purpose', { timeout: 60_000 }, () => {
  let http: Server;
  let origin: string;
  const gets: string[] = [];
  let resumable = true;

  before(async () => {
    http = createServer((req, res) => void answer(req, res));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
    origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  after(async () => new Promise<void>((resolve) => http.close(() => resolve())));

  /** A 2025-era session server: `poll` answers after closing its stream once, with a `retry` of 200 ms. */
  async function answer(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
    if (req.method === 'GET') {
      const last = req.headers['last-event-id'];
      if (last === undefined) return res.writeHead(405).end();
      gets.push(String(last));
      if (!resumable) return res.writeHead(404).end('no such stream');
      const id = Number(String(last).split(':')[1]);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return res.end(
        `id: s:2\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'polled' }] } })}\n\n`,
      );
    }
    if (req.method === 'DELETE') return res.writeHead(200).end();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      id?: number;
      method: string;
      params?: { protocolVersion?: string };
    };
    if (message.id === undefined) return res.writeHead(202).end();
    const json = (value: unknown) =>
      res
        .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'poll-session' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: value }));
    if (message.method === 'initialize')
      return json({
        protocolVersion: message.params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'poller', version: '1' },
      });
    if (message.method === 'tools/list') return json({ tools: [{ name: 'poll', inputSchema: { type: 'object' } }] });
    if (message.method === 'tools/call') {
      // The priming event: an ID to resume from and how long to wait; then the stream is closed.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'poll-session' });
      return res.end(`id: s:${message.id}\nretry: 200\ndata: \n\n`);
    }
    if (message.method === 'server/discover')
      return res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }));
    return json({});
  }

  function poller(): ManagedServer {
    const entry: ServerEntry = {
      name: 'poller',
      layer: 'inline',
      source: '--mcp #1',
      trusted: true,
      type: 'http',
      url: `${origin}/mcp`,
      args: [],
      env: {},
      envFrom: {},
      headers: {},
      enabled: true,
    };
    return new ManagedServer(entry, {
      logger: pino({ level: 'silent' }),
      environment: () => ({}),
      scrub: (t) => t,
      startTimeoutMs: 5000,
      clientVersion: '0.0.0',
    });
  }

  test("the call is resumed with GET and Last-Event-ID after the server's retry, and answers", async () => {
    resumable = true;
    const server = poller();
    await within(10_000, 'start', server.start());
    try {
      assert.equal(server.state, 'ready', server.error);
      const began = Date.now();
      const result = await within(10_000, 'the polled call', server.callTool('poll', {}, { timeoutMs: 20_000 }));
      assert.deepEqual(result.content, [{ type: 'text', text: 'polled' }]);
      assert.ok(Date.now() - began >= 150, 'it waited for the retry interval');
      assert.ok(
        gets.some((g) => g.startsWith('s:')),
        `resumed from the priming event's ID: ${JSON.stringify(gets)}`,
      );
      assert.equal(server.state, 'ready', 'a closed stream that resumes is no loss');
    } finally {
      await server.stop();
    }
  });

  test('a stream that cannot be resumed fails the call within seconds, not at its timeout', async () => {
    resumable = false;
    const server = poller();
    await within(10_000, 'start', server.start());
    try {
      const began = Date.now();
      await assert.rejects(
        within(15_000, 'the unresumable call', server.callTool('poll', {}, { timeoutMs: 60_000 })),
        /connection to MCP server "poller" lost: a response stream was closed and could not be resumed/,
      );
      assert.ok(Date.now() - began < 10_000, `failed after ${Date.now() - began} ms`);
    } finally {
      await server.stop();
    }
  });
});
