/**
 * OAuth logins end to end, against real servers: the MCP SDK's own example server with its demo
 * OAuth provider (kept on 127.0.0.1 by test/fixtures/sdkOAuthExample.mjs) and our fixture
 * (test/fixtures/oauthServer.ts: short-lived tokens, rotating refresh tokens, revocation, counters).
 *
 * - a headless Chromium follows the authorization address to the loopback callback; the token then
 *   lists and calls tools on the example server;
 * - paste-back without a browser; an address of another login is refused and the login stays pending;
 * - refresh before expiry and after a 401, without a new login ID; two processes refreshing at the
 *   same moment spend the refresh token once (and the fixture's counter does see a double spend);
 * - a new login replaces the old one only when it finishes; without a refresh token a login is used
 *   until it expires, then reads as `expired`;
 * - logout revokes (the fixture sees both revocations, the old token gets 401) and deletes, also
 *   when revocation fails (exit 1, the failure named) or is not offered;
 * - a token revoked by the server reads as `expired`, an unreachable authorization server as
 *   `refresh_failed`, a login made for another address is never sent;
 * - no token in what the commands print or the credentials log.
 *
 * Needs Debian's `chromium` (DMCP_CHROMIUM overrides), as the UI test does.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { refreshAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import pino from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { loginCommand, logoutCommand } from '../../cli/login.js';
import { createCredentials } from '../../plane/credentials.js';
import { createTokenStore, type TokenStore } from '../../plane/tokenStore.js';
import { loadSettings, type Settings } from '../../settings/index.js';
import { tempDir, within } from '../support/harness.js';

const CHROMIUM = process.env.DMCP_CHROMIUM ?? '/usr/bin/chromium';
const fixtureScript = fileURLToPath(new URL('../fixtures/oauthServer.js', import.meta.url));
const sdkExampleScript = fileURLToPath(new URL('../../../test/fixtures/sdkOAuthExample.mjs', import.meta.url));
const credentialsModule = fileURLToPath(new URL('../../plane/credentials.js', import.meta.url));
const tokenStoreModule = fileURLToPath(new URL('../../plane/tokenStore.js', import.meta.url));

interface Stats {
  registrations: number;
  authorizations: number;
  codeExchanges: number;
  refreshes: number;
  spentRefreshReuse: number;
  refusedRefresh: number;
  revocations: { hint?: string; kind: string }[];
  resources: (string | null)[];
  codeChallenges: number;
  echoCalls: number;
}

interface Running {
  url: string;
  child: ChildProcess;
  stderr: string[];
}

const children: ChildProcess[] = [];

/** Starts a server script and waits for its JSON line with a `url`. */
async function startServer(
  script: string,
  env: NodeJS.ProcessEnv = {},
): Promise<Running & { line: Record<string, unknown> }> {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const stderr: string[] = [];
  child.stderr!.on('data', (d: Buffer) => stderr.push(String(d)));
  let buffer = '';
  const line = await within(
    20_000,
    `${script} to listen`,
    new Promise<Record<string, unknown>>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        buffer += String(d);
        for (const l of buffer.split('\n')) {
          if (l.startsWith('{') && l.includes('"url"')) resolve(JSON.parse(l) as Record<string, unknown>);
        }
      });
      child.once('exit', (code) => reject(new Error(`${script} exited (${code}): ${stderr.join('')}`)));
    }),
  );
  return { url: String(line.url), child, stderr, line };
}

async function startFixture(env: NodeJS.ProcessEnv = {}) {
  const s = await startServer(fixtureScript, env);
  const issuer = String(s.line.issuer);
  return {
    ...s,
    issuer,
    stats: async () => (await (await fetch(String(s.line.stats))).json()) as Stats,
    admin: async (what: 'revoke-all' | 'expire-access') =>
      assert.equal((await fetch(new URL(`/admin/${what}`, issuer), { method: 'POST' })).status, 200),
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

async function settingsFor(): Promise<Settings> {
  return loadSettings({
    DMCP_DATA_DIR: await tempDir('dmcp-oauth-'),
    DMCP_OAUTH_CALLBACK_PORT: String(await freePort()),
  });
}

function lines() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, o: (l: string) => out.push(l), e: (l: string) => err.push(l) };
}

/** The authorization address a login command printed. */
function authorizationUrlIn(out: string[]): string {
  const i = out.findIndex((l) => l.startsWith('Open this address in a browser'));
  assert.ok(i >= 0, `no address in ${JSON.stringify(out)}`);
  return out[i + 1]!.trim();
}

/** Paste-back: start without waiting, follow the address without a browser, hand back where it ends. */
async function pasteBackLogin(
  settings: Settings,
  store: TokenStore,
  server: string,
  serverUrl: string,
): Promise<string[]> {
  const start = lines();
  assert.equal(
    await loginCommand({ server, serverUrl, noWait: true, settings, store, out: start.o, err: start.e }),
    0,
    start.err.join('\n'),
  );
  const res = await fetch(authorizationUrlIn(start.out), { redirect: 'manual' });
  assert.equal(res.status, 302);
  const finish = lines();
  assert.equal(
    await loginCommand({
      server,
      serverUrl,
      redirect: res.headers.get('location')!,
      settings,
      store,
      out: finish.o,
      err: finish.e,
    }),
    0,
    finish.err.join('\n'),
  );
  return [...start.out, ...finish.out];
}

async function mcpClient(url: string, token: string): Promise<Client> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await within(
    10_000,
    'connect',
    client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    ),
  );
  return client;
}

function logCapture() {
  const logs: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void logs.push(s) });
  return { logs, logger };
}

function assertNoSecret(texts: string[], secrets: (string | undefined)[]): void {
  const all = texts.join('\n');
  for (const s of secrets) if (s) assert.ok(!all.includes(s), `a token (${s.slice(0, 5)}...) was printed or logged`);
}

/** Runs one credentials call in a separate process over the same token folder; starts it at `startAt` (epoch ms). */
function refreshInChild(args: {
  dir: string;
  key: Buffer;
  server: string;
  url: string;
  mode: 'expiring' | '401';
  startAt: number;
  marginMs: number;
  failed?: string;
}): Promise<{ token?: string; loginId?: string; problem?: unknown }> {
  const script = `
    const [credPath, storePath, dir, keyHex, server, url, mode, startAt, margin, failed] = process.argv.slice(1);
    const { createCredentials } = await import(credPath);
    const { createTokenStore } = await import(storePath);
    const store = createTokenStore({ dir, key: Buffer.from(keyHex, 'hex') });
    const quiet = () => undefined;
    const creds = createCredentials({ store, logger: { info: quiet, warn: quiet, debug: quiet, error: quiet }, refreshMarginMs: Number(margin) });
    await new Promise((r) => setTimeout(r, Math.max(0, Number(startAt) - Date.now())));
    const answer = mode === '401' ? await creds.afterUnauthorized(server, url, failed) : await creds.accessToken(server, url);
    process.stdout.write(JSON.stringify(answer));
  `;
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      script,
      credentialsModule,
      tokenStoreModule,
      args.dir,
      args.key.toString('hex'),
      args.server,
      args.url,
      args.mode,
      String(args.startAt),
      String(args.marginMs),
      args.failed ?? '',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += String(d)));
  child.stderr.on('data', (d: Buffer) => (err += String(d)));
  return within(
    30_000,
    'refreshing child',
    new Promise((resolve, reject) =>
      child.once('exit', (code) =>
        code === 0 ? resolve(JSON.parse(out) as { token?: string }) : reject(new Error(`child exited ${code}: ${err}`)),
      ),
    ),
  );
}

after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

describe('login through a browser against the SDK example server', { timeout: 90_000 }, () => {
  let browser: Browser | undefined;

  before(async () => {
    assert.ok(
      existsSync(CHROMIUM),
      `Chromium not found at ${CHROMIUM}: apt-get install chromium, or set DMCP_CHROMIUM`,
    );
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  after(async () => {
    await browser?.close();
  });

  test('Chromium follows the authorization address to the loopback callback; the token lists and calls tools; logout deletes', async () => {
    const example = await startServer(sdkExampleScript);
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    const page = await browser!.newPage();
    const login = lines();
    const code = await within(
      60_000,
      'login through the browser',
      loginCommand({
        server: 'example',
        serverUrl: example.url,
        settings,
        store,
        out: login.o,
        err: login.e,
        waitMs: 45_000,
        openBrowser: (url) => void page.goto(url).catch(() => undefined),
      }),
    );
    assert.equal(code, 0, `${login.out.join('\n')}\n${login.err.join('\n')}`);
    assert.match(
      login.out.find((l) => l.startsWith('Logged in')) ?? '',
      new RegExp(
        `^Logged in to example \\(${example.url.replace(/[.]/g, '\\.')}\\): the access token expires \\d{4}-\\d\\d-\\d\\dT`,
      ),
    );
    assert.match(login.out.join('\n'), /The server gave no refresh token/);
    const authorizationUrl = new URL(authorizationUrlIn(login.out));
    assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(authorizationUrl.searchParams.get('resource'), example.url);
    assert.equal(
      authorizationUrl.searchParams.get('redirect_uri'),
      `http://127.0.0.1:${settings.oauth.callbackPort}/callback`,
    );
    await page.waitForURL((u) => u.href.startsWith(`http://127.0.0.1:${settings.oauth.callbackPort}/callback?code=`), {
      timeout: 10_000,
    });
    await page.waitForLoadState('domcontentloaded');
    assert.match(await page.content(), /Logged in to example\. You can close this tab\./);

    const record = (await store.read('example'))!;
    assert.equal(await store.pendingSince('example'), undefined);
    const { logs, logger } = logCapture();
    const answer = await createCredentials({ store, logger }).accessToken('example', example.url);
    assert.ok('token' in answer, JSON.stringify(answer));
    assert.equal(answer.loginId, record.loginId);
    const client = await mcpClient(example.url, answer.token);
    try {
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'greet'));
      const result = await client.callTool({ name: 'greet', arguments: { name: 'durable' } });
      assert.match(JSON.stringify(result.content), /Hello, durable!/);
    } finally {
      await client.close();
    }
    const logout = lines();
    assert.equal(await logoutCommand({ server: 'example', settings, store, out: logout.o, err: logout.e }), 0);
    assert.deepEqual(logout.out, [
      'example: the authorization server offers no revocation; the tokens stay valid there until they expire.',
      'example: logged out; the login is deleted for every worker.',
    ]);
    assert.equal(await store.loginId('example'), undefined);
    assertNoSecret([...login.out, ...login.err, ...logout.out, ...logs], [record.tokens.access_token]);
  });

  test('paste-back without a browser; an address of another login is refused and the login stays pending', async () => {
    const example = await startServer(sdkExampleScript);
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    const start = lines();
    assert.equal(
      await loginCommand({
        server: 'example',
        serverUrl: example.url,
        noWait: true,
        settings,
        store,
        out: start.o,
        err: start.e,
      }),
      0,
    );
    assert.equal(start.out[3], "  durable-mcp mcp login example '<address>'");
    const since = await store.pendingSince('example');
    assert.ok(since, 'a pending login');
    assert.deepEqual(
      await createCredentials({ store, logger: logCapture().logger }).accessToken('example', example.url),
      {
        problem: {
          kind: 'in_progress',
          message: `a login was started ${since.toISOString()} and not finished: finish it in the browser, or paste the address it ends on: durable-mcp mcp login example '<address>'`,
        },
      },
    );
    const res = await fetch(authorizationUrlIn(start.out), { redirect: 'manual' });
    const location = new URL(res.headers.get('location')!);
    const forged = new URL(location);
    forged.searchParams.set('state', 'someone-else');
    const bad = lines();
    assert.equal(
      await loginCommand({
        server: 'example',
        serverUrl: example.url,
        redirect: forged.href,
        settings,
        store,
        out: bad.o,
        err: bad.e,
      }),
      1,
    );
    assert.match(
      bad.err[0]!,
      new RegExp(
        `^example: the address does not belong to the login started ${since.toISOString()} \\(its state differs\\)`,
      ),
    );
    assert.equal((await store.pendingSince('example'))?.getTime(), since.getTime());
    const moved = lines();
    assert.equal(
      await loginCommand({
        server: 'example',
        serverUrl: 'http://127.0.0.1:9/mcp',
        redirect: location.href,
        settings,
        store,
        out: moved.o,
        err: moved.e,
      }),
      1,
    );
    assert.equal(
      moved.err[0],
      `example: the waiting login was started for ${example.url}, but the server is now at http://127.0.0.1:9/mcp; start again: durable-mcp mcp login example`,
    );
    const good = lines();
    assert.equal(
      await loginCommand({
        server: 'example',
        serverUrl: example.url,
        redirect: location.href,
        settings,
        store,
        out: good.o,
        err: good.e,
      }),
      0,
      good.err.join('\n'),
    );
    assert.match(good.out[0]!, /^Logged in to example/);
    assert.equal(await store.pendingSince('example'), undefined);
    const record = (await store.read('example'))!;
    const client = await mcpClient(example.url, record.tokens.access_token);
    await client.listTools();
    await client.close();
    // The same address again: the login it belonged to is finished.
    const again = lines();
    assert.equal(
      await loginCommand({
        server: 'example',
        serverUrl: example.url,
        redirect: location.href,
        settings,
        store,
        out: again.o,
        err: again.e,
      }),
      1,
    );
    assert.equal(
      again.err[0],
      'example: no login is waiting for an address; start one with: durable-mcp mcp login example',
    );
  });

  test('a taken callback port is named, with the variable and the paste-back way', async () => {
    const settings = await settingsFor();
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(settings.oauth.callbackPort, '127.0.0.1', r));
    try {
      const run = lines();
      const code = await loginCommand({
        server: 'example',
        serverUrl: 'http://127.0.0.1:9/mcp',
        settings,
        out: run.o,
        err: run.e,
        noBrowser: true,
      });
      assert.equal(code, 1);
      assert.match(
        run.err[0]!,
        new RegExp(`^port ${settings.oauth.callbackPort} \\(DMCP_OAUTH_CALLBACK_PORT\\) on 127\\.0\\.0\\.1 is taken`),
      );
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});

describe('refresh, revocation and logout against the fixture', { timeout: 90_000 }, () => {
  test('a pre-registered client: refused without it, naming the command; its secret from a variable at login and on the worker, never stored', async () => {
    const settings = await settingsFor();
    const fx = await startFixture({
      OAUTH_FIXTURE_CLIENT: 'team-app:team-app-secret-77',
      OAUTH_FIXTURE_REDIRECT_URI: `http://127.0.0.1:${settings.oauth.callbackPort}/callback`,
    });
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    const bare = lines();
    assert.equal(
      await loginCommand({ server: 'fx', serverUrl: fx.url, noWait: true, settings, store, out: bare.o, err: bare.e }),
      1,
    );
    assert.match(
      bare.err.join('\n'),
      /offers no dynamic client registration: register a client there .*durable-mcp mcp forget fx && durable-mcp mcp add fx http:\/\/127\.0\.0\.1:\d+\/mcp --client-id <id> \[--client-secret-env <VAR>\]$/,
    );
    const client = { clientId: 'team-app', clientSecretEnv: 'FX_CLIENT_SECRET' };
    const unset = lines();
    assert.equal(
      await loginCommand({
        server: 'fx',
        serverUrl: fx.url,
        noWait: true,
        settings,
        store,
        client,
        env: {},
        out: unset.o,
        err: unset.e,
      }),
      1,
    );
    assert.deepEqual(unset.err, [
      'fx: its client secret is read from FX_CLIENT_SECRET, which is not set here: set FX_CLIENT_SECRET to the secret of client team-app and run durable-mcp mcp login fx again',
    ]);

    const env = { FX_CLIENT_SECRET: 'team-app-secret-77' };
    const start = lines();
    assert.equal(
      await loginCommand({
        server: 'fx',
        serverUrl: fx.url,
        noWait: true,
        settings,
        store,
        client,
        env,
        out: start.o,
        err: start.e,
      }),
      0,
      start.err.join('\n'),
    );
    const res = await fetch(authorizationUrlIn(start.out), { redirect: 'manual' });
    assert.equal(res.status, 302);
    const finish = lines();
    assert.equal(
      await loginCommand({
        server: 'fx',
        serverUrl: fx.url,
        redirect: res.headers.get('location')!,
        settings,
        store,
        client,
        env,
        out: finish.o,
        err: finish.e,
      }),
      0,
      finish.err.join('\n'),
    );
    const record = (await store.read('fx'))!;
    assert.equal(record.client.client_id, 'team-app');
    assert.ok(!JSON.stringify(record).includes('team-app-secret-77'), 'the login file holds no client secret');

    const { logs, logger } = logCapture();
    let ahead = 0;
    const now = () => Date.now() + ahead;
    ahead = record.tokens.expiresAt! - Date.now() - 500;
    // A worker that may not hand the variable over cannot refresh, and says which variable to list.
    const unlisted = await createCredentials({ store, logger, refreshMarginMs: 1000, now, env }).afterUnauthorized(
      'fx',
      fx.url,
      record.tokens.access_token,
    );
    assert.ok(
      'problem' in unlisted &&
        /FX_CLIENT_SECRET, which this worker may not read: list it in DMCP_MCP_ENV/.test(unlisted.problem.message),
      JSON.stringify(unlisted),
    );
    const refreshed = await createCredentials({
      store,
      logger,
      refreshMarginMs: 1000,
      now,
      env: { ...env, DMCP_MCP_ENV: 'FX_CLIENT_SECRET' },
    }).accessToken('fx', fx.url);
    assert.ok('token' in refreshed && refreshed.token !== record.tokens.access_token, JSON.stringify(refreshed));
    const stats = await fx.stats();
    assert.equal(stats.registrations, 0);
    assert.equal(stats.refreshes, 1);
    assertNoSecret(
      [...start.out, ...finish.out, ...logs],
      ['team-app-secret-77', record.tokens.access_token, record.tokens.refresh_token],
    );
  });

  test('refreshed before expiry and after a 401, same login ID, the resource sent each time', async () => {
    const fx = await startFixture({ OAUTH_FIXTURE_TOKEN_TTL: '60' });
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    const printed = await pasteBackLogin(settings, store, 'fx', fx.url);
    const first = (await store.read('fx'))!;
    const { logs, logger } = logCapture();
    // The workers' clock, moved forward instead of sleeping until the token is due.
    let ahead = 0;
    const creds = createCredentials({ store, logger, refreshMarginMs: 1000, now: () => Date.now() + ahead });
    const a = await creds.accessToken('fx', fx.url);
    assert.deepEqual(a, { token: first.tokens.access_token, loginId: first.loginId });
    const client = await mcpClient(fx.url, first.tokens.access_token);
    assert.match(
      JSON.stringify((await client.callTool({ name: 'echo', arguments: { text: 'with a token' } })).content),
      /with a token/,
    );
    await client.close();
    assert.equal((await fx.stats()).refreshes, 0);

    ahead = first.tokens.expiresAt! - Date.now() - 500;
    const b = await creds.accessToken('fx', fx.url);
    assert.ok('token' in b);
    assert.notEqual(b.token, first.tokens.access_token);
    assert.equal(b.loginId, first.loginId);
    assert.equal((await fx.stats()).refreshes, 1);
    ahead = 0;
    // A 401 to a token another process has replaced already: the new token, no refresh.
    const c = await creds.afterUnauthorized('fx', fx.url, first.tokens.access_token);
    assert.deepEqual(c, b);
    assert.equal((await fx.stats()).refreshes, 1);
    // A 401 to the current token (the server expired it early): refreshed once.
    await fx.admin('expire-access');
    const d = await creds.afterUnauthorized('fx', fx.url, b.token);
    assert.ok('token' in d);
    assert.notEqual(d.token, b.token);
    const stats = await fx.stats();
    assert.equal(stats.refreshes, 2);
    assert.equal(stats.spentRefreshReuse, 0);
    assert.equal(stats.registrations, 1);
    assert.equal(stats.codeChallenges, 1);
    assert.deepEqual(stats.resources, [fx.url, fx.url, fx.url]);
    const latest = (await store.read('fx'))!;
    assertNoSecret(
      [...printed, ...logs],
      [first.tokens.access_token, first.tokens.refresh_token, latest.tokens.access_token, latest.tokens.refresh_token],
    );
    // Three logins' worth of access and refresh tokens (the login, two refreshes), all known to the scrubber.
    const known = creds.secretsOf!('fx');
    for (const t of [
      first.tokens.access_token,
      first.tokens.refresh_token!,
      b.token,
      d.token,
      latest.tokens.refresh_token!,
    ])
      assert.ok(known.includes(t));
    assert.equal(new Set(known).size, 6);
  });

  test('two processes refreshing at the same moment spend the refresh token once', async () => {
    const fx = await startFixture({ OAUTH_FIXTURE_TOKEN_TTL: '4', OAUTH_FIXTURE_REFRESH_DELAY_MS: '300' });
    const settings = await settingsFor();
    const key = randomBytes(32);
    const store = createTokenStore({ dir: settings.oauth.dir, key });
    await pasteBackLogin(settings, store, 'fx', fx.url);
    const first = (await store.read('fx'))!;

    // Both see the token expiring within the margin at the same moment.
    const startAt = first.tokens.expiresAt! - 1500;
    const common = { dir: settings.oauth.dir, key, server: 'fx', url: fx.url, marginMs: 2000, startAt };
    const [x, y] = await Promise.all([
      refreshInChild({ ...common, mode: 'expiring' }),
      refreshInChild({ ...common, mode: 'expiring' }),
    ]);
    assert.ok(x.token && y.token, JSON.stringify({ x, y }));
    assert.equal(x.token, y.token);
    assert.notEqual(x.token, first.tokens.access_token);
    assert.equal(x.loginId, first.loginId);
    let stats = await fx.stats();
    assert.equal(stats.refreshes, 1);
    assert.equal(stats.spentRefreshReuse, 0);
    assert.equal(stats.refusedRefresh, 0);

    // Both got a 401 to the same token at the same moment.
    const second = (await store.read('fx'))!;
    const again = {
      ...common,
      startAt: Date.now() + 1500,
      marginMs: 0,
      mode: '401' as const,
      failed: second.tokens.access_token,
    };
    const [p, q] = await Promise.all([refreshInChild(again), refreshInChild(again)]);
    assert.ok(p.token && p.token === q.token && p.token !== second.tokens.access_token, JSON.stringify({ p, q }));
    stats = await fx.stats();
    assert.equal(stats.refreshes, 2);
    assert.equal(stats.spentRefreshReuse, 0);

    // The counter does see a double spend: the spent refresh token presented once more.
    const latest = (await store.read('fx'))!;
    await assert.rejects(
      refreshAuthorization(latest.discovery.authorizationServerUrl, {
        metadata: latest.discovery.authorizationServerMetadata!,
        clientInformation: latest.client,
        refreshToken: second.tokens.refresh_token!,
        resource: latest.resource!,
      }),
      /already used/,
    );
    assert.equal((await fx.stats()).spentRefreshReuse, 1);
  });

  test('a new login replaces the old one only when it finishes', async () => {
    const fx = await startFixture();
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    await pasteBackLogin(settings, store, 'fx', fx.url);
    const old = (await store.read('fx'))!;
    const creds = createCredentials({ store, logger: logCapture().logger });
    const start = lines();
    assert.equal(
      await loginCommand({
        server: 'fx',
        serverUrl: fx.url,
        noWait: true,
        settings,
        store,
        out: start.o,
        err: start.e,
      }),
      0,
    );
    assert.deepEqual(await creds.accessToken('fx', fx.url), { token: old.tokens.access_token, loginId: old.loginId });
    const res = await fetch(authorizationUrlIn(start.out), { redirect: 'manual' });
    const finish = lines();
    assert.equal(
      await loginCommand({
        server: 'fx',
        serverUrl: fx.url,
        redirect: res.headers.get('location')!,
        settings,
        store,
        out: finish.o,
        err: finish.e,
      }),
      0,
    );
    const now = await creds.accessToken('fx', fx.url);
    assert.ok('token' in now);
    assert.notEqual(now.loginId, old.loginId);
    assert.notEqual(now.token, old.tokens.access_token);
  });

  test('without a refresh token: used until it expires, then expired', async () => {
    const fx = await startFixture({ OAUTH_FIXTURE_REFRESH: 'none' });
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    const printed = await pasteBackLogin(settings, store, 'fx', fx.url);
    assert.match(printed.join('\n'), /The server gave no refresh token: log in again when it expires\./);
    const record = (await store.read('fx'))!;
    let ahead = record.tokens.expiresAt! - Date.now() - 10_000;
    const creds = createCredentials({ store, logger: logCapture().logger, now: () => Date.now() + ahead });
    assert.deepEqual(await creds.accessToken('fx', fx.url), {
      token: record.tokens.access_token,
      loginId: record.loginId,
    });
    ahead = record.tokens.expiresAt! - Date.now() + 1000;
    assert.deepEqual(await creds.accessToken('fx', fx.url), {
      problem: { kind: 'expired', message: 'its login expired or was revoked: durable-mcp mcp login fx' },
    });
    assert.equal((await fx.stats()).refreshes, 0);
  });

  test('logout revokes both tokens and deletes the login; the old token gets 401', async () => {
    const fx = await startFixture();
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    await pasteBackLogin(settings, store, 'fx', fx.url);
    const record = (await store.read('fx'))!;
    const out = lines();
    assert.equal(await logoutCommand({ server: 'fx', settings, store, out: out.o, err: out.e }), 0, out.err.join('\n'));
    assert.deepEqual(out.out, [
      `fx: revoked the refresh token and the access token at ${new URL('/revoke', fx.issuer).href}.`,
      'fx: logged out; the login is deleted for every worker.',
    ]);
    assert.deepEqual((await fx.stats()).revocations, [
      { hint: 'refresh_token', kind: 'refresh' },
      { hint: 'access_token', kind: 'access' },
    ]);
    assert.equal(await store.loginId('fx'), undefined);
    const res = await fetch(fx.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${record.tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{}',
    });
    assert.equal(res.status, 401);
    const { logger } = logCapture();
    assert.deepEqual(await createCredentials({ store, logger }).accessToken('fx', fx.url), {
      problem: { kind: 'wanted', message: 'wants an account first: durable-mcp mcp login fx' },
    });
    const twice = lines();
    assert.equal(await logoutCommand({ server: 'fx', settings, store, out: twice.o, err: twice.e }), 0);
    assert.deepEqual(twice.out, ['fx: not logged in; nothing to do.']);
    assertNoSecret([...out.out, ...out.err], [record.tokens.access_token, record.tokens.refresh_token]);
  });

  test('without a revocation endpoint, logout says so and still deletes', async () => {
    const fx = await startFixture({ OAUTH_FIXTURE_REVOCATION: '0' });
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    await pasteBackLogin(settings, store, 'fx', fx.url);
    const out = lines();
    assert.equal(await logoutCommand({ server: 'fx', settings, store, out: out.o, err: out.e }), 0);
    assert.equal(
      out.out[0],
      'fx: the authorization server offers no revocation; the tokens stay valid there until they expire.',
    );
    assert.deepEqual((await fx.stats()).revocations, []);
    assert.equal(await store.loginId('fx'), undefined);
  });

  test('when revocation fails, logout still deletes, names the failure and exits 1', async () => {
    const fx = await startFixture();
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    await pasteBackLogin(settings, store, 'fx', fx.url);
    const record = (await store.read('fx'))!;
    fx.child.kill('SIGKILL');
    await new Promise((r) => fx.child.once('exit', r));
    const out = lines();
    assert.equal(await logoutCommand({ server: 'fx', settings, store, out: out.o, err: out.e }), 1);
    assert.deepEqual(out.err, [
      'fx: could not revoke refresh_token: fetch failed (ECONNREFUSED)',
      'fx: could not revoke access_token: fetch failed (ECONNREFUSED)',
    ]);
    assert.deepEqual(out.out, ['fx: logged out; the login is deleted for every worker.']);
    assert.equal(await store.loginId('fx'), undefined);
    assertNoSecret([...out.out, ...out.err], [record.tokens.access_token, record.tokens.refresh_token]);
  });

  test('revoked by the server: expired, and no second refresh is tried; unreachable: refresh_failed; another address: never sent', async () => {
    const fx = await startFixture({ OAUTH_FIXTURE_TOKEN_TTL: '60' });
    const settings = await settingsFor();
    const store = createTokenStore({ dir: settings.oauth.dir, key: randomBytes(32) });
    await pasteBackLogin(settings, store, 'fx', fx.url);
    const record = (await store.read('fx'))!;
    const { logs, logger } = logCapture();
    const creds = createCredentials({ store, logger });

    const elsewhere = await creds.accessToken('fx', 'http://127.0.0.1:1/mcp');
    assert.deepEqual(elsewhere, {
      problem: { kind: 'wanted', message: 'wants an account first: durable-mcp mcp login fx' },
    });

    await fx.admin('revoke-all');
    const expired = {
      problem: { kind: 'expired', message: 'its login expired or was revoked: durable-mcp mcp login fx' },
    };
    assert.deepEqual(await creds.afterUnauthorized('fx', fx.url, record.tokens.access_token), expired);
    assert.deepEqual(await creds.accessToken('fx', fx.url), expired);
    assert.equal((await fx.stats()).refusedRefresh, 1);
    assert.equal(
      await store.loginId('fx'),
      record.loginId,
      'the dead login stays, so the status says expired, not wanted',
    );
    const state = await store.loginState('fx');
    assert.equal(state.loginId, record.loginId);
    assert.ok(state.expiredAt instanceof Date && !Number.isNaN(state.expiredAt.getTime()));

    // A new login, then the authorization server goes away while the token is due.
    await pasteBackLogin(settings, store, 'fx', fx.url);
    const fresh = (await store.read('fx'))!;
    assert.notEqual(fresh.loginId, record.loginId);
    fx.child.kill('SIGKILL');
    await new Promise((r) => fx.child.once('exit', r));
    const late = createCredentials({ store, logger, refreshMarginMs: 120_000, refreshTimeoutMs: 3000 });
    const failed = await late.accessToken('fx', fx.url);
    // Still valid for a minute: the token is given, the failure logged.
    assert.deepEqual(failed, { token: fresh.tokens.access_token, loginId: fresh.loginId });
    const afterExpiry = await late.afterUnauthorized('fx', fx.url, fresh.tokens.access_token);
    assert.ok('problem' in afterExpiry);
    assert.equal(afterExpiry.problem.kind, 'refresh_failed');
    assert.match(
      afterExpiry.problem.message,
      /^could not refresh its login \(fetch failed \(ECONNREFUSED\)\); tried again next turn, or durable-mcp mcp login fx$/,
    );
    assertNoSecret(logs, [
      record.tokens.access_token,
      record.tokens.refresh_token,
      fresh.tokens.access_token,
      fresh.tokens.refresh_token,
    ]);
    assert.ok(logs.some((l) => l.includes('could not refresh the OAuth login')));
  });
});
