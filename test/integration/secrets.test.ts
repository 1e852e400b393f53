/**
 * Proof of no leak: secrets reach exactly the servers meant to get
 * them, and no secret value appears in workflow history (raw, base64-decoded or codec-decoded),
 * in the status, or in the worker's logs.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Payload } from '@temporalio/common';
import { Runtime } from '@temporalio/worker';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { CallOutcome } from '../../contract/index.js';
import { textOf } from '../support/content.js';
import { runtimeLogs, startHarness, tempDir, type Harness } from '../support/harness.js';

const httpFixture = fileURLToPath(new URL('../fixtures/httpFixtureServer.js', import.meta.url));
const slowStdio = fileURLToPath(new URL('../fixtures/slowStdioServer.js', import.meta.url));

/** Encodings of payloads whose bytes are the plain value: anything else would hide a secret from the search. */
const PLAIN_ENCODINGS = new Set(['json/plain', 'binary/null', 'binary/plain', 'json/protobuf', 'binary/protobuf']);

function secret(prefix = ''): string {
  return `${prefix}${randomBytes(32).toString('hex')}`;
}

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

function text(outcome: CallOutcome): string {
  assert.equal(outcome.status, 'ok', outcome.errorMessage);
  return outcome.content.map((c) => textOf(c) ?? '').join('\n');
}

/** Every payload object in a fetched history (proto form: `data` is bytes). */
function payloads(node: unknown, out: Payload[] = []): Payload[] {
  if (Array.isArray(node)) {
    for (const item of node) payloads(item, out);
  } else if (node && typeof node === 'object' && !(node instanceof Uint8Array)) {
    const v = node as { data?: unknown; metadata?: unknown };
    if (v.data instanceof Uint8Array && v.metadata && typeof v.metadata === 'object') out.push(node as Payload);
    else for (const value of Object.values(node)) payloads(value, out);
  }
  return out;
}

/** Every `data` field of the JSON form of history, base64-decoded. */
function base64Fields(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) base64Fields(item, out);
  } else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'data' && typeof value === 'string') out.push(Buffer.from(value, 'base64').toString('utf8'));
      else base64Fields(value, out);
    }
  }
  return out;
}

/** Every form of `value` that must not be found: itself and its usual encodings. */
function forms(value: string): string[] {
  const basic = Buffer.from(`user:${value}`).toString('base64');
  return [
    value,
    Buffer.from(value).toString('base64'),
    Buffer.from(value).toString('base64url'),
    encodeURIComponent(value),
    basic.slice(8, 40),
  ];
}

/**
 * A remote MCP server (stateless Streamable HTTP) that hands back what it was sent: its request's
 * headers and URL, as text, as structured content (values and keys), and base64-encoded, the way a
 * careless or hostile server might.
 */
async function startReflectingServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const mcp = new McpServer({ name: 'reflect', version: '1.0.0' });
    mcp.registerTool(
      'reflect',
      { description: 'Returns the request it was sent.', inputSchema: {} },
      async (_args, extra) => {
        const headers = extra.requestInfo?.headers ?? {};
        const seen = `${req.url ?? ''} ${String(headers['x-api-key'])}`;
        return {
          content: [
            { type: 'text', text: `url=${req.url ?? ''} x-api-key=${String(headers['x-api-key'])}` },
            { type: 'text', text: `encoded: ${Buffer.from(seen).toString('base64')} ${encodeURIComponent(seen)}` },
          ],
          structuredContent: { headers, [String(headers['x-api-key'])]: 'key as a key' },
        };
      },
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    mcp
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('proof of no leak: secrets in history, status and logs', () => {
  let h: Harness;
  let dir: string;
  let fixturePid: number | undefined;
  let port: number;
  const secrets = {
    STDIO_SECRET: secret('stdio-'),
    WEB_TOKEN: secret('web-'),
    ANTHROPIC_API_KEY: secret('sk-ant-api03-'),
  };

  before(async () => {
    dir = await tempDir('dmcp-secrets-');
    h = await startHarness('secrets', { DMCP_MCP_ENV: 'WEB_TOKEN,STDIO_SECRET', ...secrets });
    const child = spawn(process.execPath, [httpFixture, 'http'], {
      env: { PATH: process.env.PATH, FIXTURE_EXPECT_TOKEN: secrets.WEB_TOKEN },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    fixturePid = child.pid;
    port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the HTTP fixture printed no port within 10 s')), 10_000);
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        const match = /\{"port":(\d+)\}/.exec(chunk);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      child.once('exit', (code) => reject(new Error(`the HTTP fixture exited with ${code}`)));
    });
  });
  after(async () => {
    if (fixturePid !== undefined) {
      try {
        process.kill(fixturePid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await h?.stop();
  });

  test('a full turn: each server gets only what it should, and no secret value is recorded, reported or logged', async () => {
    const file = join(dir, 'mcp.json');
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: {
          withSecret: {
            command: process.execPath,
            args: [slowStdio],
            envFrom: { MY_SECRET: 'STDIO_SECRET' },
            env: { FIXTURE_STDERR_VAR: 'MY_SECRET' },
          },
          plain: { command: process.execPath, args: [slowStdio] },
          leaky: {
            command: process.execPath,
            args: [slowStdio],
            envFrom: { MY_SECRET: 'STDIO_SECRET' },
            env: { FIXTURE_STDERR_VAR: 'MY_SECRET', FIXTURE_EXIT_AFTER_LEAK: '1' },
          },
          web: { url: `http://127.0.0.1:${port}/mcp`, bearerTokenEnv: 'WEB_TOKEN' },
        },
      }),
    );
    const sessionId = `secrets-${randomBytes(4).toString('hex')}`;
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
    const byName = Object.fromEntries(turn.status.servers.map((s) => [s.name, s]));
    for (const name of ['withSecret', 'plain', 'web'])
      assert.equal(byName[name]?.state, 'ready', `${name}: ${byName[name]?.error}`);
    // The leaky server printed the secret and exited: its start error carries its stderr, scrubbed.
    assert.equal(byName.leaky?.state, 'failed');
    assert.match(byName.leaky?.error ?? '', /MY_SECRET=\[redacted\]/);

    let n = 0;
    const call = async (name: string, args: Record<string, unknown> = {}) =>
      text(await turn.callTool({ id: `call-${++n}`, name, arguments: args }));

    assert.equal(await call('mcp__web__whoami'), 'token ok', 'the HTTP server received the bearer token');
    assert.equal(await call('mcp__withSecret__env', { name: 'MY_SECRET' }), 'set', 'envFrom reached the stdio server');
    assert.equal(
      await call('mcp__withSecret__echoEnv', { name: 'MY_SECRET' }),
      'value: [redacted]',
      'a secret a server hands back is scrubbed from its result',
    );
    const withSecretHashes = (await call('mcp__withSecret__envHashes')).split('\n');
    assert.ok(withSecretHashes.includes(sha256(secrets.STDIO_SECRET)), 'the stdio server holds the secret value');
    assert.ok(!withSecretHashes.includes(sha256(secrets.WEB_TOKEN)), 'but not the HTTP token');
    assert.ok(!withSecretHashes.includes(sha256(secrets.ANTHROPIC_API_KEY)), 'nor the provider key');

    for (const name of ['STDIO_SECRET', 'MY_SECRET', 'WEB_TOKEN', 'ANTHROPIC_API_KEY', 'DMCP_MCP_ENV']) {
      const expected = name === 'DMCP_MCP_ENV' ? 'set' : 'unset';
      assert.equal(await call('mcp__plain__env', { name }), expected, `plain server: ${name} is ${expected}`);
    }
    const plainHashes = new Set((await call('mcp__plain__envHashes')).split('\n'));
    for (const [name, value] of Object.entries(secrets)) {
      assert.ok(!plainHashes.has(sha256(value)), `the server without envFrom has no variable holding ${name}'s value`);
    }
    const result = await turn.end();
    assert.equal(result.calls.length, n);

    // --- history: raw JSON, base64-decoded data fields, and payloads decoded through the codecs
    const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
    const json = historyToJSON(history);
    const decodedBase64 = base64Fields(JSON.parse(json) as unknown);
    const converter = h.client.client.options.loadedDataConverter;
    const plain: string[] = [];
    for (const payload of payloads(history)) {
      let p = payload;
      for (const codec of [...converter.payloadCodecs].reverse()) [p] = (await codec.decode([p])) as [Payload];
      const encoding = Buffer.from(p.metadata?.encoding ?? new Uint8Array()).toString('utf8');
      assert.ok(PLAIN_ENCODINGS.has(encoding), `payload decoded to a searchable form (encoding ${encoding})`);
      plain.push(Buffer.from(p.data ?? new Uint8Array()).toString('utf8'));
      for (const value of Object.values(p.metadata ?? {})) plain.push(Buffer.from(value).toString('utf8'));
    }
    // The search must see the content, or finding nothing proves nothing.
    assert.ok(
      plain.some((t) => t.includes('token ok')),
      'decoded payloads hold the call outcomes',
    );
    assert.ok(
      plain.some((t) => t.includes('MY_SECRET=[redacted]')),
      'decoded payloads hold the status',
    );

    // --- status, twice: as the turn returned it and as the client reads it later
    const later = await h.client.getStatus(sessionId);
    assert.ok(later?.status, 'the status is readable after the turn');
    const statusTexts = [
      JSON.stringify(turn.status),
      turn.serversParagraph,
      JSON.stringify(later.status),
      JSON.stringify(result),
    ];

    // --- logs: the worker logged the server's stderr line, scrubbed
    const logs = h.logs.join('\n');
    assert.match(logs, /MY_SECRET=\[redacted\]/, 'the stderr line that printed the secret was logged, scrubbed');

    const places: Record<string, string[]> = {
      history: [json],
      base64: decodedBase64,
      payloads: plain,
      status: statusTexts,
      logs: h.logs,
      sdkLogs: runtimeLogs,
    };
    for (const [name, value] of Object.entries(secrets)) {
      for (const [place, texts] of Object.entries(places)) {
        for (const form of forms(value))
          assert.ok(!texts.some((t) => t.includes(form)), `${name} (as ${form.slice(0, 12)}...) appears in ${place}`);
      }
    }
  });
  test("a remote server's own header values and URL token never reach history, even when it sends them back", async () => {
    const headerValue = secret('hdr-');
    const queryToken = secret('qry-');
    const reflecting = await startReflectingServer();
    try {
      const file = join(dir, 'reflect.json');
      await writeFile(
        file,
        JSON.stringify({
          mcpServers: {
            reflect: {
              url: `http://127.0.0.1:${reflecting.port}/mcp?key=${queryToken}`,
              headers: { 'X-Api-Key': headerValue },
            },
          },
        }),
      );
      const sessionId = `secrets-remote-${randomBytes(4).toString('hex')}`;
      const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
      assert.equal(turn.status.servers[0]?.state, 'ready', turn.status.servers[0]?.error);
      const outcome = await turn.callTool({ id: 'reflect-1', name: 'mcp__reflect__reflect', arguments: {} });
      const shown = text(outcome);
      // The server did send them: what arrived is the scrubbed form, so finding nothing proves something.
      assert.match(shown, /url=\/mcp\?key=\[redacted\] x-api-key=\[redacted\]/);
      await turn.end();
      const history = await h.client.client.workflow.getHandle(turn.turnId).fetchHistory();
      const json = historyToJSON(history);
      const decoded = base64Fields(JSON.parse(json) as unknown);
      for (const [name, value] of Object.entries({ headerValue, queryToken })) {
        for (const form of forms(value)) {
          assert.ok(
            !json.includes(form) && !decoded.some((t) => t.includes(form)),
            `${name} (as ${form.slice(0, 12)}...) appears in history`,
          );
          assert.ok(!JSON.stringify(outcome).includes(form), `${name} appears in the outcome`);
        }
      }
    } finally {
      reflecting.server.closeAllConnections();
      reflecting.server.close();
    }
  });

  test("the Temporal SDK's own log stream goes through the same scrubbing", () => {
    const before = runtimeLogs.length;
    // What the SDK logs (activity failures, workflow task errors) may quote a secret in its message or meta.
    Runtime.instance().logger.warn(`sdk says ${secrets.ANTHROPIC_API_KEY}`, {
      token: secrets.WEB_TOKEN,
      nested: { [secrets.STDIO_SECRET]: [Buffer.from(secrets.WEB_TOKEN).toString('base64')] },
      error: new Error(`failed with ${secrets.STDIO_SECRET}`),
    });
    const lines = runtimeLogs.slice(before);
    assert.equal(lines.length, 1, 'the SDK log line was captured');
    assert.match(lines[0]!, /sdk says \[redacted\]/);
    for (const [name, value] of Object.entries(secrets)) {
      for (const form of forms(value))
        assert.ok(!runtimeLogs.some((l) => l.includes(form)), `${name} appears in the SDK log`);
    }
  });
});
