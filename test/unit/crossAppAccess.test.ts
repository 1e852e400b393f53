/**
 * Cross-app access logins' pure side (`mcp add --id-jag`): the flags and the shelf entry checks, the
 * variables the workers must list, the secret and ID token read from the worker's environment, the
 * login ID, what the status says when the identity provider refuses, and what `mcp list` shows.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { serverState } from '../../cli/commands/mcp/listView.js';
import type { ShelfEntry, ShelfServer, ShelfState } from '../../contract/index.js';
import { machineLoginId } from '../../plane/machineGrant.js';
import { machineCredentialOf, machineProblemMessage, type MachineClient } from '../../plane/machineLogin.js';
import { machineClientsOf } from '../../plane/shelfLayer.js';
import {
  ShelfInputError,
  parseAddArguments,
  shelfEntryProblem,
  signShelfGrant,
  signShelfServer,
  workerVariablesOf,
} from '../../plane/shelf.js';

const URL_ = 'https://fleet.example/mcp';
const IDP = 'https://idp.example/oauth2/token';
const FLAGS = {
  target: [URL_],
  clientId: 'app',
  clientSecretEnv: 'APP_SECRET',
  idJag: true,
  idpTokenEndpoint: IDP,
  idpClientId: 'idp-app',
  idTokenEnv: 'USER_ID_TOKEN',
};
const CLIENT: MachineClient = {
  clientId: 'app',
  clientSecretEnv: 'APP_SECRET',
  grant: 'id_jag',
  idpTokenEndpoint: IDP,
  idpClientId: 'idp-app',
  idTokenEnv: 'USER_ID_TOKEN',
};

test('mcp add --id-jag: the client secret, the identity provider and the ID token variable, all of them; the flags only with --id-jag', () => {
  assert.deepEqual(parseAddArguments('crm', FLAGS).entry, { type: 'http', url: URL_, oauth: CLIENT });
  assert.deepEqual(parseAddArguments('crm', { ...FLAGS, idTokenEnv: '${USER_ID_TOKEN}' }).entry, {
    type: 'http',
    url: URL_,
    oauth: CLIENT,
  });
  const refused: [Parameters<typeof parseAddArguments>[1], string, RegExp][] = [
    [{ ...FLAGS, clientId: undefined, clientSecretEnv: undefined }, 'oauth.clientId', /needs --client-id/],
    [
      { ...FLAGS, idpTokenEndpoint: undefined },
      'oauth.idpTokenEndpoint',
      /a cross-app access login \(--id-jag\) needs --idp-token-endpoint <URL>/,
    ],
    [{ ...FLAGS, idpClientId: undefined }, 'oauth.idpClientId', /needs --idp-client-id <ID>/],
    [{ ...FLAGS, idTokenEnv: undefined }, 'oauth.idTokenEnv', /needs --id-token-env <VAR>/],
    [
      { ...FLAGS, clientSecretEnv: undefined },
      'oauth.clientSecretEnv',
      /authenticates to the server's authorization server with a secret: give --client-secret-env <VAR>/,
    ],
    [{ ...FLAGS, privateKeyEnv: 'K' }, 'oauth.privateKeyEnv', /with a secret, not a private key/],
    [
      { ...FLAGS, idTokenEnv: 'eyJhbGciOiJFUzI1NiJ9.e30.sig' },
      'oauth.idTokenEnv',
      /takes the name of a variable holding the ID token, not the token itself/,
    ],
    [
      { ...FLAGS, idpTokenEndpoint: 'idp.example/token' },
      'oauth.idpTokenEndpoint',
      /must be the identity provider's http\(s\) token endpoint/,
    ],
    [
      { ...FLAGS, idpTokenEndpoint: 'https://u:p@idp.example/token' },
      'oauth.idpTokenEndpoint',
      /without a user name or password/,
    ],
    [{ ...FLAGS, idpClientId: ' ' }, 'oauth.idpClientId', /must be the client ID the identity provider gave/],
    [
      { ...FLAGS, clientCredentials: true },
      'oauth.grant',
      /--id-jag and --client-credentials are two different machine logins/,
    ],
    [
      { target: [URL_], clientId: 'app', idpClientId: 'idp-app' },
      'oauth.idpClientId',
      /--idp-client-id is for a cross-app access login \(--id-jag\)/,
    ],
    [
      { target: [URL_], clientId: 'app', clientCredentials: true, clientSecretEnv: 'S', idTokenEnv: 'T' },
      'oauth.idTokenEnv',
      /--id-token-env is for a cross-app access login/,
    ],
  ];
  for (const [args, field, message] of refused) {
    assert.throws(
      () => parseAddArguments('crm', args),
      (err: unknown) => err instanceof ShelfInputError && err.field === field && message.test(err.message),
      JSON.stringify(args),
    );
  }
});

test('a cross-app access entry on the shelf: checked like the flags, and both its variables are ones the workers must list', () => {
  const entry: ShelfEntry = { type: 'http', url: URL_, oauth: CLIENT };
  assert.equal(shelfEntryProblem('crm', entry), undefined);
  assert.deepEqual(workerVariablesOf(entry).sort(), ['APP_SECRET', 'USER_ID_TOKEN']);
  const rows: [ShelfEntry, string, RegExp][] = [
    [
      { type: 'http', url: URL_, oauth: { ...CLIENT, idpTokenEndpoint: undefined } },
      'oauth.idpTokenEndpoint',
      /^server "crm": a cross-app access login \(oauth\.grant: id_jag\) needs oauth\.idpTokenEndpoint/,
    ],
    [
      { type: 'http', url: URL_, oauth: { clientId: 'app', idTokenEnv: 'T' } },
      'oauth.idTokenEnv',
      /oauth\.idTokenEnv is for a cross-app access login \(oauth\.grant: id_jag\)/,
    ],
  ];
  for (const [bad, field, message] of rows) {
    const problem = shelfEntryProblem('crm', bad);
    assert.equal(problem?.field, field);
    assert.match(problem?.message ?? '', message);
  }
});

test('a worker makes the cross-app access grant only for entries granted to the agent whose proofs verify', () => {
  const key = randomBytes(32);
  const entry: ShelfEntry = { type: 'http', url: URL_, oauth: CLIENT };
  const server = (name: string, k: Buffer): ShelfServer => ({
    name,
    entry,
    addedAt: '',
    addedBy: 't',
    proof: signShelfServer(k, name, entry),
  });
  const state: ShelfState = {
    version: 1,
    log: [],
    servers: [server('crm', key), server('forged', randomBytes(32))],
    grants: [
      { server: 'crm', agent: 'a', grantedAt: '', proof: signShelfGrant(key, 'crm', 'a', entry) },
      { server: 'forged', agent: 'a', grantedAt: '', proof: signShelfGrant(key, 'forged', 'a', entry) },
    ],
  };
  assert.deepEqual([...machineClientsOf(state, 'a', key).entries()], [['crm', CLIENT]]);
});

test('the secret and the ID token come from variables the worker lists in DMCP_MCP_ENV', () => {
  const rows: [NodeJS.ProcessEnv, boolean, unknown][] = [
    [
      { APP_SECRET: 's', USER_ID_TOKEN: 'id', DMCP_MCP_ENV: 'APP_SECRET,USER_ID_TOKEN' },
      true,
      { clientSecret: 's', idToken: 'id' },
    ],
    [
      { APP_SECRET: 's', USER_ID_TOKEN: 'id\n', DMCP_MCP_ENV: 'APP_SECRET,USER_ID_TOKEN' },
      true,
      { clientSecret: 's', idToken: 'id' },
    ],
    [
      { APP_SECRET: 's', USER_ID_TOKEN: 'id', DMCP_MCP_ENV: 'APP_SECRET' },
      true,
      { reason: 'its ID token is read from USER_ID_TOKEN, which this worker may not read: list it in DMCP_MCP_ENV' },
    ],
    [
      { APP_SECRET: 's', DMCP_MCP_ENV: 'APP_SECRET,USER_ID_TOKEN' },
      true,
      {
        reason:
          "its ID token is read from USER_ID_TOKEN, which this worker does not have: set it to the user's ID token from the identity provider",
      },
    ],
    [
      { USER_ID_TOKEN: 'id', DMCP_MCP_ENV: 'APP_SECRET,USER_ID_TOKEN' },
      true,
      { reason: 'its client secret is read from APP_SECRET, which this worker does not have: set it' },
    ],
    [{ APP_SECRET: 's', USER_ID_TOKEN: 'id' }, false, { clientSecret: 's', idToken: 'id' }],
  ];
  for (const [env, listed, expected] of rows)
    assert.deepEqual(machineCredentialOf(CLIENT, env, listed), expected, JSON.stringify(env));
});

test('the login ID: one per client and identity provider, another than the client-credentials login of the same client', () => {
  const same = machineLoginId('crm', { ...CLIENT });
  assert.equal(machineLoginId('crm', CLIENT), same);
  const others = [
    machineLoginId('crm', { ...CLIENT, grant: 'client_credentials' }),
    machineLoginId('crm', { ...CLIENT, idpTokenEndpoint: 'https://other.example/token' }),
    machineLoginId('crm', { ...CLIENT, idpClientId: 'x' }),
    machineLoginId('crm', { ...CLIENT, idTokenEnv: 'OTHER' }),
  ];
  assert.equal(new Set([same, ...others]).size, 5);
});

test('what the status says when the identity provider or the authorization server refuses, and what mcp list shows', () => {
  const idp =
    'the identity provider refused the ID token in USER_ID_TOKEN (invalid_grant: Invalid ID token): it may have expired; set USER_ID_TOKEN to a fresh one on the workers';
  assert.equal(machineProblemMessage('crm', CLIENT, idp, true), `${idp}; tried again next turn`);
  assert.equal(
    machineProblemMessage('crm', CLIENT, 'invalid_client: Invalid client credentials', true),
    `the authorization server refused its client credentials (invalid_client: Invalid client credentials): check APP_SECRET on the workers, or put the server back with the right client: durable-mcp mcp forget crm, then durable-mcp mcp add crm <url> --id-jag --client-id app --client-secret-env APP_SECRET --idp-token-endpoint ${IDP} --idp-client-id idp-app --id-token-env USER_ID_TOKEN; tried again next turn`,
  );
  assert.equal(
    machineProblemMessage('crm', CLIENT, 'fetch failed', false),
    'could not get a token by the cross-app access (ID-JAG) grant (fetch failed); tried again next turn',
  );
  const server: ShelfServer = {
    name: 'crm',
    entry: { type: 'http', url: URL_, oauth: CLIENT },
    addedAt: '',
    addedBy: 't',
    proof: '',
  };
  assert.equal(
    serverState(server, ['a'], {}),
    'cross-app access (the workers exchange the ID token in USER_ID_TOKEN at the identity provider, then present it with APP_SECRET)',
  );
});
