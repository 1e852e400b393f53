/**
 * `durable-mcp mcp ...` end to end: the real CLI process against the test run's Temporal server
 * (TEMPORAL_ADDRESS) with a real worker on the test's own queue, real MCP servers to probe (and an
 * OAuth-protected one to log in to), on a fresh machine (no TEMPORAL_ADDRESS, no `dev`: the embedded
 * server and worker), and next to a running `durable-mcp dev` and its HTTP API.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { ensureTurnKey } from '../../config/load.js';
import { dataConverterFor } from '../../payloads/dataConverter.js';
import { loadSettings } from '../../settings/index.js';
import {
  cliScript as cli,
  killGroups,
  runCli,
  startHarness,
  temporalAddress,
  tempDir,
  waitUntil,
  type Harness,
} from '../support/harness.js';

const httpFixture = fileURLToPath(new URL('../fixtures/httpFixtureServer.js', import.meta.url));
const oauthFixture = fileURLToPath(new URL('../fixtures/oauthServer.js', import.meta.url));

const started = new Set<number>();

/** Starts the HTTP fixture server and waits for its port. */
async function startFixture(mode: 'http' | 'sse', env: NodeJS.ProcessEnv = {}): Promise<number> {
  const child = spawn(process.execPath, [httpFixture, mode], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  started.add(child.pid!);
  return new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('fixture did not start in 10 s')), 10_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`fixture exited with ${code}`)));
  });
}

/** Starts the OAuth-protected MCP fixture (consent is automatic) and waits for its addresses. */
async function startOAuthFixture(): Promise<{ url: string }> {
  const child = spawn(process.execPath, [oauthFixture], {
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  started.add(child.pid!);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('OAuth fixture did not start in 10 s')), 10_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.startsWith('{') && l.includes('"url"'));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line) as { url: string });
      }
    });
    child.once('exit', (code) => reject(new Error(`OAuth fixture exited with ${code}`)));
  });
}

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('durable-mcp mcp against TEMPORAL_ADDRESS with a worker on its queue', { timeout: 240_000 }, () => {
  let harness: Harness;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  const mcp = (...args: string[]) => runCli(['mcp', ...args], env);
  let ports: { open: number; locked: number; sse: number; closed: number };

  before(async () => {
    dataDir = await tempDir('dmcp-shelf-cli-');
    // The worker reads what the CLI writes: the same data converter, as in a deployment.
    harness = await startHarness(
      'shelf-cli',
      {},
      { dataConverter: dataConverterFor(loadSettings({ DMCP_DATA_DIR: dataDir })) },
    );
    // The workers' key: a cluster's CLI signs with the same file.
    await ensureTurnKey(dataDir);
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: temporalAddress(),
      DMCP_TASK_QUEUE: harness.taskQueue,
      DMCP_DATA_DIR: dataDir,
      DMCP_NO_USER_CONFIG: '1',
    };
    ports = {
      open: await startFixture('http'),
      locked: await startFixture('http', { FIXTURE_EXPECT_TOKEN: 'fixture-token-123' }),
      sse: await startFixture('sse'),
      closed: await closedPort(),
    };
  });
  after(async () => {
    for (const pid of started) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await harness?.stop();
  });

  test('add, grant, list with each state, drop, forget and the log', async () => {
    const open = `http://127.0.0.1:${ports.open}/mcp`;
    const added = await mcp('add', 'docs', open, '--agent', 'support-bot', '--header', 'X-Team: core');
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stdout,
      new RegExp(
        `^added docs \\(http ${open.replace(/[.]/g, '\\.')}\\); granted to support-bot \\(shelf version 1\\)$`,
        'm',
      ),
    );
    const again = await mcp('add', 'docs', open, '--agent', 'support-bot', '--header', 'X-Team: core');
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      /^docs is on the shelf already with this entry and granted to support-bot; nothing changed$/m,
    );
    const helper = await mcp('add', 'docs', open, '--agent', 'helper', '--header', 'X-Team: core');
    assert.match(
      helper.stdout,
      /^docs is on the shelf already with this entry; granted to helper \(shelf version 2\)$/m,
    );

    for (const args of [
      ['add', 'locked', `http://127.0.0.1:${ports.locked}/mcp`, '--agent', 'support-bot'],
      ['add', 'stream', 'sse', `http://127.0.0.1:${ports.sse}/sse`, '--agent', 'triage'],
      ['add', 'gone', `http://127.0.0.1:${ports.closed}/mcp`, '--agent', 'triage'],
      [
        'add',
        'files',
        '--agent',
        'support-bot',
        '--agent',
        'triage',
        '--env',
        'GITHUB_TOKEN=${GITHUB_TOKEN}',
        '--',
        process.execPath,
        '--version',
        '--agent',
        'x',
      ],
      ['add', 'idle', 'https://idle.example/mcp'],
    ]) {
      const r = await mcp(...args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    const list = await mcp('list');
    assert.equal(list.code, 0, list.stderr);
    const lines = list.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^SERVER\s+TRANSPORT\s+WHERE\s+STATE\s+AGENTS$/);
    const row = (name: string) => lines.find((l) => l.startsWith(`${name} `)) ?? '';
    assert.match(
      row('docs'),
      /\s+http\s+http:\/\/127\.0\.0\.1:\d+\/mcp\s+reachable \(legacy MCP\)\s+helper, support-bot$/,
    );
    assert.match(row('locked'), /\s+wants an account: durable-mcp mcp login locked\s+support-bot$/);
    assert.match(row('stream'), /\s+sse\s+http:\/\/127\.0\.0\.1:\d+\/sse\s+reachable \(legacy MCP\)\s+triage$/);
    assert.match(row('gone'), /\s+unreachable: ECONNREFUSED\s+triage$/);
    // Everything after "--" is the command's, "--agent x" included.
    assert.match(
      row('files'),
      new RegExp(
        `\\s+stdio\\s+${process.execPath.replace(/[.]/g, '\\.')} --version --agent x\\s+command\\s+support-bot, triage$`,
      ),
    );
    assert.match(row('idle'), /\s+not granted\s+-$/);

    const json = await mcp('list', '--json');
    assert.equal(json.code, 0, json.stderr);
    const parsed = JSON.parse(json.stdout) as {
      version: number;
      servers: { name: string; state: string; agents: string[]; entry: unknown }[];
    };
    assert.equal(parsed.version, 8);
    assert.deepEqual(parsed.servers.find((s) => s.name === 'files')?.entry, {
      type: 'stdio',
      command: process.execPath,
      args: ['--version', '--agent', 'x'],
      env: { GITHUB_TOKEN: '${GITHUB_TOKEN}' },
    });

    const granted = await mcp('grant', 'idle', '--agent', 'triage');
    assert.equal(granted.code, 0, granted.stderr);
    assert.match(granted.stdout, /^granted idle to triage \(shelf version 9\)$/m);
    const dropped = await mcp('drop', 'files', '--agent', 'triage');
    assert.match(dropped.stdout, /^dropped files from triage \(shelf version 10\); its next turn goes without it$/m);
    const droppedAgain = await mcp('drop', 'files', '--agent', 'triage');
    assert.match(droppedAgain.stdout, /^triage does not have files; nothing changed$/m);
    const forgot = await mcp('forget', 'docs');
    assert.equal(forgot.code, 0, forgot.stderr);
    assert.match(
      forgot.stdout,
      /^forgot docs \(shelf version 11\); taken from helper, support-bot as of their next turn$/m,
    );
    const forgotAgain = await mcp('forget', 'docs');
    assert.match(forgotAgain.stdout, /^docs is not on the shelf; nothing changed$/m);

    const log = await mcp('log');
    assert.equal(log.code, 0, log.stderr);
    const entries = log.stdout.trimEnd().split('\n');
    assert.equal(entries.length, 12, log.stdout);
    assert.match(entries[0]!, /^\d{4}-\d\d-\d\dT[\d:.]+Z {2}add {5}docs \(agent support-bot\) {2}by cli \S+@\S+$/);
    assert.match(entries[1]!, / {2}add {5}docs \(agent helper\) {2}by cli /);
    assert.match(entries[10]!, / {2}forget {2}docs {2}by cli /);
    assert.match(
      entries[11]!,
      /^\(the newest 11 changes; the history of workflow durable-mcp\/shelf\/test-shelf-cli-\w+ holds every one\)$/,
    );
  });

  test('refusals: one line naming the field, exit code 2, and nothing recorded', async () => {
    const before = JSON.parse((await mcp('log', '--json')).stdout) as { version: number };
    const rows: [string[], RegExp][] = [
      [['add', 'bad__name', 'https://x.example/mcp'], /^error: server name "bad__name" has two separators in a row/],
      [
        ['add', 'leak', 'https://x.example/mcp', '--header', 'Authorization: Bearer abc123'],
        /^error: server "leak": headers\.Authorization holds a literal credential/,
      ],
      [
        ['add', 'leak', '--env', 'API_KEY=sk-live-123', '--', 'srv'],
        /^error: server "leak": env\.API_KEY holds a literal value/,
      ],
      [['add', 'ws', 'wss://x.example/mcp'], /^error: server "ws": WebSocket URLs/],
      [
        ['add', 'bad', 'https://x.example/mcp', '--agent', 'no spaces'],
        /^error: --agent: agent ID "no spaces" is not valid/,
      ],
      [
        ['add', 'stream', 'sse', 'https://other.example/sse'],
        /^error: url: "stream" is on the shelf already with another url; take it off first \(durable-mcp mcp forget stream\)/,
      ],
      [['grant', 'nope', '--agent', 'bot'], /^error: server: "nope" is not on the shelf; add it first/],
      [['grant', 'stream'], /^error: mcp grant needs --agent <id>/],
      [['drop', 'stream'], /^error: mcp drop needs --agent <id>/],
      [['list', '--probe-timeout', 'soon'], /^error: --probe-timeout must be a positive number of seconds, got "soon"/],
    ];
    for (const [args, message] of rows) {
      const r = await mcp(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout} ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
      assert.ok(!r.stderr.includes('abc123') || /literal credential/.test(r.stderr));
      assert.ok(!r.stderr.includes('sk-live-123'));
    }
    // A secret of the caller's environment is recognised by value too.
    const secretEnv = { ...env, DOCS_TOKEN: 'tok-abcdef-123456' };
    const leaked = await runCli(['mcp', 'add', 'leak', 'https://x.example/mcp?team=tok-abcdef-123456'], secretEnv);
    assert.equal(leaked.code, 2);
    assert.match(leaked.stderr, /url contains the value of the secret variable DOCS_TOKEN/);
    assert.ok(!leaked.stderr.includes('tok-abcdef-123456'));
    const afterRefusals = JSON.parse((await mcp('log', '--json')).stdout) as { version: number };
    assert.equal(afterRefusals.version, before.version);
  });

  test('login and logout go through the shelf entry; the list says logged in, then wants an account again', async () => {
    const { url } = await startOAuthFixture();
    assert.equal((await mcp('add', 'linear', url, '--agent', 'support-bot')).code, 0);
    const row = async () => (await mcp('list')).stdout.split('\n').find((l) => l.startsWith('linear ')) ?? '';
    assert.match(await row(), /\s+wants an account: durable-mcp mcp login linear\s+support-bot$/);
    // Paste-back: start without waiting, follow the authorization address (the fixture consents at once), paste where it ends.
    const loginEnv = { ...env, DMCP_OAUTH_CALLBACK_PORT: String(await closedPort()) };
    const begun = await runCli(['mcp', 'login', 'linear', '--no-wait'], loginEnv);
    assert.equal(begun.code, 0, begun.stderr);
    const authorizationUrl = /^ {2}(http\S+\/authorize\?\S+)$/m.exec(begun.stdout)?.[1];
    assert.ok(authorizationUrl, begun.stdout);
    assert.match(
      authorizationUrl,
      new RegExp(`resource=${encodeURIComponent(url).replace(/[.]/g, '\\.')}`),
      "the login is for the shelf entry's address",
    );
    assert.match(await row(), /\s+login started \S+, not finished: durable-mcp mcp login linear\s+support-bot$/);
    const redirect = await fetch(authorizationUrl, { redirect: 'manual' });
    const address = redirect.headers.get('location');
    assert.ok(address, `authorize answered ${redirect.status}`);
    const finished = await runCli(['mcp', 'login', 'linear', address], loginEnv);
    assert.equal(finished.code, 0, finished.stderr);
    assert.match(finished.stdout, /^Logged in to linear/m);
    assert.match(await row(), /\s+logged in\s+support-bot$/);
    const out = await mcp('logout', 'linear');
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /linear: logged out/);
    assert.match(await row(), /\s+wants an account: durable-mcp mcp login linear\s+support-bot$/);

    const notOnShelf = await mcp('login', 'nowhere');
    assert.equal(notOnShelf.code, 2);
    assert.match(notOnShelf.stderr, /^error: nowhere is not on the shelf: durable-mcp mcp add nowhere <url> first$/m);
    const command = await mcp('login', 'files');
    assert.equal(command.code, 2);
    assert.match(command.stderr, /^error: files is a command, not a remote server: there is nothing to log in to$/m);
  });

  test("without the workers' turn key a cluster's CLI refuses to sign", async () => {
    const keyless = await tempDir('dmcp-shelf-keyless-');
    const r = await runCli(['mcp', 'add', 'docs2', 'https://x.example/mcp'], { ...env, DMCP_DATA_DIR: keyless });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^error: no turn key at \S+turn\.key: copy the workers' turn\.key there/m);
    // Reading needs no key.
    const list = await runCli(['mcp', 'list'], { ...env, DMCP_DATA_DIR: keyless });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^stream /m);
  });
});

describe('durable-mcp mcp on a fresh machine (embedded server and worker)', { timeout: 180_000 }, () => {
  test('add then list, each command starting and stopping its own server', async () => {
    const dataDir = await tempDir('dmcp-shelf-fresh-');
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_DATA_DIR: dataDir, DMCP_NO_USER_CONFIG: '1' };
    const added = await runCli(
      ['mcp', 'add', 'fs', '--agent', 'bot', '--', 'npx', '-y', '@modelcontextprotocol/server-filesystem', '/srv'],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stdout,
      /^added fs \(stdio npx -y @modelcontextprotocol\/server-filesystem \/srv\); granted to bot \(shelf version 1\)$/m,
    );
    const list = await runCli(['mcp', 'list'], env);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^fs\s+stdio\s+npx -y @modelcontextprotocol\/server-filesystem \/srv\s+command\s+bot$/m);
    // The shelf lives in the data dir's Temporal database: a third command still sees the first change.
    const log = await runCli(['mcp', 'log'], env);
    assert.match(log.stdout, / {2}add {5}fs \(agent bot\) {2}by cli /);
  });
});

describe('durable-mcp mcp with `durable-mcp dev` running', { timeout: 180_000 }, () => {
  const groups: number[] = [];
  after(() => killGroups(groups));

  test("the CLI and dev's HTTP API change and read the same shelf, on dev's worker", async () => {
    const dataDir = await tempDir('dmcp-shelf-dev-');
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DMCP_DATA_DIR: dataDir, DMCP_NO_USER_CONFIG: '1' };
    const dev = spawn(process.execPath, [cli, 'dev'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...env,
        DMCP_DEV_PORT: '0',
        DMCP_DEV_UI_PORT: '0',
        DMCP_CODEC_PORT: '0',
        DMCP_API_PORT: '0',
        DMCP_LOG_LEVEL: 'warn',
      },
    });
    groups.push(dev.pid!);
    const exit = new Promise<number | null>((resolve) => dev.once('exit', (code) => resolve(code)));
    let out = '';
    dev.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    dev.stderr.resume();
    await waitUntil(
      'dev to start',
      async () => out.includes('durable-mcp dev is running.') || dev.exitCode !== null,
      90_000,
    );
    const api = /HTTP API:\s+(http:\/\/\S+)/.exec(out)?.[1];
    assert.ok(api, out);

    const added = await runCli(['mcp', 'add', 'docs', 'https://docs.example.com/mcp', '--agent', 'support-bot'], env);
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stdout,
      /^added docs \(http https:\/\/docs\.example\.com\/mcp\); granted to support-bot \(shelf version 1\)$/m,
    );
    // dev's API signs with the same data dir's key: the CLI's server and the API's grant both verify.
    // With the token dev wrote into the same data dir (it has the shelf scope).
    const auth = { authorization: `Bearer ${(await readFile(join(dataDir, 'api.token'), 'utf8')).trim()}` };
    assert.equal(
      (await fetch(`${api}/api/v1/shelf/servers/docs/agents/triage`, { method: 'PUT' })).status,
      401,
      'not without it',
    );
    const granted = await fetch(`${api}/api/v1/shelf/servers/docs/agents/triage`, { method: 'PUT', headers: auth });
    assert.equal(granted.status, 201, await granted.clone().text());
    const servers = (await (await fetch(`${api}/api/v1/agents/triage/servers`, { headers: auth })).json()) as {
      servers: { name: string; verified: boolean }[];
    };
    assert.deepEqual(
      servers.servers.map((x) => [x.name, x.verified]),
      [['docs', true]],
    );
    const log = await runCli(['mcp', 'log'], env);
    assert.match(log.stdout, / {2}grant {3}docs \(agent triage\) {2}by api token api\.token$/m);
    const list = await runCli(['mcp', 'list', '--json'], env);
    assert.deepEqual((JSON.parse(list.stdout) as { servers: { agents: string[] }[] }).servers[0]!.agents, [
      'support-bot',
      'triage',
    ]);

    process.kill(-dev.pid!, 'SIGINT');
    assert.equal(await exit, 130);
  });
});
