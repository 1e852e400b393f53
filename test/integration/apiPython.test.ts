/**
 * The Python example client (examples/python/drive_turn.py, standard library only) drives one turn
 * end to end against a real API, worker and MCP server; the fixture counts what ran.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { startApiServer, type RunningApi } from '../../api/server.js';
import { dataDirToken, ensureApiToken } from '../../api/tokenFile.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { fixtureServer, readLines, startHarness, tempDir, type Harness } from '../support/harness.js';

const script = fileURLToPath(new URL('../../../examples/python/drive_turn.py', import.meta.url));
const run = promisify(execFile);

describe('the Python example client', () => {
  let h: Harness;
  let api: RunningApi;
  let dir: string;
  let execLog: string;
  let dataDir: string;
  const logs: string[] = [];
  before(async () => {
    dir = await tempDir('dmcp-api-py-');
    execLog = join(dir, 'executions.log');
    h = await startHarness('api-python', { FIXTURE_LOG: execLog });
    // As `durable-mcp dev` serves: with the token it wrote into its data dir, where the example finds it.
    dataDir = join(dir, 'data');
    api = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'info' }, { write: (l: string) => void logs.push(l) }),
      turns: h.client,
      tokens: [dataDirToken(await ensureApiToken(dataDir))],
      boundary: { allowInline: true, allowedConfigDirs: [], workspaceRoots: [dir] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 300,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
    });
  });
  after(async () => {
    await api?.close();
    await h?.stop();
  });

  test('drives one turn: tools listed, calls answered (one through 202 and polling), turn ended', async () => {
    const sessionId = `api-python-${Date.now()}`;
    const { stdout, stderr } = await run(
      'python3',
      [
        script,
        '--api',
        api.url,
        '--session',
        sessionId,
        '--workspace',
        dir,
        '--mcp',
        `fixture:${process.execPath} ${fixtureServer}`,
        '--call',
        'mcp__fixture__echo {"text": "from python"}',
        '--call',
        'mcp__fixture__slow {"ms": 900, "tag": "python-slow"}',
      ],
      { timeout: 60_000, env: { PATH: process.env.PATH ?? '', DMCP_DATA_DIR: dataDir } },
    );
    assert.equal(stderr, '');
    const lines = stdout.split('\n');
    assert.equal(lines[0], `turn ${sessionId}/turn-1`);
    assert.match(stdout, /tools: .*mcp__fixture__echo/);
    assert.match(stdout, /call-1 mcp__fixture__echo: ok\n<toolOutput>\s*from python\s*<\/toolOutput>/);
    assert.match(stdout, /call-2 mcp__fixture__slow: ok\n<toolOutput>\s*slept 900 ms\s*<\/toolOutput>/);
    assert.match(stdout, /ended by endTurn after 2 call\(s\)/);
    const ran = (await readLines(execLog)).map((l) => JSON.parse(l) as { tool: string });
    assert.deepEqual(
      ran.map((r) => r.tool),
      ['echo', 'slow'],
      'each call ran once',
    );
    const answers = logs
      .map((l) => JSON.parse(l) as { method: string; path: string; status: number })
      .filter((l) => l.path?.endsWith('/calls') || l.path?.includes('/calls/'));
    assert.ok(
      answers.some((l) => l.method === 'POST' && l.status === 202),
      'the slow call was answered 202',
    );
    assert.ok(
      answers.some((l) => l.method === 'GET' && l.status === 200),
      'and its outcome polled',
    );
    const transcript = await h.client.transcript(`${sessionId}/turn-1`);
    assert.equal(transcript.endedBy, 'endTurn');
  });

  test('an error answer is printed with its code, exit status 1', async () => {
    await assert.rejects(
      run('python3', [script, '--api', api.url, '--session', 'bad session', '--workspace', dir], {
        timeout: 30_000,
        env: { PATH: process.env.PATH ?? '', DMCP_DATA_DIR: dataDir },
      }),
      (err: { code: number; stderr: string }) =>
        err.code === 1 && /error: HTTP 400 bad_request: path\.sessionId/.test(err.stderr),
    );
  });

  test('without the token file (another data dir) the API answers 401, and the example says so', async () => {
    await assert.rejects(
      run('python3', [script, '--api', api.url, '--session', 'api-python-none', '--workspace', dir], {
        timeout: 30_000,
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', DMCP_DATA_DIR: join(dir, 'elsewhere') },
      }),
      (err: { code: number; stderr: string }) => err.code === 1 && /error: HTTP 401 unauthorized/.test(err.stderr),
    );
  });
});
