import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import {
  configFiles,
  everythingServer,
  type Harness,
  readLines,
  serverStatus,
  startHarness,
  tempDir,
} from '../support/harness.js';
import { printedPort } from '../support/printedPort.js';

const httpFixture = fileURLToPath(new URL('../fixtures/httpFixtureServer.js', import.meta.url));
const slowStdio = fileURLToPath(new URL('../fixtures/slowStdioServer.js', import.meta.url));
const loopbackOnly = fileURLToPath(new URL('../fixtures/loopbackOnly.js', import.meta.url));

/** A server process the test started; killed by PID in after() if the test did not. */
interface Started {
  pid: number;
  port: number;
}

const started = new Set<number>();

/** Starts `node ...args` and waits for the `{"port":N}` line it prints once listening. */
async function startListening(args: string[], env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${args.join(' ')}`);
  started.add(child.pid);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-2000)));
  const port = await printedPort(child, args.join(' '), () => `; stderr: ${stderr}`);
  return { pid: child.pid, port };
}

/** SIGKILLs a process the test started; returns when it is gone. */
async function killStarted(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
  started.delete(pid);
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await sleep(10);
  }
}

function killAllStarted(): void {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  started.clear();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitForLine(
  read: () => Promise<string[]> | string[],
  pattern: RegExp,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await read()).some((l) => pattern.test(l))) return;
    await sleep(25);
  }
  throw new Error(`no line matching ${pattern} within ${timeoutMs} ms`);
}

describe('Streamable HTTP and SSE transports, and transport loss', () => {
  let h: Harness;
  let dir: string;
  const token = randomBytes(24).toString('hex');
  const wrongToken = randomBytes(24).toString('hex');

  before(async () => {
    dir = await tempDir('dmcp-transports-');
    config = configFiles(dir);
    h = await startHarness('transports', {
      DMCP_MCP_ENV: 'WEB_TOKEN,WRONG_TOKEN',
      WEB_TOKEN: token,
      WRONG_TOKEN: wrongToken,
    });
  });
  after(async () => {
    killAllStarted();
    await h?.stop();
  });

  let config: (mcpServers: Record<string, unknown>) => Promise<string>;

  function session(name: string): string {
    return `${name}-${randomBytes(4).toString('hex')}`;
  }

  for (const mode of ['streamableHttp', 'sse'] as const) {
    test(`server-everything over ${mode}, bound to 127.0.0.1: tools listed, echo works, transport in the status`, async () => {
      const server = await startListening(['--import', loopbackOnly, everythingServer, mode], { PORT: '0' });
      const type = mode === 'sse' ? 'sse' : 'http';
      const url = `http://127.0.0.1:${server.port}/${mode === 'sse' ? 'sse' : 'mcp'}`;
      const file = await config({ everything: { type, url } });
      const turn = await h.client.startTurn({
        sessionId: session(`everything-${type}`),
        workspace: dir,
        servers: { mcpConfigFiles: [file] },
      });
      const status = serverStatus(turn.status.servers, 'everything');
      assert.equal(status.state, 'ready', status.error);
      assert.equal(status.transport, type);
      assert.ok(turn.tools.length >= 5, `tools listed: ${turn.tools.map((t) => t.name).join(', ')}`);
      assert.ok(turn.tools.some((t) => t.name === 'mcp__everything__echo'));
      const outcome = await turn.callTool({
        id: 'echo-1',
        name: 'mcp__everything__echo',
        arguments: { message: `hello over ${type}` },
      });
      assert.equal(outcome.status, 'ok', outcome.errorMessage);
      assert.deepEqual(outcome.content, [{ type: 'text', text: `Echo: hello over ${type}` }]);
      await turn.end();
      await killStarted(server.pid);
    });
  }

  for (const mode of ['http', 'sse'] as const) {
    test(`fixture over ${mode}: the bearer token arrives, and stopping the session ends it`, async () => {
      const log = join(dir, `fixture-${mode}-${randomBytes(3).toString('hex')}.log`);
      const server = await startListening([httpFixture, mode], { FIXTURE_EXPECT_TOKEN: token, FIXTURE_LOG: log });
      const url = `http://127.0.0.1:${server.port}/${mode === 'sse' ? 'sse' : 'mcp'}`;
      const file = await config({
        web: { type: mode, url, bearerTokenEnv: 'WEB_TOKEN', headers: { 'X-Fixture': 'transports-test' } },
      });
      const sessionId = session(`fixture-${mode}`);
      const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
      assert.equal(
        serverStatus(turn.status.servers, 'web').state,
        'ready',
        serverStatus(turn.status.servers, 'web').error,
      );
      const outcome = await turn.callTool({ id: 'whoami-1', name: 'mcp__web__whoami', arguments: {} });
      assert.deepEqual(outcome.content, [{ type: 'text', text: 'token ok' }]);
      await turn.end();

      await h.worker.pool.stopSession(sessionId);
      const events = (await readLines(log)).map((l) => JSON.parse(l) as { event: string; session?: string });
      const initialized = events.filter((e) => e.event === 'initialized');
      assert.equal(initialized.length, 1, 'one session for the whole turn');
      if (mode === 'http') {
        assert.deepEqual(
          events.filter((e) => e.event === 'delete').map((e) => e.session),
          [initialized[0]!.session],
          'the session was ended with DELETE',
        );
      }
      await killStarted(server.pid);
    });
  }

  for (const mode of ['http', 'sse'] as const) {
    test(`fixture over ${mode}: a refused token shows as HTTP 401 in the status, without the token`, async () => {
      const server = await startListening([httpFixture, mode], { FIXTURE_EXPECT_TOKEN: token });
      const url = `http://127.0.0.1:${server.port}/${mode === 'sse' ? 'sse' : 'mcp'}`;
      const file = await config({
        anonymous: { type: mode, url },
        wrong: { type: mode, url, bearerTokenEnv: 'WRONG_TOKEN' },
        right: { type: mode, url, bearerTokenEnv: 'WEB_TOKEN' },
      });
      const turn = await h.client.startTurn({
        sessionId: session(`refused-${mode}`),
        workspace: dir,
        servers: { mcpConfigFiles: [file] },
      });
      for (const name of ['anonymous', 'wrong']) {
        const status = serverStatus(turn.status.servers, name);
        assert.equal(status.state, 'failed');
        assert.match(status.error ?? '', /HTTP 401: unauthorized/);
      }
      assert.equal(
        serverStatus(turn.status.servers, 'right').state,
        'ready',
        'one refused server does not affect another',
      );
      assert.match(turn.serversParagraph, /HTTP 401: unauthorized/);
      const everything = JSON.stringify(turn.status) + turn.serversParagraph;
      assert.ok(!everything.includes(wrongToken) && !everything.includes(token), 'no token in the status');
      await turn.end();
      await killStarted(server.pid);
    });
  }

  test('a server that is not listening shows as connection refused', async () => {
    const port = await freePort();
    const file = await config({
      gone: { url: `http://127.0.0.1:${port}/mcp` },
      goneSse: { type: 'sse', url: `http://127.0.0.1:${port}/sse` },
    });
    const turn = await h.client.startTurn({
      sessionId: session('refused'),
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    for (const name of ['gone', 'goneSse']) {
      const status = serverStatus(turn.status.servers, name);
      assert.equal(status.state, 'failed');
      assert.match(status.error ?? '', /connection refused/);
    }
    await turn.end();
  });

  for (const mode of ['http', 'sse'] as const) {
    test(`killing the ${mode} server mid-call fails the call within 5 s (tool timeout 60 s), and the next turn reconnects`, async () => {
      const log = join(dir, `kill-${mode}-${randomBytes(3).toString('hex')}.log`);
      const first = await startListening([httpFixture, mode], { FIXTURE_LOG: log });
      const url = `http://127.0.0.1:${first.port}/${mode === 'sse' ? 'sse' : 'mcp'}`;
      const file = await config({ web: { type: mode, url } });
      const sessionId = session(`kill-${mode}`);
      const turn = await h.client.startTurn({
        sessionId,
        workspace: dir,
        servers: { mcpConfigFiles: [file] },
        limits: { toolTimeoutMs: 60_000 },
      });
      assert.equal(serverStatus(turn.status.servers, 'web').state, 'ready');

      const callStart = Date.now();
      const pending = turn
        .callTool({ id: 'slow-1', name: 'mcp__web__slow', arguments: { ms: 50_000 } })
        .then((o) => ({ outcome: o, at: Date.now() }));
      await waitForLine(() => readLines(log), /slow-started/, 15_000);
      const killedAt = Date.now();
      await killStarted(first.pid);
      const { outcome, at } = await pending;
      const detectMs = at - killedAt;
      process.stderr.write(
        `# ${mode}: call failed ${detectMs} ms after the kill (${at - callStart} ms after it started)\n`,
      );
      assert.equal(outcome.status, 'error');
      assert.match(outcome.errorMessage ?? '', /connection to MCP server "web" lost/);
      assert.ok(detectMs < 5000, `failed ${detectMs} ms after the kill`);
      assert.ok(at - callStart < 60_000 / 4, 'well before the tool timeout');
      await turn.end();

      // The server counts as crashed: the next turn restarts it (a new server on the same port).
      const second = await startListening([httpFixture, mode], { FIXTURE_PORT: String(first.port) });
      const next = await h.client.startTurn({ sessionId, workspace: dir, servers: { mcpConfigFiles: [file] } });
      assert.equal(
        serverStatus(next.status.servers, 'web').state,
        'ready',
        serverStatus(next.status.servers, 'web').error,
      );
      const echo = await next.callTool({ id: 'echo-after', name: 'mcp__web__echo', arguments: { text: 'back' } });
      assert.deepEqual(echo.content, [{ type: 'text', text: 'back' }]);
      await next.end();
      await killStarted(second.pid);
    });
  }

  test('killing a stdio server mid-call fails the call within 1 s', async () => {
    const file = await config({ slow: { command: process.execPath, args: [slowStdio] } });
    const sessionId = session('kill-stdio');
    const turn = await h.client.startTurn({
      sessionId,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
      limits: { toolTimeoutMs: 60_000 },
    });
    const status = serverStatus(turn.status.servers, 'slow');
    assert.equal(status.state, 'ready');
    assert.ok(status.pid, 'stdio servers report their PID');
    const logsBefore = h.logs.length;
    const pending = turn
      .callTool({ id: 'slow-1', name: 'mcp__slow__slow', arguments: { ms: 50_000 } })
      .then((o) => ({ outcome: o, at: Date.now() }));
    await waitForLine(() => h.logs.slice(logsBefore), /slow call started/, 15_000);
    const killedAt = Date.now();
    process.kill(status.pid, 'SIGKILL');
    const { outcome, at } = await pending;
    const detectMs = at - killedAt;
    process.stderr.write(`# stdio: call failed ${detectMs} ms after the kill\n`);
    assert.equal(outcome.status, 'error');
    assert.match(outcome.errorMessage ?? '', /connection to MCP server "slow" lost: exited on SIGKILL/);
    assert.ok(detectMs < 1000, `failed ${detectMs} ms after the kill`);
    await turn.end();
  });
});
