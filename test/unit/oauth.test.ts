/**
 * The pure parts of OAuth logins, table by table: what a pasted-back address says, the login
 * problems in the exact words the status shows, which address a token may go to, when a token is
 * due for refresh, reasons cut of secrets; and the loopback callback (a taken port named with
 * its variable and the paste-back way, an old login's tab not ending the new one).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { createCredentials, loginProblemMessage } from '../../plane/credentials.js';
import { expiresWithin, refreshDue, sameServerUrl, scopeUnion, shortReason, storedTokens } from '../../plane/tokens.js';
import { listenForCallback, type CallbackOutcome } from '../../plane/loginCallback.js';
import {
  LoginError,
  checkMetadataIssuer,
  parseRedirectAddress,
  safeForTokens,
  withOfflineAccess,
} from '../../plane/loginChecks.js';
import { logout, revocationOf } from '../../plane/logout.js';
import { clientMetadataFor, finishLogin, startLogin } from '../../plane/oauth.js';
import { logoutCommand } from '../../cli/login.js';
import type { Settings } from '../../settings/index.js';
import { createTokenStore } from '../../plane/tokenStore.js';
import { tempDir } from '../support/harness.js';

const pending = { server: 'linear', state: 'S1', startedAt: '2026-01-02T03:04:05.000Z' };

describe('the address the browser ended on', () => {
  const cases: { name: string; address: string; code?: string; error?: RegExp; reason?: 'state' }[] = [
    { name: 'code and state', address: 'http://127.0.0.1:8788/callback?code=abc&state=S1', code: 'abc' },
    { name: 'spaces around it', address: '  http://127.0.0.1:8788/callback?state=S1&code=x%2By \n', code: 'x+y' },
    {
      name: "another login's state",
      address: 'http://127.0.0.1:8788/callback?code=abc&state=S0',
      error: /linear: the address does not belong to the login started 2026-01-02T03:04:05.000Z \(its state differs\)/,
      reason: 'state',
    },
    {
      name: 'no state',
      address: 'http://127.0.0.1:8788/callback?code=abc',
      error: /\(its state is missing\)/,
      reason: 'state',
    },
    {
      name: 'refused',
      address: 'http://127.0.0.1:8788/callback?state=S1&error=access_denied&error_description=user%20said%20no',
      error: /linear: the authorization server refused the login: access_denied \(user said no\)/,
    },
    {
      name: 'no code',
      address: 'http://127.0.0.1:8788/callback?state=S1',
      error: /linear: the address carries no authorization code/,
    },
    {
      name: 'not an address',
      address: 'code=abc&state=S1',
      error: /linear: "code=abc&state=S1" is not an address; paste the whole address/,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      if (c.code !== undefined) {
        assert.deepEqual(parseRedirectAddress(c.address, pending), { code: c.code });
        return;
      }
      assert.throws(
        () => parseRedirectAddress(c.address, pending),
        (err: Error) => {
          assert.ok(err instanceof LoginError);
          assert.match(err.message, c.error!);
          assert.equal(err.reason, c.reason);
          return true;
        },
      );
    });
  }
});

describe('the issuer the address names (RFC 9207)', () => {
  const advertised = { issuer: 'https://auth.example.com', authorization_response_iss_parameter_supported: true };
  const silent = { issuer: 'https://auth.example.com' };
  const base = 'http://127.0.0.1:8788/callback?code=abc&state=S1';
  const cases: {
    name: string;
    address: string;
    metadata?: { issuer?: string; authorization_response_iss_parameter_supported?: boolean };
    error?: RegExp;
  }[] = [
    {
      name: 'present and the same',
      address: `${base}&iss=${encodeURIComponent('https://auth.example.com')}`,
      metadata: advertised,
    },
    {
      name: 'present where not advertised, and the same',
      address: `${base}&iss=${encodeURIComponent('https://auth.example.com')}`,
      metadata: silent,
    },
    { name: 'absent where not advertised', address: base, metadata: silent },
    { name: 'absent where no metadata is known', address: base },
    {
      name: 'absent where advertised',
      address: base,
      metadata: advertised,
      error:
        /linear: the address carries no "iss" parameter, though the authorization server https:\/\/auth\.example\.com says it sends one/,
    },
    {
      name: 'another issuer',
      address: `${base}&iss=${encodeURIComponent('https://evil.example.com')}`,
      metadata: advertised,
      error:
        /linear: the address comes from the issuer "https:\/\/evil\.example\.com", not "https:\/\/auth\.example\.com"/,
    },
    {
      name: 'compared exactly: a trailing slash differs',
      address: `${base}&iss=${encodeURIComponent('https://auth.example.com/')}`,
      metadata: advertised,
      error: /comes from the issuer "https:\/\/auth\.example\.com\/"/,
    },
    {
      name: 'compared exactly: case differs',
      address: `${base}&iss=${encodeURIComponent('https://AUTH.example.com')}`,
      metadata: silent,
      error: /comes from the issuer "https:\/\/AUTH\.example\.com"/,
    },
    {
      name: 'unexpected where no issuer is known',
      address: `${base}&iss=x`,
      error: /names the issuer "x", but the login knows no issuer/,
    },
    {
      name: 'checked before an error is believed',
      address: 'http://127.0.0.1:8788/callback?state=S1&error=access_denied&iss=https%3A%2F%2Fevil.example.com',
      metadata: advertised,
      error: /comes from the issuer "https:\/\/evil\.example\.com"/,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const withDiscovery = {
        ...pending,
        ...(c.metadata ? { discovery: { authorizationServerMetadata: c.metadata as never } } : {}),
      };
      if (!c.error) {
        assert.deepEqual(parseRedirectAddress(c.address, withDiscovery), { code: 'abc' });
        return;
      }
      assert.throws(
        () => parseRedirectAddress(c.address, withDiscovery),
        (err: Error) => err instanceof LoginError && c.error!.test(err.message),
      );
    });
  }
});

describe('login problems in the words of the status', () => {
  const cases = [
    { kind: 'wanted' as const, text: 'wants an account first: durable-mcp mcp login docs' },
    { kind: 'expired' as const, text: 'its login expired or was revoked: durable-mcp mcp login docs' },
    {
      kind: 'refresh_failed' as const,
      detail: { reason: 'fetch failed (ECONNREFUSED)' },
      text: 'could not refresh its login (fetch failed (ECONNREFUSED)); tried again next turn, or durable-mcp mcp login docs',
    },
    {
      kind: 'in_progress' as const,
      detail: { startedAt: new Date('2026-05-06T07:08:09.000Z') },
      text: "a login was started 2026-05-06T07:08:09.000Z and not finished: finish it in the browser, or paste the address it ends on: durable-mcp mcp login docs '<address>'",
    },
    {
      kind: 'insufficient_scope' as const,
      detail: { scope: 'files:read files:write' },
      text: 'wants more access (scope files:read files:write): durable-mcp mcp login docs',
    },
    {
      kind: 'insufficient_scope' as const,
      text: 'wants more access (the server named no scope): durable-mcp mcp login docs',
    },
  ];
  for (const c of cases)
    test(`${c.kind} ${c.detail ? JSON.stringify(c.detail) : ''}`, () =>
      assert.equal(loginProblemMessage(c.kind, 'docs', c.detail), c.text));
});

describe('the union of scopes a new login asks for', () => {
  const cases: { name: string; lists: (string | undefined)[]; want: string | undefined }[] = [
    { name: 'granted and challenged, each once, in order', lists: ['a b', 'b c'], want: 'a b c' },
    { name: 'extra spaces', lists: [' a  b ', undefined, ''], want: 'a b' },
    { name: 'nothing', lists: [undefined, ''], want: undefined },
    { name: 'challenge alone', lists: [undefined, 'mcp:write'], want: 'mcp:write' },
  ];
  for (const c of cases) test(c.name, () => assert.equal(scopeUnion(...c.lists), c.want));
});

describe('a token goes only to the address it was issued for', () => {
  const cases: [string, string, boolean][] = [
    ['https://mcp.example.com/mcp', 'https://mcp.example.com/mcp', true],
    ['https://mcp.example.com/mcp', 'https://mcp.example.com/mcp/', true],
    ['https://mcp.example.com:443/mcp', 'https://mcp.example.com/mcp#x', true],
    ['https://MCP.example.com/mcp', 'https://mcp.example.com/mcp', true],
    ['https://mcp.example.com/mcp', 'https://mcp.example.com/other', false],
    ['https://mcp.example.com/mcp', 'http://mcp.example.com/mcp', false],
    ['https://mcp.example.com/mcp', 'https://evil.example.com/mcp', false],
    ['https://mcp.example.com/mcp', 'https://mcp.example.com:8443/mcp', false],
  ];
  for (const [a, b, same] of cases) test(`${a} vs ${b}`, () => assert.equal(sameServerUrl(a, b), same));
});

describe('when a token is due for refresh', () => {
  const cases: { expiresAt?: number; margin: number; now: number; due: boolean }[] = [
    { expiresAt: undefined, margin: 60_000, now: 1e12, due: false },
    { expiresAt: 1_000_000, margin: 60_000, now: 900_000, due: false },
    { expiresAt: 1_000_000, margin: 60_000, now: 940_000, due: true },
    { expiresAt: 1_000_000, margin: 0, now: 1_000_000, due: true },
    { expiresAt: 1_000_000, margin: 0, now: 999_999, due: false },
  ];
  for (const c of cases)
    test(`expires ${c.expiresAt} margin ${c.margin} now ${c.now}`, () =>
      assert.equal(expiresWithin({ expiresAt: c.expiresAt }, c.margin, c.now), c.due));

  const due: { name: string; obtainedAt: number; expiresAt: number; now: number; due: boolean }[] = [
    { name: 'a 1 h token, 2 min left', obtainedAt: 0, expiresAt: 3_600_000, now: 3_480_000, due: false },
    { name: 'a 1 h token, 59 s left', obtainedAt: 0, expiresAt: 3_600_000, now: 3_541_000, due: true },
    { name: 'a 30 s token, just issued', obtainedAt: 0, expiresAt: 30_000, now: 1_000, due: false },
    { name: 'a 30 s token, half gone', obtainedAt: 0, expiresAt: 30_000, now: 15_000, due: true },
  ];
  for (const c of due)
    test(`refresh due (margin 60 s): ${c.name}`, () => assert.equal(refreshDue(c, 60_000, c.now), c.due));

  test('expires_in becomes an expiry on our clock; none given, none stored', () => {
    assert.equal(storedTokens({ access_token: 'a', token_type: 'bearer', expires_in: 30 }, 1000).expiresAt, 31_000);
    assert.equal('expiresAt' in storedTokens({ access_token: 'a', token_type: 'bearer' }, 1000), false);
  });
});

describe('reasons never carry a token', () => {
  test('known secrets are cut out, whitespace folded, length bounded', () => {
    const token = 'at-very-secret-value';
    const reason = shortReason(new Error(`server said:\n bad token ${token} and ${token}`), [token, 'x']);
    assert.equal(reason, 'server said: bad token [redacted] and [redacted]');
    assert.ok(shortReason(new Error('y'.repeat(500)), []).length <= 160);
  });
  test('OAuth errors keep their code; a network failure its cause', () => {
    assert.equal(
      shortReason(new InvalidGrantError('refresh token revoked'), []),
      'invalid_grant: refresh token revoked',
    );
    assert.equal(
      shortReason(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }), []),
      'fetch failed (ECONNREFUSED)',
    );
  });
});

describe('revocation endpoint from metadata', () => {
  test('present, absent', () => {
    const base = { authorizationServerUrl: 'https://a/' };
    assert.deepEqual(
      revocationOf({
        discovery: {
          ...base,
          authorizationServerMetadata: {
            revocation_endpoint: 'https://a/revoke',
            revocation_endpoint_auth_methods_supported: ['none'],
          } as never,
        },
      }),
      {
        endpoint: 'https://a/revoke',
        methods: ['none'],
      },
    );
    assert.deepEqual(revocationOf({ discovery: base }), {});
  });
});

describe('the loopback callback', () => {
  test('a taken port is named with its variable and the paste-back way', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const { port } = blocker.address() as AddressInfo;
    try {
      await assert.rejects(
        listenForCallback(port, 'docs', async () => ({ done: true, ok: true, message: '' })),
        (err: Error) => {
          assert.ok(err instanceof LoginError);
          assert.match(
            err.message,
            new RegExp(`^port ${port} \\(DMCP_OAUTH_CALLBACK_PORT\\) on 127\\.0\\.0\\.1 is taken`),
          );
          assert.match(err.message, /durable-mcp mcp login docs --no-wait/);
          assert.match(err.message, /durable-mcp mcp login docs '<address>'/);
          return true;
        },
      );
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  test('only GET /callback is handled; an outcome that is not done keeps it listening', async () => {
    const seen: string[] = [];
    const outcomes: CallbackOutcome[] = [
      { done: false, ok: false, message: 'old tab <b>' },
      { done: true, ok: true, message: 'Logged in' },
    ];
    const listener = await listenForCallback(0, 'docs', async (address) => {
      seen.push(address);
      return outcomes.shift()!;
    });
    try {
      const base = `http://127.0.0.1:${listener.port}`;
      assert.equal((await fetch(`${base}/favicon.ico`)).status, 404);
      const stale = await fetch(`${base}/callback?state=old`);
      assert.equal(stale.status, 400);
      assert.match(await stale.text(), /old tab &lt;b&gt;/);
      let finished = false;
      void listener.done.then(() => (finished = true));
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(finished, false);
      const ok = await fetch(`${base}/callback?state=new&code=c`);
      assert.equal(ok.status, 200);
      await listener.done;
      assert.deepEqual(seen, [`${base}/callback?state=old`, `${base}/callback?state=new&code=c`]);
    } finally {
      await listener.close();
    }
  });
});

describe("the metadata's issuer against the address it was found at", () => {
  const cases: { name: string; builtFrom: string; issuer?: string; ok: boolean }[] = [
    {
      name: 'the same',
      builtFrom: 'https://auth.example.com/tenant1',
      issuer: 'https://auth.example.com/tenant1',
      ok: true,
    },
    { name: 'a trailing slash', builtFrom: 'https://auth.example.com/', issuer: 'https://auth.example.com', ok: true },
    {
      name: "no issuer in the metadata (validated by the SDK's schema elsewhere)",
      builtFrom: 'https://auth.example.com',
      ok: true,
    },
    { name: 'another host', builtFrom: 'https://auth.example.com', issuer: 'https://evil.example.com', ok: false },
    {
      name: 'another tenant',
      builtFrom: 'https://auth.example.com/tenant1',
      issuer: 'https://auth.example.com/tenant2',
      ok: false,
    },
    { name: 'http for https', builtFrom: 'https://auth.example.com', issuer: 'http://auth.example.com', ok: false },
  ];
  for (const c of cases) {
    test(c.name, () => {
      if (c.ok) assert.doesNotThrow(() => checkMetadataIssuer('docs', c.builtFrom, c.issuer));
      else
        assert.throws(
          () => checkMetadataIssuer('docs', c.builtFrom, c.issuer),
          /^LoginError: docs: the authorization server metadata found for .* names another issuer, ".*"; refusing to log in through it$/,
        );
    });
  }
});

describe('offline_access where the authorization server lists it', () => {
  const cases: { name: string; scope?: string; supported?: string[]; want?: string }[] = [
    {
      name: 'listed: added',
      scope: 'read write',
      supported: ['read', 'write', 'offline_access'],
      want: 'read write offline_access',
    },
    { name: 'listed, no scope asked: asked alone', supported: ['offline_access'], want: 'offline_access' },
    {
      name: 'listed and already asked: kept once',
      scope: 'offline_access read',
      supported: ['offline_access'],
      want: 'offline_access read',
    },
    { name: 'not listed: unchanged', scope: 'read', supported: ['read'], want: 'read' },
    { name: 'no list, no scope: none', supported: undefined, want: undefined },
  ];
  for (const c of cases) test(c.name, () => assert.equal(withOfflineAccess(c.scope, c.supported), c.want));
});

/** An MCP server and its authorization server, answered in memory; what registration was sent. */
function fakeAuthorizationServer(
  issuer = 'https://auth.example.com',
  extra: Record<string, unknown> = {},
): { spy: typeof fetch; registered: Record<string, unknown>[] } {
  const registered: Record<string, unknown>[] = [];
  const json = (body: unknown) =>
    new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
  const spy = (async (url: string | URL, init?: RequestInit) => {
    const u = new URL(String(url));
    if (u.href === 'https://mcp.example.com/mcp')
      return new Response('', {
        status: 401,
        headers: {
          'www-authenticate':
            'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"',
        },
      });
    if (u.pathname.startsWith('/.well-known/oauth-protected-resource'))
      return json({
        resource: 'https://mcp.example.com/mcp',
        authorization_servers: ['https://auth.example.com'],
        scopes_supported: ['mcp'],
      });
    if (u.host === 'auth.example.com' && u.pathname.startsWith('/.well-known/')) {
      return json({
        issuer,
        authorization_endpoint: 'https://auth.example.com/authorize',
        token_endpoint: 'https://auth.example.com/token',
        registration_endpoint: 'https://auth.example.com/register',
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
        scopes_supported: ['mcp', 'offline_access'],
        ...extra,
      });
    }
    if (u.href === 'https://auth.example.com/register') {
      const body = JSON.parse(String(init?.body)) as Record<string, unknown>;
      registered.push(body);
      return new Response(JSON.stringify({ ...body, client_id: 'c1' }), {
        status: 201,
        headers: { 'content-type': 'application/json' },
      });
    }
    return new Response('', { status: 404 });
  }) as typeof fetch;
  return { spy, registered };
}

describe('what the login tells the authorization server', () => {
  test('dynamic registration names a native application; the authorization asks offline_access where listed', async () => {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    const { spy, registered } = fakeAuthorizationServer();
    const started = await startLogin(
      { store, fetch: spy },
      { server: 'docs', serverUrl: 'https://mcp.example.com/mcp', redirectUrl: 'http://127.0.0.1:8788/callback' },
    );
    assert.equal(registered.length, 1);
    assert.equal(registered[0]!.application_type, 'native');
    assert.deepEqual(registered[0]!.redirect_uris, ['http://127.0.0.1:8788/callback']);
    assert.equal(new URL(started.authorizationUrl).searchParams.get('client_id'), 'c1');
    assert.equal(new URL(started.authorizationUrl).searchParams.get('scope'), 'mcp offline_access');
    assert.equal(
      new URL((await store.readPending('docs'))!.authorizationUrl).searchParams.get('scope'),
      'mcp offline_access',
    );
  });

  test('a client ID metadata document: its address is the client ID where the authorization server accepts one, else registration', async () => {
    const metadataUrl = 'https://example.org/dmcp/client.json';
    const cases = [
      {
        name: 'accepted',
        extra: { client_id_metadata_document_supported: true },
        clientId: metadataUrl,
        registrations: 0,
      },
      {
        name: 'accepted without registration',
        extra: { client_id_metadata_document_supported: true, registration_endpoint: undefined },
        clientId: metadataUrl,
        registrations: 0,
      },
      { name: 'not advertised', extra: {}, clientId: 'c1', registrations: 1 },
    ];
    for (const c of cases) {
      const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
      const { spy, registered } = fakeAuthorizationServer('https://auth.example.com', c.extra);
      const started = await startLogin(
        { store, fetch: spy },
        {
          server: 'docs',
          serverUrl: 'https://mcp.example.com/mcp',
          redirectUrl: 'http://127.0.0.1:8788/callback',
          clientMetadataUrl: metadataUrl,
        },
      );
      assert.equal(new URL(started.authorizationUrl).searchParams.get('client_id'), c.clientId, c.name);
      assert.equal(registered.length, c.registrations, c.name);
      assert.equal((await store.readPending('docs'))!.client.client_id, c.clientId, c.name);
    }
  });

  test('the document the operator hosts names its own address and the callback', () => {
    assert.deepEqual(clientMetadataFor('http://127.0.0.1:8788/callback', 'https://example.org/c.json'), {
      client_id: 'https://example.org/c.json',
      client_name: 'durable-mcp',
      redirect_uris: ['http://127.0.0.1:8788/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
    });
  });

  test('metadata naming another issuer ends the login before any address is handed out', async () => {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    const { spy, registered } = fakeAuthorizationServer('https://evil.example.com');
    await assert.rejects(
      startLogin(
        { store, fetch: spy },
        { server: 'docs', serverUrl: 'https://mcp.example.com/mcp', redirectUrl: 'http://127.0.0.1:8788/callback' },
      ),
      /^LoginError: docs: the authorization server metadata found for https:\/\/auth\.example\.com names another issuer, "https:\/\/evil\.example\.com"/,
    );
    // None of its endpoints was used: not even registration.
    assert.deepEqual(registered, []);
    assert.equal(await store.readPending('docs'), undefined);
  });

  test("a server without protected resource metadata (2025-03-26) named no issuer: its origin's metadata is used as it is", async () => {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    const json = (body: unknown, status = 200) =>
      new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    const spy = (async (url: string | URL, init?: RequestInit) => {
      const u = new URL(String(url));
      if (u.pathname === '/mcp') return new Response('', { status: 401 });
      if (u.pathname === '/.well-known/oauth-authorization-server') {
        return json({
          issuer: 'https://mcp.example.com/oauth',
          authorization_endpoint: 'https://mcp.example.com/oauth/authorize',
          token_endpoint: 'https://mcp.example.com/oauth/token',
          registration_endpoint: 'https://mcp.example.com/oauth/register',
          response_types_supported: ['code'],
        });
      }
      if (u.pathname === '/oauth/register')
        return json({ ...(JSON.parse(String(init?.body)) as object), client_id: 'c2' }, 201);
      return new Response('', { status: 404 });
    }) as typeof fetch;
    const started = await startLogin(
      { store, fetch: spy },
      { server: 'old', serverUrl: 'https://mcp.example.com/mcp', redirectUrl: 'http://127.0.0.1:8788/callback' },
    );
    assert.equal(
      new URL(started.authorizationUrl).origin + new URL(started.authorizationUrl).pathname,
      'https://mcp.example.com/oauth/authorize',
    );
    assert.equal(new URL(started.authorizationUrl).searchParams.get('client_id'), 'c2');
  });

  test('a 2026-07-28 server that refuses initialize before asking for a token: the scope of its server/discover 401 is asked for', async () => {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    const { spy: inner } = fakeAuthorizationServer();
    const spy = (async (url: string | URL, init?: RequestInit) => {
      if (String(url) === 'https://mcp.example.com/mcp') {
        const method = (JSON.parse(String(init?.body)) as { method: string }).method;
        if (method === 'initialize') return new Response('{}', { status: 400 });
        return new Response('', {
          status: 401,
          headers: {
            'www-authenticate':
              'Bearer scope="mcp:basic", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"',
          },
        });
      }
      return inner(url, init);
    }) as typeof fetch;
    const started = await startLogin(
      { store, fetch: spy },
      { server: 'docs', serverUrl: 'https://mcp.example.com/mcp', redirectUrl: 'http://127.0.0.1:8788/callback' },
    );
    assert.equal(new URL(started.authorizationUrl).searchParams.get('scope'), 'mcp:basic offline_access');
  });

  test('an address from another issuer is refused before the code is exchanged', async () => {
    const calls: string[] = [];
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    await writePendingLogin(store, 'https://auth.example.com/', {
      issuer: 'https://auth.example.com',
      authorization_endpoint: 'https://auth.example.com/authorize',
      token_endpoint: 'https://auth.example.com/token',
      response_types_supported: ['code'],
      authorization_response_iss_parameter_supported: true,
    });
    const spy = recordingFetch(calls, 500);
    await assert.rejects(
      finishLogin(
        { store, fetch: spy },
        {
          server: 'docs',
          redirectAddress: 'http://127.0.0.1:8788/callback?code=abc&state=S1&iss=https%3A%2F%2Fevil.example.com',
        },
      ),
      /^LoginError: docs: the address comes from the issuer "https:\/\/evil\.example\.com", not "https:\/\/auth\.example\.com"/,
    );
    await assert.rejects(
      finishLogin(
        { store, fetch: spy },
        { server: 'docs', redirectAddress: 'http://127.0.0.1:8788/callback?code=abc&state=S1' },
      ),
      /^LoginError: docs: the address carries no "iss" parameter/,
    );
    assert.deepEqual(calls, []);
  });
});

describe('no login over plain http to another machine', () => {
  test('a server address in plain http off this machine is refused before any request', async () => {
    const calls: string[] = [];
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    const spy = (async (url: string | URL) => {
      calls.push(String(url));
      return new Response('', { status: 401 });
    }) as typeof fetch;
    await assert.rejects(
      startLogin(
        { store, fetch: spy },
        { server: 'docs', serverUrl: 'http://mcp.example.com/mcp', redirectUrl: 'http://127.0.0.1:8788/callback' },
      ),
      /^LoginError: docs: http:\/\/mcp\.example\.com\/mcp is plain http to another machine: the login's code and tokens would cross the network readable; use an https:\/\/ address$/,
    );
    assert.deepEqual(calls, []);
  });

  test('a token endpoint in plain http off this machine is refused before the code is exchanged', async () => {
    const calls: string[] = [];
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    await writePendingLogin(store, 'http://auth.example.com/', {
      issuer: 'http://auth.example.com/',
      authorization_endpoint: 'https://auth.example.com/authorize',
      token_endpoint: 'http://auth.example.com/token',
      response_types_supported: ['code'],
    });
    const spy = recordingFetch(calls, 500);
    await assert.rejects(
      finishLogin(
        { store, fetch: spy },
        { server: 'docs', redirectAddress: 'http://127.0.0.1:8788/callback?code=abc&state=S1' },
      ),
      /^LoginError: docs: the token endpoint http:\/\/auth\.example\.com\/token is plain http to another machine/,
    );
    assert.deepEqual(calls, []);
  });

  const cases: [string, boolean][] = [
    ['https://mcp.example.com/mcp', true],
    ['http://127.0.0.1:3000/mcp', true],
    ['http://localhost:3000/mcp', true],
    ['http://[::1]:3000/mcp', true],
    ['http://mcp.example.com/mcp', false],
    ['http://10.0.0.5/mcp', false],
    ['ftp://mcp.example.com/mcp', false],
  ];
  for (const [url, ok] of cases)
    test(`${url}: ${ok ? 'allowed' : 'refused'}`, () => assert.equal(safeForTokens(url), ok));
});

describe('no logout over plain http to another machine', () => {
  async function loggedIn(revocationEndpoint: string) {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    await store.write({
      server: 'docs',
      serverUrl: 'https://mcp.example.com/mcp',
      loginId: 'l1',
      createdAt: '2026-01-02T03:04:05.000Z',
      discovery: {
        authorizationServerUrl: 'https://auth.example.com/',
        authorizationServerMetadata: {
          issuer: 'https://auth.example.com/',
          authorization_endpoint: 'https://auth.example.com/authorize',
          token_endpoint: 'https://auth.example.com/token',
          revocation_endpoint: revocationEndpoint,
          response_types_supported: ['code'],
        },
      },
      client: { client_id: 'c1', client_secret: 'client-secret-value' },
      tokens: {
        access_token: 'at-secret-value',
        refresh_token: 'rt-secret-value',
        token_type: 'bearer',
        obtainedAt: 0,
      },
    });
    return store;
  }
  /** Fails loudly: any request at all is the bug. */
  const noFetch = (async (url: string | URL) => {
    throw new Error(`nothing may be fetched, but ${String(url)} was`);
  }) as typeof fetch;

  test('a revocation endpoint in plain http off this machine gets no token; the login is deleted anyway', async () => {
    const store = await loggedIn('http://auth.example.com/revoke');
    const result = await logout({ store, fetch: noFetch }, 'docs');
    assert.equal(result.deleted, true);
    assert.deepEqual(result.revoked, []);
    assert.equal(result.revocationEndpoint, 'http://auth.example.com/revoke');
    assert.equal(result.failures.length, 1, JSON.stringify(result.failures));
    assert.match(
      result.failures[0]!,
      /^the tokens: the revocation endpoint http:\/\/auth\.example\.com\/revoke is plain http to another machine/,
    );
    assert.equal(await store.read('docs'), undefined);
  });

  test('mcp logout says it revoked nothing and why, deletes, and exits 1', async () => {
    const store = await loggedIn('http://10.0.0.5/revoke');
    const out: string[] = [];
    const err: string[] = [];
    const code = await logoutCommand({
      server: 'docs',
      settings: {} as Settings,
      store,
      fetch: noFetch,
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    assert.equal(code, 1);
    assert.deepEqual(err, [
      'docs: could not revoke the tokens: the revocation endpoint http://10.0.0.5/revoke is plain http to another machine: the tokens would cross the network readable, so none was sent; they stay valid there until they expire',
    ]);
    assert.deepEqual(out, ['docs: logged out; the login is deleted for every worker.']);
    assert.equal(await store.read('docs'), undefined);
    assert.ok(![...out, ...err].some((l) => /secret-value/.test(l)));
  });

  test('a loopback http revocation endpoint is still used', async () => {
    const store = await loggedIn('http://127.0.0.1:9/revoke');
    const seen: string[] = [];
    const ok = (async (url: string | URL) => {
      seen.push(String(url));
      return new Response('', { status: 200 });
    }) as typeof fetch;
    const result = await logout({ store, fetch: ok }, 'docs');
    assert.deepEqual(result.revoked, ['refresh_token', 'access_token']);
    assert.deepEqual(seen, ['http://127.0.0.1:9/revoke', 'http://127.0.0.1:9/revoke']);
    assert.equal(result.deleted, true);
  });
});

/** A login waiting for its redirect, as `startLogin` leaves it, against the given authorization server. */
type PendingLogin = Parameters<ReturnType<typeof createTokenStore>['writePending']>[0];

async function writePendingLogin(
  store: ReturnType<typeof createTokenStore>,
  authorizationServerUrl: string,
  authorizationServerMetadata: NonNullable<PendingLogin['discovery']>['authorizationServerMetadata'],
): Promise<void> {
  await store.writePending({
    server: 'docs',
    serverUrl: 'https://mcp.example.com/mcp',
    startedAt: '2026-01-02T03:04:05.000Z',
    state: 'S1',
    codeVerifier: 'v'.repeat(43),
    redirectUrl: 'http://127.0.0.1:8788/callback',
    authorizationUrl: 'https://auth.example.com/authorize',
    discovery: { authorizationServerUrl, authorizationServerMetadata },
    client: { client_id: 'c1' },
  });
}

/** A fetch that answers every request with `status` and an empty JSON body, recording each address in `calls`. */
function recordingFetch(calls: string[], status: number): typeof fetch {
  return (async (url: string | URL) => {
    calls.push(String(url));
    return new Response('{}', { status });
  }) as typeof fetch;
}

describe('a pre-registered client (no dynamic registration)', () => {
  /** An authorization server without registration that takes `client_secret_basic` at its token endpoint; what reached it. */
  function noRegistrationServer(): {
    spy: typeof fetch;
    requests: { url: string; authorization: string | null; body: string }[];
  } {
    const requests: { url: string; authorization: string | null; body: string }[] = [];
    const json = (body: unknown) =>
      new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
    const spy = (async (url: string | URL, init?: RequestInit) => {
      const u = new URL(String(url));
      requests.push({
        url: u.href,
        authorization: new Headers(init?.headers).get('authorization'),
        body: String(init?.body ?? ''),
      });
      if (u.href === 'https://mcp.example.com/mcp')
        return new Response('', {
          status: 401,
          headers: {
            'www-authenticate':
              'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"',
          },
        });
      if (u.pathname.startsWith('/.well-known/oauth-protected-resource'))
        return json({ resource: 'https://mcp.example.com/mcp', authorization_servers: ['https://auth.example.com'] });
      if (u.host === 'auth.example.com' && u.pathname.startsWith('/.well-known/')) {
        return json({
          issuer: 'https://auth.example.com',
          authorization_endpoint: 'https://auth.example.com/authorize',
          token_endpoint: 'https://auth.example.com/token',
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['client_secret_basic'],
        });
      }
      if (u.href === 'https://auth.example.com/token')
        return json({ access_token: 'at-1', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt-1' });
      return new Response('', { status: 404 });
    }) as typeof fetch;
    return { spy, requests };
  }
  const start = {
    server: 'docs',
    serverUrl: 'https://mcp.example.com/mcp',
    redirectUrl: 'http://127.0.0.1:8788/callback',
  };

  test('without a client ID the login says how to add one', async () => {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    await assert.rejects(
      startLogin({ store, fetch: noRegistrationServer().spy }, start),
      /^LoginError: docs: the authorization server https:\/\/auth\.example\.com\/? offers no dynamic client registration: register a client there \(redirect address http:\/\/127\.0\.0\.1:8788\/callback\), then put the server back with its ID: durable-mcp mcp forget docs && durable-mcp mcp add docs https:\/\/mcp\.example\.com\/mcp --client-id <id> \[--client-secret-env <VAR>\]$/,
    );
  });

  test("the login uses the client as given, sends its secret the way the server advertises, and stores only the variable's name", async () => {
    const dir = await tempDir();
    const key = randomBytes(32);
    const store = createTokenStore({ dir, key });
    const { spy, requests } = noRegistrationServer();
    const started = await startLogin(
      { store, fetch: spy },
      {
        ...start,
        client: { clientId: 'pre-1', clientSecret: 'sekrit-value-1', clientSecretEnv: 'DOCS_CLIENT_SECRET' },
      },
    );
    assert.equal(new URL(started.authorizationUrl).searchParams.get('client_id'), 'pre-1');
    assert.ok(!requests.some((r) => r.url.endsWith('/register')), 'no registration');
    const pending = (await store.readPending('docs'))!;
    assert.equal(pending.clientSecretEnv, 'DOCS_CLIENT_SECRET');
    assert.ok(!JSON.stringify(pending).includes('sekrit-value-1'), 'the pending login holds no secret');
    const state = new URL(started.authorizationUrl).searchParams.get('state')!;
    const address = `http://127.0.0.1:8788/callback?code=abc&state=${state}&iss=${encodeURIComponent('https://auth.example.com')}`;
    await assert.rejects(
      finishLogin({ store, fetch: spy }, { server: 'docs', redirectAddress: address }),
      /^LoginError: docs: the client's secret is read from DOCS_CLIENT_SECRET, which is not set here: set it and paste the address again: durable-mcp mcp login docs '<address>'$/,
    );
    await finishLogin(
      { store, fetch: spy },
      { server: 'docs', redirectAddress: address, clientSecret: 'sekrit-value-1' },
    );
    const token = requests.find((r) => r.url === 'https://auth.example.com/token')!;
    assert.equal(token.authorization, `Basic ${Buffer.from('pre-1:sekrit-value-1').toString('base64')}`);
    assert.ok(!token.body.includes('client_secret'), 'basic, not post');
    const record = (await store.read('docs'))!;
    assert.equal(record.clientSecretEnv, 'DOCS_CLIENT_SECRET');
    assert.equal(record.client.client_id, 'pre-1');
    assert.ok(!JSON.stringify(record).includes('sekrit-value-1'), 'the login holds no secret');
  });

  test('a worker refreshes with the secret from its own variable, and only when DMCP_MCP_ENV lists it', async () => {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    const t0 = Date.parse('2026-01-02T03:04:05.000Z');
    await store.write({
      server: 'docs',
      serverUrl: 'https://mcp.example.com/mcp',
      loginId: 'L1',
      createdAt: new Date(t0).toISOString(),
      discovery: {
        authorizationServerUrl: 'https://auth.example.com/',
        authorizationServerMetadata: {
          issuer: 'https://auth.example.com',
          authorization_endpoint: 'https://auth.example.com/authorize',
          token_endpoint: 'https://auth.example.com/token',
          response_types_supported: ['code'],
          token_endpoint_auth_methods_supported: ['client_secret_post'],
        },
      },
      client: { client_id: 'pre-1' },
      clientSecretEnv: 'DOCS_CLIENT_SECRET',
      tokens: {
        access_token: 'at-0',
        token_type: 'Bearer',
        refresh_token: 'rt-0',
        obtainedAt: t0,
        expiresAt: t0 + 30_000,
      },
    });
    const bodies: string[] = [];
    const spy = (async (_url: string | URL, init?: RequestInit) => {
      bodies.push(String(init?.body));
      return new Response(JSON.stringify({ access_token: 'at-1', token_type: 'Bearer', expires_in: 3600 }), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    }) as typeof fetch;
    const quiet = () => undefined;
    const logger = { info: quiet, warn: quiet, debug: quiet, error: quiet } as unknown as Parameters<
      typeof createCredentials
    >[0]['logger'];
    const unlisted = createCredentials({
      store,
      logger,
      fetch: spy,
      now: () => t0 + 60_000,
      env: { DOCS_CLIENT_SECRET: 'sekrit-value-1' },
    });
    assert.deepEqual(await unlisted.accessToken('docs', 'https://mcp.example.com/mcp'), {
      problem: {
        kind: 'refresh_failed',
        message:
          'could not refresh its login (its client secret is read from DOCS_CLIENT_SECRET, which this worker may not read: list it in DMCP_MCP_ENV); tried again next turn, or durable-mcp mcp login docs',
      },
    });
    assert.deepEqual(bodies, []);
    const listed = createCredentials({
      store,
      logger,
      fetch: spy,
      now: () => t0 + 60_000,
      env: { DOCS_CLIENT_SECRET: 'sekrit-value-1', DMCP_MCP_ENV: 'DOCS_CLIENT_SECRET' },
    });
    assert.deepEqual(await listed.accessToken('docs', 'https://mcp.example.com/mcp'), { token: 'at-1', loginId: 'L1' });
    assert.equal(
      new URLSearchParams(bodies[0]).get('client_secret'),
      'sekrit-value-1',
      'client_secret_post, as advertised',
    );
    assert.ok(
      !JSON.stringify(await store.read('docs')).includes('sekrit-value-1'),
      'the refreshed login holds no secret',
    );
  });
});
