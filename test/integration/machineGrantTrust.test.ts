/**
 * What a machine login trusts, against real OAuth fixture processes (`test/fixtures/oauthServer.ts`)
 * and a real token store, without Temporal: the authorization server of its first grant is pinned,
 * so a server whose metadata names another one (the fixture's second server, "evil") never gets
 * the client secret or an ID-JAG; the ID-JAG is asked for this server's own address, checked
 * before anything is sent; a 401 naming its metadata on another origin is not followed; and what
 * a token endpoint's refusal says in free text never reaches the status.
 */
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { grantMachineTokens, MachineGrantError } from '../../plane/machineGrant.js';
import {
  machineProblemMessage,
  machineToken,
  type MachineClient,
  type MachineTokenDeps,
} from '../../plane/machineLogin.js';
import { createTokenStore } from '../../plane/tokenStore.js';
import { tempDir } from '../support/harness.js';
import { startOAuthFixture, type OAuthFixture } from '../support/oauthFixture.js';

interface Stats {
  clientCredentials: { method: string; scope: string | null; resource: string | null }[];
  idJagExchanges: { audience: string | null; resource: string | null; clientId: string | null }[];
  jwtBearerGrants: { clientId: string; resource: string | null; method: string }[];
  as2Requests: { method: string; path: string }[];
  as2TokenRequests: { grantType: string | null; credentials: string[] }[];
}

const SECRET = `cc-${randomBytes(12).toString('hex')}`;
const ID_TOKEN = `idt-${randomBytes(12).toString('hex')}`;
const secretClient: MachineClient = { clientId: 'fleet', clientSecretEnv: 'FLEET_SECRET', grant: 'client_credentials' };
const env = { FLEET_SECRET: SECRET, USER_ID_TOKEN: ID_TOKEN, DMCP_MCP_ENV: 'FLEET_SECRET,USER_ID_TOKEN' };
const fixtures: OAuthFixture<Stats>[] = [];

async function fixture(
  extra: NodeJS.ProcessEnv,
): Promise<OAuthFixture<Stats> & { as2: string; move(): Promise<void> }> {
  const fx = await startOAuthFixture<Stats>({ OAUTH_FIXTURE_CC_CLIENT: `fleet:${SECRET}`, ...extra });
  fixtures.push(fx);
  return {
    ...fx,
    as2: fx.printed.as2 ?? '',
    move: async () =>
      assert.deepEqual(await (await fetch(new URL('/admin/move-as', fx.issuer), { method: 'POST' })).json(), {
        moved: true,
      }),
  };
}

async function machineDeps(): Promise<MachineTokenDeps> {
  const store = createTokenStore({ dir: join(await tempDir('dmcp-machine-trust-'), 'oauth'), key: randomBytes(32) });
  return {
    store,
    logger: pino({ level: 'silent' }),
    env,
    fetch,
    now: Date.now,
    marginMs: 0,
    remember: () => undefined,
  };
}

after(() => {
  for (const fx of fixtures) fx.child.kill();
});

describe('a machine login pins the authorization server of its first grant', { timeout: 60_000 }, () => {
  test('client credentials: after the server names another authorization server, the secret is not sent there and the status says it moved and what to run', async () => {
    const fx = await fixture({ OAUTH_FIXTURE_SECOND_AS: '1', OAUTH_FIXTURE_TOKEN_TTL: '2' });
    const deps = await machineDeps();
    const first = await machineToken(deps, 'docs', fx.url, secretClient);
    assert.ok('token' in first, JSON.stringify(first));
    assert.equal((await deps.store.read('docs'))?.discovery.authorizationServerMetadata?.issuer, fx.issuer);

    await fx.move();
    await sleep(2_200); // the first token expires: the next one needs a new grant
    const after = await machineToken(deps, 'docs', fx.url, secretClient);
    assert.deepEqual(after, {
      problem: {
        kind: 'moved',
        message: `its authorization server moved from ${fx.issuer} to ${fx.as2}, where its client credentials are not sent (only to where its first grant was made): if the move is expected, durable-mcp mcp logout docs; the next grant is then made at the new one and kept to it`,
      },
    });
    const stats = await fx.stats();
    assert.deepEqual(stats.as2TokenRequests, [], 'the second authorization server got no token request');
    assert.equal(stats.clientCredentials.length, 1, 'one grant, at the first authorization server');
    assert.equal((await deps.store.read('docs'))?.movedTo, fx.as2, 'mcp list can tell');
  });

  test('cross-app access: after the move no ID-JAG is asked for and none is presented at the other authorization server', async () => {
    const fx = await fixture({
      OAUTH_FIXTURE_SECOND_AS: '1',
      OAUTH_FIXTURE_TOKEN_TTL: '2',
      OAUTH_FIXTURE_IDJAG: `idp-fleet:${ID_TOKEN}`,
    });
    const client: MachineClient = {
      ...secretClient,
      grant: 'id_jag',
      idpTokenEndpoint: new URL('/idp/token', fx.issuer).href,
      idpClientId: 'idp-fleet',
      idTokenEnv: 'USER_ID_TOKEN',
    };
    const deps = await machineDeps();
    assert.ok('token' in (await machineToken(deps, 'crm', fx.url, client)));
    await fx.move();
    await sleep(2_200);
    const after = await machineToken(deps, 'crm', fx.url, client);
    assert.equal('problem' in after && after.problem.kind, 'moved', JSON.stringify(after));
    const stats = await fx.stats();
    assert.deepEqual(
      stats.idJagExchanges,
      [{ audience: fx.issuer, resource: fx.url, clientId: 'idp-fleet' }],
      'one exchange, for the first grant',
    );
    assert.deepEqual(stats.as2TokenRequests, []);
  });
});

test(
  'cross-app access: metadata naming another resource than the server is refused before the identity provider is asked',
  { timeout: 30_000 },
  async () => {
    const fx = await fixture({
      OAUTH_FIXTURE_IDJAG: `idp-fleet:${ID_TOKEN}`,
      OAUTH_FIXTURE_PRM_RESOURCE: 'https://elsewhere.example/mcp',
    });
    const client: MachineClient = {
      ...secretClient,
      grant: 'id_jag',
      idpTokenEndpoint: new URL('/idp/token', fx.issuer).href,
      idpClientId: 'idp-fleet',
      idTokenEnv: 'USER_ID_TOKEN',
    };
    const err = await grantMachineTokens({
      server: 'crm',
      serverUrl: fx.url,
      client,
      credential: { clientSecret: SECRET, idToken: ID_TOKEN },
      fetch,
      now: Date.now(),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const stats = await fx.stats();
    assert.deepEqual(stats.idJagExchanges, [], 'the identity provider was not asked');
    assert.deepEqual(stats.jwtBearerGrants, []);
    assert.ok(err instanceof MachineGrantError, String(err));
    assert.equal(
      err.reason,
      `its protected resource metadata names the resource https://elsewhere.example/mcp, which is not ${fx.url}; nothing was sent`,
    );
  },
);

test(
  "a 401 naming its resource metadata on another origin: that origin gets no request, the server's own metadata is used",
  { timeout: 30_000 },
  async () => {
    const fx = await fixture({ OAUTH_FIXTURE_SECOND_AS: '1', OAUTH_FIXTURE_FOREIGN_RESOURCE_METADATA: '1' });
    const probe = await fetch(fx.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    await probe.body?.cancel();
    assert.match(
      probe.headers.get('www-authenticate') ?? '',
      new RegExp(`resource_metadata="${fx.as2}`),
      'the fixture names the other origin',
    );
    const record = await grantMachineTokens({
      server: 'docs',
      serverUrl: fx.url,
      client: secretClient,
      credential: { clientSecret: SECRET },
      fetch,
      now: Date.now(),
    });
    assert.equal(record.discovery.authorizationServerUrl, fx.issuer);
    assert.equal(record.discovery.resourceMetadataUrl, undefined);
    const stats = await fx.stats();
    assert.deepEqual(stats.as2Requests, [], 'the other origin got no request');
    assert.equal(stats.clientCredentials.length, 1);
  },
);

describe("a token endpoint's refusal in the status", { timeout: 30_000 }, () => {
  test('free text (not an OAuth error): only its HTTP status', async () => {
    const text = 'stack trace at db-7.corp.internal: connection refused for user admin';
    const fx = await fixture({ OAUTH_FIXTURE_CC_RAW_ERROR: `503:${text}` });
    const err = await grantMachineTokens({
      server: 'docs',
      serverUrl: fx.url,
      client: secretClient,
      credential: { clientSecret: SECRET },
      fetch,
      now: Date.now(),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof MachineGrantError, String(err));
    assert.equal(
      machineProblemMessage('docs', secretClient, err.reason, err.refused),
      'could not get a token by the client-credentials grant (the token endpoint answered HTTP 503); tried again next turn',
    );
  });

  test('a well-formed OAuth error: its HTTP status and error code, not its description', async () => {
    const fx = await fixture({});
    const err = await grantMachineTokens({
      server: 'docs',
      serverUrl: fx.url,
      client: secretClient,
      credential: { clientSecret: 'not-the-secret-1234' },
      fetch,
      now: Date.now(),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof MachineGrantError, String(err));
    assert.equal(err.refused, true);
    const message = machineProblemMessage('docs', secretClient, err.reason, err.refused);
    assert.match(
      message,
      /^the authorization server refused its client credentials \(the token endpoint answered HTTP 401 invalid_client\): check FLEET_SECRET/,
    );
    assert.ok(!message.includes('invalid client secret'), message);
  });
});
