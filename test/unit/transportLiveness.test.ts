/**
 * ManagedServer against a real HTTP/SSE fixture process, without Temporal: how a vanished or
 * frozen server is noticed, and that a healthy slow call is left alone.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import type { ServerEntry } from '../../config/types.js';
import { ManagedServer } from '../../mcp/managedServer.js';
import { ConnectionLostError } from '../../mcp/serverErrors.js';

const httpFixture = fileURLToPath(new URL('../fixtures/httpFixtureServer.js', import.meta.url));
const started = new Set<number>();

async function startFixture(mode: 'http' | 'sse'): Promise<{ pid: number; url: string }> {
  const child = spawn(process.execPath, [httpFixture, mode], {
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const pid = child.pid!;
  started.add(pid);
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no port within 10 s')), 10_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const match = /\{"port":(\d+)\}/.exec(chunk);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
  });
  return { pid, url: `http://127.0.0.1:${port}/${mode === 'sse' ? 'sse' : 'mcp'}` };
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

function managed(type: 'http' | 'sse', url: string): ManagedServer {
  const entry: ServerEntry = {
    name: 'web',
    layer: 'explicit',
    source: 'test',
    trusted: true,
    type,
    url,
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
    clientVersion: 'test',
    livenessIntervalMs: 100,
    livenessTimeoutMs: 300,
  });
}

async function waitUntil(check: () => boolean, timeoutMs: number): Promise<number> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - start;
}

describe('ManagedServer notices a lost remote server', () => {
  after(() => {
    for (const pid of started) {
      signal(pid, 'SIGCONT');
      signal(pid, 'SIGKILL');
    }
  });

  for (const type of ['http', 'sse'] as const) {
    test(`${type}: a frozen server (no RST, no answers) fails the call after three unanswered pings`, async () => {
      const fixture = await startFixture(type);
      const server = managed(type, fixture.url);
      await server.start();
      assert.equal(server.state, 'ready', server.error);
      const call = server.callTool('slow', { ms: 30_000 }, { timeoutMs: 60_000 });
      const outcome = call.then(
        () => 'answered',
        (err: unknown) => err,
      );
      await new Promise((r) => setTimeout(r, 150));
      const frozenAt = Date.now();
      signal(fixture.pid, 'SIGSTOP');
      const err = await outcome;
      const tookMs = Date.now() - frozenAt;
      assert.ok(err instanceof ConnectionLostError, `lost, got ${String(err)}`);
      assert.match(err.message, /connection to MCP server "web" lost: no answer to 3 pings of 0\.3s/);
      process.stderr.write(`# ${type}: frozen server noticed after ${tookMs} ms\n`);
      assert.ok(tookMs < 3000, `noticed after ${tookMs} ms`);
      assert.equal(server.state, 'failed');
      assert.equal(server.wasReady, true, 'counts as crashed, so reconciliation restarts it');
      assert.match(server.error ?? '', /^connection lost: /);
      signal(fixture.pid, 'SIGCONT');
      signal(fixture.pid, 'SIGKILL');
      await server.stop();
    });

    test(`${type}: a server killed between calls is marked failed without waiting for a call`, async () => {
      const fixture = await startFixture(type);
      const server = managed(type, fixture.url);
      await server.start();
      assert.equal(server.state, 'ready', server.error);
      signal(fixture.pid, 'SIGKILL');
      const tookMs = await waitUntil(() => server.state === 'failed', 5000);
      assert.ok(server.wasReady);
      assert.match(server.error ?? '', /connection lost: /);
      process.stderr.write(`# ${type}: idle server loss noticed after ${tookMs} ms (${server.error})\n`);
      await server.stop();
    });

    test(`${type}: a healthy slow call is not mistaken for a lost connection`, async () => {
      const fixture = await startFixture(type);
      const server = managed(type, fixture.url);
      await server.start();
      const result = await server.callTool('slow', { ms: 1500 }, { timeoutMs: 60_000 });
      assert.deepEqual(result.content, [{ type: 'text', text: 'slept 1500 ms' }]);
      assert.equal(server.state, 'ready');
      await server.stop();
      signal(fixture.pid, 'SIGKILL');
    });
  }
});
