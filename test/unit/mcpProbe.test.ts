/**
 * `probeRemote`: what one look at a remote server tells the CLI, through the pool's transport and
 * era negotiation. In-process HTTP servers on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { probeRemote } from '../../mcp/probe.js';

const clientInfo = { name: 'probe-test', version: '0.0.0' };

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<{ base: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

test('a 401 says it wants a login, with the protected-resource metadata and scope its challenge names', async () => {
  const metadata = 'https://auth.example/.well-known/oauth-protected-resource/mcp';
  const { base, server } = await serve(
    (_req, res) =>
      void res
        .writeHead(401, {
          'www-authenticate': `Bearer resource_metadata="${metadata}", scope="files:read files:write"`,
        })
        .end(),
  );
  try {
    for (const type of ['http', 'sse'] as const) {
      assert.deepEqual(
        await probeRemote({ type, url: `${base}/mcp` }, { timeoutMs: 2000, clientInfo }),
        { kind: 'unauthorized', resourceMetadata: metadata, scope: 'files:read files:write' },
        type,
      );
    }
  } finally {
    await stop(server);
  }
});

test('a 2025 server: legacy era and its name; a redirect to another origin is reported, not followed', async () => {
  const seen: string[] = [];
  const { base, server } = await serve((req, res, body) => {
    seen.push(`${req.method} ${req.url}`);
    if (req.url === '/moved') return void res.writeHead(307, { location: 'http://127.0.0.2:9/mcp' }).end();
    if (req.method === 'DELETE' || req.method === 'GET')
      return void res.writeHead(req.method === 'GET' ? 405 : 200).end();
    const message = JSON.parse(body) as { id?: number; method?: string; params?: { protocolVersion?: string } };
    if (message.method === 'initialize') {
      const result = {
        protocolVersion: message.params?.protocolVersion,
        capabilities: {},
        serverInfo: { name: 'old-docs', version: '0.9.1' },
      };
      return void res
        .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    }
    if (req.headers['mcp-session-id'] === 's1') return void res.writeHead(202).end();
    res.writeHead(400).end();
  });
  try {
    assert.deepEqual(await probeRemote({ type: 'http', url: `${base}/mcp` }, { timeoutMs: 2000, clientInfo }), {
      kind: 'reachable',
      era: 'legacy',
      server: { name: 'old-docs', version: '0.9.1' },
    });
    assert.equal(seen[seen.length - 1], 'DELETE /mcp', 'the session it opened is ended');
    assert.deepEqual(await probeRemote({ type: 'http', url: `${base}/moved` }, { timeoutMs: 2000, clientInfo }), {
      kind: 'unreachable',
      why: 'HTTP 307 Temporary Redirect',
    });
  } finally {
    await stop(server);
  }
});

test('a server that speaks only 2026-07-28 (2025 traffic refused): the modern era and its name', async () => {
  const fixture = fileURLToPath(new URL('../fixtures/modernServer.js', import.meta.url));
  const child = spawn(process.execPath, [fixture, 'http', '--legacy', 'reject'], {
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('the modern fixture did not start within 10 s')), 10_000);
      child.stdout.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        const found = /\{"url":"([^"]+)"\}/.exec(out);
        if (found) {
          clearTimeout(timer);
          resolve(found[1]!);
        }
      });
    });
    assert.deepEqual(await probeRemote({ type: 'http', url }, { timeoutMs: 3000, clientInfo }), {
      kind: 'reachable',
      era: 'modern',
      server: { name: 'modern-fixture-http', version: '2.0.0' },
    });
  } finally {
    child.kill();
  }
});
