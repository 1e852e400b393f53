/**
 * Remote (Streamable HTTP / SSE) servers that redirect, that are reached over plain http with a
 * token, and that answer with more than any message should hold. Real HTTP servers on 127.0.0.1
 * (a redirect to another port is a redirect to another origin), the real SDK client and our
 * transport; no Temporal server is needed.
 */
import assert from 'node:assert/strict';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pino from 'pino';
import type { ServerEntry } from '../../config/types.js';
import { MAX_REMOTE_MESSAGE_BYTES, WireTracker, createRemoteTransport } from '../../mcp/httpTransport.js';
import { ManagedServer } from '../../mcp/managedServer.js';
import { within } from '../support/harness.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; origin: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const MIB = 1024 * 1024;

/**
 * A minimal stateless MCP server over Streamable HTTP (JSON answers, or SSE for `*_sse` tools).
 * Tools: `small`, `huge` (a 2 MiB text result), `chatty_sse` (30 progress events of 100 KB, then a
 * small result), `huge_sse` (one 2 MiB event), `whoami` (the Authorization header it got).
 */
function mcpHandler(seen: Seen[]): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => void answer(seen, req, res);
}

async function answer(seen: Seen[], req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    if (req.method !== 'POST') return void res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
    const message = JSON.parse(await readBody(req)) as {
      id?: number;
      method: string;
      params?: { name?: string; protocolVersion?: string; _meta?: { progressToken?: unknown } };
    };
    if (message.id === undefined) return void res.writeHead(202).end();
    const json = (result: unknown) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    const text = (t: string) => ({ content: [{ type: 'text', text: t }] });
    if (message.method === 'initialize') {
      return json({
        protocolVersion: message.params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'remote-fixture', version: '1.0.0' },
      });
    }
    if (message.method === 'ping') return json({});
    if (message.method === 'tools/list') {
      return json({
        tools: ['small', 'huge', 'chatty_sse', 'huge_sse', 'whoami'].map((name) => ({
          name,
          inputSchema: { type: 'object' },
        })),
      });
    }
    const name = message.params?.name;
    if (name === 'small') return json(text('small answer'));
    if (name === 'huge') return json(text('x'.repeat(2 * MIB)));
    if (name === 'whoami') return json(text(String(req.headers.authorization ?? 'none')));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = (data: unknown) => res.write(`event: message\ndata: ${JSON.stringify(data)}\n\n`);
    if (name === 'chatty_sse') {
      for (let i = 1; i <= 30; i++) {
        event({
          jsonrpc: '2.0',
          method: 'notifications/message',
          params: { level: 'info', data: 'p'.repeat(100 * 1024) },
        });
      }
      event({ jsonrpc: '2.0', id: message.id, result: text('chatty done') });
    } else {
      event({ jsonrpc: '2.0', id: message.id, result: text('y'.repeat(2 * MIB)) });
    }
    res.end();
  }
}

function entry(name: string, url: string, type: 'http' | 'sse' = 'http'): ServerEntry {
  return {
    name,
    layer: 'inline',
    source: '--mcp #1',
    trusted: true,
    type,
    url,
    args: [],
    env: {},
    envFrom: {},
    headers: {},
    enabled: true,
  };
}

function managed(e: ServerEntry, headers: Record<string, string>): ManagedServer {
  return new ManagedServer(e, {
    logger: pino({ level: 'silent' }),
    environment: () => ({}),
    scrub: (t) => t,
    startTimeoutMs: 5000,
    clientVersion: '0.0.0',
    requestHeaders: () => headers,
  });
}

describe('remote servers: redirects, credentials in clear, response size', { timeout: 60_000 }, () => {
  const targetSeen: Seen[] = [];
  const mcpSeen: Seen[] = [];
  let target: { server: Server; origin: string };
  let redirector: { server: Server; origin: string };
  let mcp: { server: Server; origin: string };

  before(async () => {
    // The other origin: records every request, so a leaked header would show here.
    target = await listen(mcpHandler(targetSeen));
    redirector = await listen(
      (req, res) => void res.writeHead(307, { location: `${target.origin}${req.url ?? '/'}` }).end(),
    );
    mcp = await listen(mcpHandler(mcpSeen));
  });
  after(async () => {
    for (const s of [target, redirector, mcp]) await new Promise<void>((resolve) => s?.server.close(() => resolve()));
  });

  for (const type of ['http', 'sse'] as const) {
    test(`${type}: a redirect to another origin is not followed, and its headers never reach it`, async () => {
      const before = targetSeen.length;
      const server = managed(entry(`redir-${type}`, `${redirector.origin}/${type === 'sse' ? 'sse' : 'mcp'}`, type), {
        'X-Api-Key': 'key-secret-4711',
        Authorization: 'Bearer token-secret-4711',
      });
      await within(15_000, 'start', server.start());
      try {
        assert.equal(server.state, 'failed');
        assert.match(String(server.error), /not followed|307/, String(server.error));
        assert.equal(
          targetSeen.length,
          before,
          `the other origin got no request: ${JSON.stringify(targetSeen.slice(before).map((s) => s.headers))}`,
        );
      } finally {
        await server.stop();
      }
    });
  }

  test('a bearer token over plain http to another machine is refused before anything is sent', async () => {
    // .invalid never resolves (RFC 2606): no request could leave, whatever the code did.
    for (const [headers, what] of [
      [{ Authorization: 'Bearer token-secret-4711' }, /Authorization/],
      [{ 'X-Api-Key': 'key-secret-4711' }, /X-Api-Key/],
    ] as const) {
      const server = managed(entry('clear', 'http://mcp.example.invalid:8080/mcp'), { ...headers });
      await within(15_000, 'start', server.start());
      try {
        assert.equal(server.state, 'failed');
        assert.match(String(server.error), /over plain http/);
        assert.match(String(server.error), what);
        assert.doesNotMatch(String(server.error), /secret-4711/, 'the status never holds the token');
      } finally {
        await server.stop();
      }
    }
    const userinfo = managed(entry('clear-userinfo', 'http://user:pass-secret-4711@mcp.example.invalid/mcp'), {});
    await within(15_000, 'start', userinfo.start());
    assert.match(String(userinfo.error), /over plain http/);
    await userinfo.stop();
  });

  test('a bearer token over plain http to loopback is still sent', async () => {
    const server = managed(entry('loopback', `${mcp.origin}/mcp`), { Authorization: 'Bearer token-secret-4711' });
    await within(15_000, 'start', server.start());
    try {
      assert.equal(server.state, 'ready', String(server.error));
      const result = await server.callTool('whoami', {}, { timeoutMs: 5000 });
      assert.deepEqual(result.content, [{ type: 'text', text: 'Bearer token-secret-4711' }]);
    } finally {
      await server.stop();
    }
  });

  test('responses past the message limit are refused; a long SSE stream of small events is not', async () => {
    const client = new Client({ name: 'remote-test', version: '0.0.0' }, { capabilities: {} });
    const transport = createRemoteTransport(entry('capped', `${mcp.origin}/mcp`), {}, new WireTracker(), {
      maxMessageBytes: MIB,
    });
    await within(10_000, 'connect', client.connect(transport));
    try {
      const small = await client.callTool({ name: 'small', arguments: {} });
      assert.deepEqual(small.content, [{ type: 'text', text: 'small answer' }]);
      await assert.rejects(
        within(10_000, 'huge', client.callTool({ name: 'huge', arguments: {} })),
        /larger than 1048576 bytes/,
      );
      await assert.rejects(
        within(10_000, 'huge_sse', client.callTool({ name: 'huge_sse', arguments: {} })),
        /larger than 1048576 bytes/,
      );
      // 3 MB in all, but no event above the limit.
      const chatty = await within(10_000, 'chatty_sse', client.callTool({ name: 'chatty_sse', arguments: {} }));
      assert.deepEqual(chatty.content, [{ type: 'text', text: 'chatty done' }]);
    } finally {
      await client.close();
    }
    assert.equal(MAX_REMOTE_MESSAGE_BYTES, 64 * MIB, 'the documented default');
  });
});
