/**
 * Sessions end cleanly, and roots only where a turn named its workspace: `durable-mcp run` against
 * a running worker (TEMPORAL_ADDRESS), TurnClient and the HTTP API, with real MCP servers: the
 * Streamable HTTP fixture (it logs the DELETE that ends its session), the stdio echo fixture (its
 * PID is watched) and @modelcontextprotocol/server-filesystem given a directory of its own.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type RunningApi } from '../../api/server.js';
import { TurnClient } from '../../client/turnClient.js';
import { ensureTurnKey } from '../../config/load.js';
import type { CallOutcome } from '../../contract/index.js';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { loadSettings } from '../../settings/index.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import {
  fixtureServer,
  isAlive,
  readLines,
  runCli,
  startHarness,
  tempDir,
  temporalAddress,
  waitFor,
  writeMcpJson,
  type Harness,
} from '../support/harness.js';

const filesystemServer = fileURLToPath(
  new URL('../../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url),
);
const httpFixture = fileURLToPath(new URL('../fixtures/httpFixtureServer.js', import.meta.url));
const TOKEN = 'sessions-test-token-0123456789';

function text(outcome: CallOutcome): string {
  return outcome.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

interface Json {
  [key: string]: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('sessions end cleanly; roots only where the turn named its workspace', { timeout: 300_000 }, () => {
  let h: Harness;
  let client: TurnClient;
  let dataDir: string;
  let docs: string;
  let workspace: string;
  let cliEnv: NodeJS.ProcessEnv;
  let api: RunningApi;
  const started: number[] = [];
  let counter = 0;
  const session = (name: string) => `sess-${name}-${process.pid}-${Date.now()}-${++counter}`;
  const echoSpec = `echo:${process.execPath} ${fixtureServer}`;
  const fsSpec = () => `fs:${process.execPath} ${filesystemServer} ${docs}`;

  /** The Streamable HTTP fixture with its event log; resolves with its URL and the log file. */
  async function httpServer(): Promise<{ url: string; log: string }> {
    const log = join(dataDir, `http-${++counter}.log`);
    const child = spawn(process.execPath, [httpFixture], {
      env: { PATH: process.env.PATH, FIXTURE_LOG: log },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    started.push(child.pid!);
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('the HTTP fixture printed no port within 10 s')), 10_000);
      child.stdout.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        const m = /\{"port":(\d+)\}/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      });
    });
    return { url: `http://127.0.0.1:${port}/mcp`, log };
  }

  const events = async (log: string) =>
    (await readLines(log).catch(() => [])).map((l) => JSON.parse(l) as { event: string; session?: string });

  before(async () => {
    dataDir = await realpath(await tempDir('dmcp-sessions-'));
    docs = await realpath(await tempDir('dmcp-sessions-docs-'));
    workspace = await realpath(await tempDir('dmcp-sessions-ws-'));
    await writeFile(join(docs, 'a.txt'), 'in the docs the operator gave the server');
    await writeFile(join(workspace, 'w.txt'), 'in the workspace');
    const turnKey = await ensureTurnKey(dataDir);
    // The worker, the CLI and the client share the data dir: its turn key signs what a turn names.
    h = await startHarness(
      'sessions',
      { DMCP_DATA_DIR: dataDir },
      { dataConverter: dataConverterFor(loadSettings({ DMCP_DATA_DIR: dataDir })) },
    );
    client = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, turnKey });
    cliEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: temporalAddress(),
      DMCP_TASK_QUEUE: h.taskQueue,
      DMCP_DATA_DIR: dataDir,
      DMCP_NO_USER_CONFIG: '1',
    };
    api = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'silent' }),
      turns: client,
      tokens: parseTokens(`${hashToken(TOKEN)} sess-api-`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: true, allowedConfigDirs: [], workspaceRoots: [] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 20_000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
    });
  });
  after(async () => {
    await api?.close();
    for (const pid of started) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await h?.stop();
  });

  test('run without --workspace: server-filesystem keeps the directory its command line gave it', async () => {
    const call = `mcp__fs__read_text_file ${JSON.stringify({ path: join(docs, 'a.txt') })}`;
    const r = await runCli(
      ['run', '--json', '--mcp', fsSpec(), '--call', call, '--call', 'mcp__fs__list_allowed_directories {}'],
      cliEnv,
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout) as { calls: { outcome: CallOutcome }[] };
    assert.equal(text(out.calls[0]!.outcome), 'in the docs the operator gave the server');
    assert.equal(text(out.calls[1]!.outcome).trim(), `Allowed directories:\n${docs}`);
  });

  test('a named workspace is offered as the root; an entry with "roots": false is never offered one', async () => {
    const named = await client.startTurn({
      sessionId: session('named'),
      workspace,
      servers: { inlineSpecs: [fsSpec()] },
    });
    const allowed = await named.callTool({ id: 'l', name: 'mcp__fs__list_allowed_directories', arguments: {} });
    assert.equal(text(allowed).trim(), `Allowed directories:\n${workspace}`);
    await named.end({ endSession: true });

    const file = join(dataDir, 'no-roots.json');
    await writeMcpJson(file, { fs: { command: process.execPath, args: [filesystemServer, docs], roots: false } });
    const kept = await client.startTurn({
      sessionId: session('no-roots'),
      workspace,
      servers: { mcpConfigFiles: [file] },
    });
    assert.equal(kept.status.servers[0]?.state, 'ready', JSON.stringify(kept.status.servers[0]));
    const dirs = await kept.callTool({ id: 'l', name: 'mcp__fs__list_allowed_directories', arguments: {} });
    assert.equal(text(dirs).trim(), `Allowed directories:\n${docs}`);
    const read = await kept.callTool({
      id: 'r',
      name: 'mcp__fs__read_text_file',
      arguments: { path: join(docs, 'a.txt') },
    });
    assert.equal(text(read), 'in the docs the operator gave the server');
    const refused = await kept.callTool({
      id: 'w',
      name: 'mcp__fs__read_text_file',
      arguments: { path: join(workspace, 'w.txt') },
    });
    assert.equal(refused.isError, true, 'the workspace was not offered');
    await kept.end({ endSession: true });
  });

  test('run exiting ends the session it made: the remote server sees its DELETE; a named session is kept', async () => {
    const web = await httpServer();
    const file = join(dataDir, 'web.json');
    await writeMcpJson(file, { web: { type: 'http', url: web.url } });
    const r = await runCli(['run', '--json', '--mcp-config', file, '--call', 'mcp__web__echo {"text":"hi"}'], cliEnv);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const { sessionId } = JSON.parse(r.stdout) as { sessionId: string };
    const ended = await waitFor(async () => (await events(web.log)).some((e) => e.event === 'delete'), 5000);
    assert.ok(ended, `DELETE within 5 s of run exiting: ${JSON.stringify(await events(web.log))}`);
    const [initialized] = (await events(web.log)).filter((e) => e.event === 'initialized');
    assert.deepEqual(
      (await events(web.log)).filter((e) => e.event === 'delete').map((e) => e.session),
      [initialized!.session],
    );
    assert.deepEqual(h.worker.pool.pids(sessionId), {}, 'the worker holds nothing for it');

    const kept = session('kept');
    const again = await runCli(
      ['run', '--session', kept, '--mcp-config', file, '--call', 'mcp__web__echo {"text":"hi"}'],
      cliEnv,
    );
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.deepEqual(
      Object.keys(h.worker.pool.pids(kept)),
      ['web'],
      'a named session keeps its servers for its next turn',
    );
    const deletesBefore = (await events(web.log)).filter((e) => e.event === 'delete').length;
    const end = await runCli(['session', 'end', kept, '--json'], cliEnv);
    assert.equal(end.code, 0, end.stdout + end.stderr);
    assert.deepEqual(JSON.parse(end.stdout), { sessionId: kept, turnsEnded: [], workers: 1, servers: 1 });
    assert.equal(
      (await events(web.log)).filter((e) => e.event === 'delete').length,
      deletesBefore + 1,
      'durable-mcp session end sent the DELETE',
    );
    let shown = '';
    for (let i = 0; i < 5 && !/session ended at/.test(shown); i += 1) {
      const status = await runCli(['status', kept], cliEnv);
      assert.equal(status.code, 0, status.stdout + status.stderr);
      shown = status.stdout;
    }
    assert.match(shown, /^ {2}session ended at \S+: its servers were stopped; its next turn starts them again$/m);
    assert.doesNotMatch(shown, /\[ready\]/, 'no server shown as ready after the end');
  });

  test("TurnClient.endSession ends the open turn and stops its stdio server; then a closed session's", async () => {
    const sessionId = session('client');
    const turn = await client.startTurn({ sessionId, servers: { inlineSpecs: [echoSpec] } });
    const pid = turn.status.servers[0]?.pid;
    assert.ok(pid && isAlive(pid), JSON.stringify(turn.status.servers[0]));
    const ended = await client.endSession(sessionId);
    assert.deepEqual(ended.turnsEnded, [turn.turnId]);
    assert.ok(await waitFor(() => !isAlive(pid), 5000), `server process ${pid} gone`);
    assert.equal((await turn.handle.result()).endedBy, 'endTurn');
    // Visibility lags a little behind the end: the status says the servers were stopped once it shows it.
    assert.ok(
      await waitFor(async () => (await client.getStatus(sessionId))?.sessionEndedAt !== undefined, 5000),
      'the status says the session was ended after its latest turn',
    );

    // A closed batch turn's servers wait for the next turn; ending the session stops them at once.
    const batch = await client.runBatch({
      sessionId,
      servers: { inlineSpecs: [echoSpec] },
      calls: [[{ id: 'c1', name: 'mcp__echo__echo', arguments: { text: 'x' } }]],
    });
    assert.equal(batch.calls[0]?.outcome.status, 'ok');
    const second = h.worker.pool.pids(sessionId).echo;
    assert.ok(second && second !== pid && isAlive(second));
    assert.ok(
      await waitFor(async () => (await client.getStatus(sessionId))?.sessionEndedAt === undefined, 5000),
      'a turn after the end: its status stands again',
    );
    const again = await client.endSession(sessionId);
    assert.deepEqual(
      { ...again, turnsEnded: again.turnsEnded.length },
      { sessionId, turnsEnded: 0, workers: 1, servers: 1 },
    );
    assert.ok(await waitFor(() => !isAlive(second), 5000), `server process ${second} gone`);
    const nothing = await client.endSession(sessionId);
    assert.equal(nothing.servers, 0, 'ending again stops nothing');
  });

  test("the API ends a session (POST /sessions/{id}/end), within the token's prefixes only", async () => {
    const sessionId = session('api').replace(/^sess-/, 'sess-api-');
    const turn = await client.startTurn({ sessionId, servers: { inlineSpecs: [echoSpec] } });
    const pid = turn.status.servers[0]?.pid;
    assert.ok(pid && isAlive(pid));
    const post = async (path: string) => {
      const res = await fetch(`${api.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const other = await post(`/api/v1/sessions/${session('other')}/end`);
    assert.equal(other.status, 403, JSON.stringify(other.body));
    const res = await post(`/api/v1/sessions/${sessionId}/end`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.turnsEnded, [turn.turnId]);
    assert.ok(await waitFor(() => !isAlive(pid), 5000), `server process ${pid} gone`);
  });
});
