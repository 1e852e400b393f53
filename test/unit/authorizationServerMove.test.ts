/**
 * A server that moves to another authorization server (SEP-2352): when its protected resource
 * metadata is taken to name a new one (table), what the worker's credentials make of a 401 after
 * such a move (the login marked, its token no longer sent or refreshed, the mark lifted when the
 * metadata names the old server again, nothing claimed when the metadata cannot be read), what the
 * pool's fetch does with it (no refresh at the old server), and what the next login does (it
 * registers at the new server and presents nothing of the old one; a pre-registered client is
 * refused, saying what to run).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { authorizationServerMove, createCredentials, loginProblemMessage } from '../../plane/credentials.js';
import { startLogin } from '../../plane/oauth.js';
import { createTokenStore, type LoginRecord, type TokenStore } from '../../plane/tokenStore.js';
import { loginFetch, type LoginCredentials, type LoginProblem } from '../../mcp/login.js';
import { tempDir } from '../support/harness.js';

describe('whether the metadata names another authorization server', () => {
  const AS1 = 'https://as1.example.com';
  const cases: { name: string; servers: unknown; moved?: string }[] = [
    { name: 'the same', servers: [AS1] },
    { name: 'another', servers: ['https://as2.example.com'], moved: 'https://as2.example.com' },
    { name: "the login's among several", servers: ['https://as2.example.com', AS1] },
    { name: 'compared exactly: a trailing slash is another string', servers: [`${AS1}/`], moved: `${AS1}/` },
    { name: 'metadata missing or failed', servers: undefined },
    { name: 'no authorization servers listed', servers: [] },
    { name: 'not a list', servers: AS1 },
    { name: 'not an address', servers: ['as2'] },
    { name: 'not http(s)', servers: ['javascript:alert(1)'] },
    { name: 'not a string', servers: [{ url: 'https://as2.example.com' }] },
    { name: 'an address with credentials in it', servers: ['https://user:pass@as2.example.com'] },
  ];
  for (const c of cases) test(c.name, () => assert.equal(authorizationServerMove(AS1, c.servers), c.moved));

  test('the status says where it moved and what to run', () => {
    assert.equal(
      loginProblemMessage('moved', 'docs', { to: 'https://as2.example.com' }),
      'its authorization server moved to https://as2.example.com: durable-mcp mcp login docs',
    );
  });
});

const quiet = () => undefined;
const logger = { info: quiet, warn: quiet, debug: quiet, error: quiet } as unknown as Parameters<
  typeof createCredentials
>[0]['logger'];
const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const SERVER_URL = 'https://mcp.example.com/mcp';
const PRM_URL = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';

function recordAt(authorizationServerUrl: string, extra: Partial<LoginRecord> = {}): LoginRecord {
  const t0 = Date.now();
  return {
    server: 'docs',
    serverUrl: SERVER_URL,
    loginId: 'L1',
    createdAt: new Date(t0).toISOString(),
    discovery: {
      authorizationServerUrl,
      resourceMetadataUrl: PRM_URL,
      authorizationServerMetadata: {
        issuer: authorizationServerUrl,
        authorization_endpoint: `${authorizationServerUrl}/authorize`,
        token_endpoint: `${authorizationServerUrl}/token`,
        response_types_supported: ['code'],
      },
    },
    client: { client_id: 'as1-client' },
    tokens: {
      access_token: 'at-as1',
      token_type: 'Bearer',
      refresh_token: 'rt-as1',
      scope: 'mcp offline_access',
      obtainedAt: t0,
      expiresAt: t0 + 3_600_000,
    },
    ...extra,
  };
}

/** Protected resource metadata the test sets (a function: a status, a body, or a throw); every address asked. */
function metadataServer(answer: () => Response) {
  const asked: string[] = [];
  const spy = (async (url: string | URL) => {
    asked.push(String(url));
    if (String(url).includes('/.well-known/oauth-protected-resource')) return answer();
    return json({ error: 'unexpected request' }, 500);
  }) as typeof fetch;
  return { spy, asked };
}

describe('the worker after a 401: has the server moved?', () => {
  async function setup(answer: () => Response, record: LoginRecord | null = recordAt('https://as1.example.com')) {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    if (record) await store.write(record);
    const server = metadataServer(answer);
    const credentials = createCredentials({ store, logger, fetch: server.spy });
    return { store, credentials, asked: server.asked };
  }

  test('metadata naming another server marks the login, whose token is then neither sent nor refreshed', async () => {
    const s = await setup(() => json({ resource: SERVER_URL, authorization_servers: ['https://as2.example.com'] }));
    const moved = {
      kind: 'moved',
      message: 'its authorization server moved to https://as2.example.com: durable-mcp mcp login docs',
    };
    assert.deepEqual(await s.credentials.authorizationServerMoved!('docs', SERVER_URL, PRM_URL), moved);
    assert.equal((await s.store.read('docs'))?.movedTo, 'https://as2.example.com');
    assert.deepEqual(await s.credentials.accessToken('docs', SERVER_URL), { problem: moved });
    assert.deepEqual(await s.credentials.afterUnauthorized('docs', SERVER_URL, 'at-as1'), { problem: moved });
    assert.deepEqual(s.asked, [PRM_URL], 'nothing but the metadata was asked: no refresh at the old server');
  });

  test("metadata naming the login's server again lifts the mark", async () => {
    const s = await setup(
      () => json({ resource: SERVER_URL, authorization_servers: ['https://as1.example.com'] }),
      recordAt('https://as1.example.com', { movedTo: 'https://as2.example.com' }),
    );
    assert.equal(await s.credentials.authorizationServerMoved!('docs', SERVER_URL, undefined), undefined);
    assert.equal((await s.store.read('docs'))?.movedTo, undefined);
    assert.deepEqual(await s.credentials.accessToken('docs', SERVER_URL), { token: 'at-as1', loginId: 'L1' });
  });

  const unreadable: [string, () => Response][] = [
    ['metadata missing (404)', () => new Response('', { status: 404 })],
    ['metadata failing (500)', () => new Response('', { status: 500 })],
    ['metadata not JSON', () => new Response('<html>', { status: 200, headers: { 'content-type': 'text/html' } })],
    [
      'server unreachable',
      () => {
        throw new TypeError('fetch failed');
      },
    ],
    ['metadata naming no server', () => json({ resource: SERVER_URL })],
  ];
  for (const [name, answer] of unreadable) {
    test(`${name}: never claims a move`, async () => {
      const s = await setup(answer);
      assert.equal(await s.credentials.authorizationServerMoved!('docs', SERVER_URL, PRM_URL), undefined);
      assert.equal((await s.store.read('docs'))?.movedTo, undefined);
      assert.deepEqual(await s.credentials.accessToken('docs', SERVER_URL), { token: 'at-as1', loginId: 'L1' });
    });
  }

  test('no login: nothing is fetched', async () => {
    const s = await setup(() => json({ authorization_servers: ['https://as2.example.com'] }), null);
    assert.equal(await s.credentials.authorizationServerMoved!('docs', SERVER_URL, PRM_URL), undefined);
    assert.deepEqual(s.asked, []);
  });

  test("a metadata address on another origin is not followed: the server's own is read", async () => {
    const s = await setup(() => json({ resource: SERVER_URL, authorization_servers: ['https://as1.example.com'] }));
    await s.credentials.authorizationServerMoved!(
      'docs',
      SERVER_URL,
      'https://internal.example.net/.well-known/oauth-protected-resource/mcp',
    );
    assert.ok(s.asked.length > 0 && s.asked.every((u) => u.startsWith('https://mcp.example.com/')), s.asked.join(', '));
  });
});

describe("the pool's fetch on a 401", () => {
  function setup(moved: LoginProblem | undefined) {
    const calls: string[] = [];
    const credentials: LoginCredentials = {
      accessToken: async () => ({ token: 'at-as1', loginId: 'L1' }),
      afterUnauthorized: async () => {
        calls.push('refresh');
        return { token: 'at-refreshed', loginId: 'L1' };
      },
      authorizationServerMoved: async (_server, _url, resourceMetadataUrl) => {
        calls.push(`moved? ${resourceMetadataUrl}`);
        return moved;
      },
    };
    const problems: LoginProblem[] = [];
    const sent: (string | null)[] = [];
    const f = loginFetch(
      async (_url, init) => {
        sent.push(new Headers(init?.headers).get('authorization'));
        return new Response('{}', {
          status: 401,
          headers: { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${PRM_URL}"` },
        });
      },
      'docs',
      SERVER_URL,
      credentials,
      { onToken: quiet, onProblem: (p) => problems.push(p), onAuthorized: quiet },
    );
    return { f, calls, problems, sent };
  }

  test('a move is reported without a refresh or a second request', async () => {
    const moved: LoginProblem = {
      kind: 'moved',
      message: 'its authorization server moved to https://as2.example.com: durable-mcp mcp login docs',
    };
    const s = setup(moved);
    assert.equal((await s.f(SERVER_URL, {})).status, 401);
    assert.deepEqual(s.calls, [`moved? ${PRM_URL}`]);
    assert.deepEqual(s.sent, ['Bearer at-as1']);
    assert.deepEqual(s.problems, [moved]);
  });

  test('no move: one refresh and one retry, as before', async () => {
    const s = setup(undefined);
    await s.f(SERVER_URL, {});
    assert.deepEqual(s.calls, [`moved? ${PRM_URL}`, 'refresh']);
    assert.deepEqual(s.sent, ['Bearer at-as1', 'Bearer at-refreshed']);
    assert.equal(s.problems[0]?.kind, 'expired');
  });
});

describe('the login after a move', () => {
  /** The MCP server now behind AS2; AS1 and AS2 answer in memory. Every request, with its client IDs. */
  function movedServer(opts: { as2Registration?: boolean } = {}) {
    const requests: { url: string; text: string }[] = [];
    const meta = (as: string) => ({
      issuer: as,
      authorization_endpoint: `${as}/authorize`,
      token_endpoint: `${as}/token`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      ...(opts.as2Registration === false ? {} : { registration_endpoint: `${as}/register` }),
    });
    const spy = (async (url: string | URL, init?: RequestInit) => {
      const u = new URL(String(url));
      requests.push({
        url: u.href,
        text: `${u.search} ${new Headers(init?.headers).get('authorization') ?? ''} ${String(init?.body ?? '')}`,
      });
      if (u.href === SERVER_URL)
        return new Response('', {
          status: 401,
          headers: { 'www-authenticate': `Bearer scope="mcp", resource_metadata="${PRM_URL}"` },
        });
      if (u.href === PRM_URL) return json({ resource: SERVER_URL, authorization_servers: ['https://as2.example.com'] });
      if (u.host === 'as2.example.com' && u.pathname.startsWith('/.well-known/'))
        return json(meta('https://as2.example.com'));
      if (u.href === 'https://as2.example.com/register')
        return json({ ...(JSON.parse(String(init?.body)) as object), client_id: 'as2-client' }, 201);
      return new Response('', { status: 404 });
    }) as typeof fetch;
    return { spy, requests };
  }
  const start = { server: 'docs', serverUrl: SERVER_URL, redirectUrl: 'http://127.0.0.1:8788/callback' };
  let store: TokenStore;

  test('registers at the new server, presents nothing of the old login, and asks only for what the server names now', async () => {
    store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    await store.write(
      recordAt('https://as1.example.com', { movedTo: 'https://as2.example.com', wantedScope: 'mcp:write' }),
    );
    const { spy, requests } = movedServer();
    const started = await startLogin({ store, fetch: spy }, start);
    const address = new URL(started.authorizationUrl);
    assert.equal(address.origin, 'https://as2.example.com');
    assert.equal(address.searchParams.get('client_id'), 'as2-client');
    assert.equal(
      address.searchParams.get('scope'),
      'mcp',
      'what AS1 granted (offline_access there) is not asked of AS2',
    );
    assert.ok(
      requests.some((r) => r.url === 'https://as2.example.com/register'),
      'registered at the new server',
    );
    assert.ok(!requests.some((r) => r.url.includes('as1.example.com')), 'nothing went to the old server');
    assert.ok(
      !requests.some((r) => r.text.includes('as1-client') || r.text.includes('at-as1') || r.text.includes('rt-as1')),
      "the old login's client and tokens went nowhere",
    );
    const pending = (await store.readPending('docs'))!;
    assert.equal(pending.client.client_id, 'as2-client');
    assert.equal(pending.discovery.authorizationServerUrl, 'https://as2.example.com');
  });

  test('a pre-registered client of the old server is refused, saying what to run', async () => {
    store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    await store.write(
      recordAt('https://as1.example.com', { client: { client_id: 'pre-1' }, clientSecretEnv: 'DOCS_SECRET' }),
    );
    const { spy, requests } = movedServer({ as2Registration: false });
    await assert.rejects(
      startLogin(
        { store, fetch: spy },
        { ...start, client: { clientId: 'pre-1', clientSecret: 'sekrit-value-1', clientSecretEnv: 'DOCS_SECRET' } },
      ),
      /^LoginError: docs: its authorization server moved from https:\/\/as1\.example\.com to https:\/\/as2\.example\.com, and the client pre-1 was registered at the old one: register a client at the new one \(redirect address http:\/\/127\.0\.0\.1:8788\/callback\), then put the server back with its ID: durable-mcp mcp forget docs && durable-mcp mcp add docs https:\/\/mcp\.example\.com\/mcp --client-id <id> \[--client-secret-env <VAR>\]$/,
    );
    assert.ok(
      !requests.some((r) => r.text.includes('pre-1') || r.text.includes('sekrit-value-1')),
      'the client went nowhere',
    );
    assert.equal(await store.readPending('docs'), undefined);
  });

  test('a pre-registered client put back with another ID logs in at the new server', async () => {
    store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    await store.write(recordAt('https://as1.example.com', { client: { client_id: 'pre-1' } }));
    const { spy } = movedServer({ as2Registration: false });
    const started = await startLogin({ store, fetch: spy }, { ...start, client: { clientId: 'pre-2' } });
    assert.equal(new URL(started.authorizationUrl).searchParams.get('client_id'), 'pre-2');
  });
});
