/**
 * Cross-app access (`mcp add --id-jag`) against a real OAuth-protected MCP server with an identity
 * provider (`test/fixtures/oauthServer.ts`, OAUTH_FIXTURE_IDJAG): the worker's grant exchanges the
 * ID token at the IdP for an ID-JAG (audience the server's issuer, resource the server) and
 * presents it with the JWT-bearer grant over HTTP Basic; the token it gets opens the server. An ID
 * token the IdP refuses (expired) is a refusal that names the variable to refresh, and neither the
 * ID token nor the secret appears in it. No Temporal: the turn-level path is the conformance
 * scenario `auth/cross-app-access-complete-flow`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { grantMachineTokens, MachineGrantError } from '../../plane/machineGrant.js';
import { machineCredentialOf, machineProblemMessage, type MachineClient } from '../../plane/machineLogin.js';
import { startOAuthFixture, type OAuthFixture } from '../support/oauthFixture.js';

interface Stats {
  idJagExchanges: { audience: string | null; resource: string | null; clientId: string | null }[];
  refusedIdTokens: number;
  jwtBearerGrants: { clientId: string; resource: string | null; method: string }[];
}

const SECRET = randomBytes(12).toString('hex');
const ID_TOKEN = `idt-${randomBytes(12).toString('hex')}`;
let fixture: OAuthFixture<Stats>;
let client: MachineClient;
const env = { CRM_SECRET: SECRET, USER_ID_TOKEN: ID_TOKEN, DMCP_MCP_ENV: 'CRM_SECRET,USER_ID_TOKEN' };

before(async () => {
  fixture = await startOAuthFixture<Stats>({
    OAUTH_FIXTURE_CC_CLIENT: `crm-app:${SECRET}`,
    OAUTH_FIXTURE_IDJAG: `idp-crm-app:${ID_TOKEN}`,
  });
  client = {
    clientId: 'crm-app',
    clientSecretEnv: 'CRM_SECRET',
    grant: 'id_jag',
    idpTokenEndpoint: new URL('/idp/token', fixture.issuer).href,
    idpClientId: 'idp-crm-app',
    idTokenEnv: 'USER_ID_TOKEN',
  };
});

after(() => {
  fixture?.child.kill('SIGTERM');
});

async function opens(token: string): Promise<number> {
  const res = await fetch(fixture.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  await res.body?.cancel();
  return res.status;
}

test('the ID token is exchanged for an ID-JAG for this server, which the JWT-bearer grant turns into a token that opens it', async () => {
  const credential = machineCredentialOf(client, env, true);
  assert.ok(!('reason' in credential));
  const record = await grantMachineTokens({
    server: 'crm',
    serverUrl: fixture.url,
    client,
    credential,
    fetch,
    now: Date.now(),
  });
  assert.equal(record.grant, 'id_jag');
  assert.equal(await opens(record.tokens.access_token), 200);
  assert.equal(await opens('at-not-a-token'), 401);
  const stats = await fixture.stats();
  assert.deepEqual(stats.idJagExchanges, [
    { audience: fixture.issuer, resource: fixture.url, clientId: 'idp-crm-app' },
  ]);
  assert.deepEqual(stats.jwtBearerGrants, [
    { clientId: 'crm-app', resource: fixture.url, method: 'client_secret_basic' },
  ]);
  assert.ok(
    !JSON.stringify(record).includes(SECRET) && !JSON.stringify(record).includes(ID_TOKEN),
    'the login record holds neither the secret nor the ID token',
  );
});

test('an ID token the identity provider refuses is a refusal naming the variable to refresh, quoting no secret', async () => {
  await fetch(new URL('/admin/expire-id-token', fixture.issuer), { method: 'POST' });
  const credential = machineCredentialOf(client, env, true);
  assert.ok(!('reason' in credential));
  const err = await grantMachineTokens({
    server: 'crm',
    serverUrl: fixture.url,
    client,
    credential,
    fetch,
    now: Date.now(),
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof MachineGrantError, String(err));
  assert.equal(err.refused, true);
  const message = machineProblemMessage('crm', client, err.reason, err.refused);
  assert.match(
    message,
    /^the identity provider refused the ID token in USER_ID_TOKEN \(.*\): it may have expired; set USER_ID_TOKEN to a fresh one on the workers; tried again next turn$/,
  );
  assert.ok(!message.includes(ID_TOKEN) && !message.includes(SECRET));
  assert.equal((await fixture.stats()).refusedIdTokens, 1);
});

test('an identity provider that does not answer is no refusal', async () => {
  const gone: MachineClient = { ...client, idpTokenEndpoint: 'http://127.0.0.1:9/idp/token' };
  const credential = machineCredentialOf(gone, env, true);
  assert.ok(!('reason' in credential));
  const err = await grantMachineTokens({
    server: 'crm',
    serverUrl: fixture.url,
    client: gone,
    credential,
    fetch,
    now: Date.now(),
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof MachineGrantError, String(err));
  assert.equal(err.refused, false);
  assert.match(
    machineProblemMessage('crm', gone, err.reason, err.refused),
    /^could not get a token by the cross-app access \(ID-JAG\) grant \(the identity provider at http:\/\/127\.0\.0\.1:9\/idp\/token did not answer/,
  );
});
