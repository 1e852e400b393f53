/**
 * Machine logins' pure side: the `mcp add` flags and the entry checks, which servers of a shelf a
 * worker may log in to by itself, the secret or key read from the worker's environment, the key's
 * algorithm, the login ID, and what `mcp list` shows.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { serverState } from '../../cli/commands/mcp/listView.js';
import type { ShelfEntry, ShelfServer, ShelfState } from '../../contract/index.js';
import {
  authorizationServerMoveFrom,
  authorizationServerPinOf,
  machineLoginId,
  refusalOf,
} from '../../plane/machineGrant.js';
import {
  machineCredentialOf,
  machineMovedMessage,
  machinePinOf,
  machineProblemMessage,
  privateKeyOf,
  type MachineClient,
} from '../../plane/machineLogin.js';
import type { LoginRecord } from '../../plane/tokenStore.js';
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

test('mcp add --client-credentials: a secret or a private key, never both or neither; the flags only where they apply', () => {
  const ok: [Parameters<typeof parseAddArguments>[1], ShelfEntry][] = [
    [
      { target: [URL_], clientId: 'fleet', clientSecretEnv: 'FLEET_SECRET', clientCredentials: true },
      {
        type: 'http',
        url: URL_,
        oauth: { clientId: 'fleet', clientSecretEnv: 'FLEET_SECRET', grant: 'client_credentials' },
      },
    ],
    [
      {
        target: [URL_],
        clientId: 'fleet',
        privateKeyEnv: '${FLEET_KEY}',
        clientCredentials: true,
        signingAlgorithm: 'es256',
      },
      {
        type: 'http',
        url: URL_,
        oauth: {
          clientId: 'fleet',
          grant: 'client_credentials',
          privateKeyEnv: 'FLEET_KEY',
          signingAlgorithm: 'ES256',
        },
      },
    ],
  ];
  for (const [args, entry] of ok) assert.deepEqual(parseAddArguments('fleet', args).entry, entry);
  const refused: [Parameters<typeof parseAddArguments>[1], string, RegExp][] = [
    [
      { target: [URL_], clientCredentials: true, clientSecretEnv: 'S' },
      'oauth.clientSecretEnv',
      /--client-secret-env needs --client-id/,
    ],
    [
      { target: [URL_], clientCredentials: true },
      'oauth.clientId',
      /a machine login \(--client-credentials\) needs --client-id/,
    ],
    [
      { target: [URL_], clientId: 'c', clientCredentials: true },
      'oauth',
      /either a secret \(--client-secret-env <VAR>\) or a private key \(--private-key-env <VAR>\): give one of them/,
    ],
    [
      { target: [URL_], clientId: 'c', clientCredentials: true, clientSecretEnv: 'S', privateKeyEnv: 'K' },
      'oauth',
      /give one of them/,
    ],
    [
      { target: [URL_], clientId: 'c', privateKeyEnv: 'K' },
      'oauth.privateKeyEnv',
      /--private-key-env is for a machine login \(--client-credentials\)/,
    ],
    [
      { target: [URL_], clientId: 'c', clientSecretEnv: 'S', signingAlgorithm: 'RS256' },
      'oauth.signingAlgorithm',
      /--signing-algorithm is for a machine login with a private key/,
    ],
    [
      { target: [URL_], clientId: 'c', clientCredentials: true, clientSecretEnv: 'S', signingAlgorithm: 'RS256' },
      'oauth.signingAlgorithm',
      /applies to a private key \(--private-key-env\), not to a secret/,
    ],
    [
      { target: [URL_], clientId: 'c', clientCredentials: true, privateKeyEnv: 'K', signingAlgorithm: 'HS256' },
      'oauth.signingAlgorithm',
      /"HS256" is not one of RS256, RS384/,
    ],
    [
      { target: [URL_], clientId: 'c', clientCredentials: true, privateKeyEnv: '-----BEGIN PRIVATE KEY-----' },
      'oauth.privateKeyEnv',
      /takes the name of a variable holding the private key/,
    ],
    [
      { target: ['srv'], afterDashes: true, clientId: 'c', clientCredentials: true },
      'oauth',
      /only apply to a remote server/,
    ],
  ];
  for (const [args, field, message] of refused) {
    assert.throws(
      () => parseAddArguments('fleet', args),
      (err: unknown) => err instanceof ShelfInputError && err.field === field && message.test(err.message),
      JSON.stringify(args),
    );
  }
});

test('a machine entry on the shelf: checked like the flags, and its variable is one the workers must list', () => {
  const entry: ShelfEntry = {
    type: 'http',
    url: URL_,
    oauth: { clientId: 'fleet', grant: 'client_credentials', privateKeyEnv: 'FLEET_KEY' },
  };
  assert.equal(shelfEntryProblem('fleet', entry), undefined);
  assert.deepEqual(workerVariablesOf(entry), ['FLEET_KEY']);
  const bad = shelfEntryProblem('fleet', {
    type: 'http',
    url: URL_,
    oauth: { clientId: 'fleet', grant: 'client_credentials' },
  });
  assert.equal(bad?.field, 'oauth');
  assert.match(
    bad?.message ?? '',
    /^server "fleet": a machine login authenticates with either a secret \(oauth\.clientSecretEnv\) or a private key \(oauth\.privateKeyEnv\)/,
  );
});

test('a worker logs in by itself only to machine servers granted to the agent whose proofs verify with its key', () => {
  const key = randomBytes(32);
  const other = randomBytes(32);
  const machine: ShelfEntry = {
    type: 'http',
    url: URL_,
    oauth: { clientId: 'fleet', clientSecretEnv: 'S', grant: 'client_credentials' },
  };
  const person: ShelfEntry = { type: 'http', url: URL_, oauth: { clientId: 'app' } };
  const server = (name: string, entry: ShelfEntry, k = key): ShelfServer => ({
    name,
    entry,
    addedAt: '',
    addedBy: 't',
    proof: signShelfServer(k, name, entry),
  });
  const state: ShelfState = {
    version: 1,
    log: [],
    servers: [server('m1', machine), server('p1', person), server('forged', machine, other), server('m2', machine)],
    grants: [
      { server: 'm1', agent: 'a', grantedAt: '', proof: signShelfGrant(key, 'm1', 'a', machine) },
      { server: 'p1', agent: 'a', grantedAt: '', proof: signShelfGrant(key, 'p1', 'a', person) },
      { server: 'forged', agent: 'a', grantedAt: '', proof: signShelfGrant(key, 'forged', 'a', machine) },
      { server: 'm2', agent: 'b', grantedAt: '', proof: signShelfGrant(key, 'm2', 'b', machine) },
    ],
  };
  assert.deepEqual([...machineClientsOf(state, 'a', key).keys()], ['m1']);
  assert.deepEqual([...machineClientsOf(state, 'b', key).keys()], ['m2']);
  assert.equal(machineClientsOf(state, 'a', undefined).size, 0);
  assert.equal(machineClientsOf(state, 'a', other).size, 0);
});

test('the secret or key comes from a variable the worker lists in DMCP_MCP_ENV; the CLI reads it as set', () => {
  const secret: MachineClient = { clientId: 'fleet', clientSecretEnv: 'FLEET_SECRET', grant: 'client_credentials' };
  const rows: [NodeJS.ProcessEnv, boolean, unknown][] = [
    [
      { FLEET_SECRET: 's3cret' },
      true,
      {
        reason: 'its client secret is read from FLEET_SECRET, which this worker may not read: list it in DMCP_MCP_ENV',
      },
    ],
    [
      { DMCP_MCP_ENV: 'FLEET_SECRET' },
      true,
      { reason: 'its client secret is read from FLEET_SECRET, which this worker does not have: set it' },
    ],
    [{ FLEET_SECRET: 's3cret', DMCP_MCP_ENV: 'OTHER,FLEET_SECRET' }, true, { clientSecret: 's3cret' }],
    [{ FLEET_SECRET: 's3cret' }, false, { clientSecret: 's3cret' }],
  ];
  for (const [env, listed, expected] of rows)
    assert.deepEqual(machineCredentialOf(secret, env, listed), expected, JSON.stringify(env));
  const keyClient: MachineClient = { clientId: 'fleet', privateKeyEnv: 'FLEET_KEY', grant: 'client_credentials' };
  const broken = machineCredentialOf(keyClient, { FLEET_KEY: 'not a key', DMCP_MCP_ENV: 'FLEET_KEY' }, true);
  assert.deepEqual(broken, {
    reason: 'FLEET_KEY: it does not hold a private key in PEM (-----BEGIN PRIVATE KEY----- ...)',
  });
});

test("the signing algorithm: the one given, else the key's own; a key in a one-line variable is read; a mismatch is named", () => {
  const pem = (type: 'rsa' | 'ec', curve?: string, format: 'pkcs8' | 'sec1' | 'pkcs1' = 'pkcs8') => {
    const { privateKey } =
      type === 'rsa'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : generateKeyPairSync('ec', { namedCurve: curve! });
    return privateKey.export({ type: format, format: 'pem' }).toString();
  };
  const rsa = pem('rsa');
  const rows: [string, string | undefined, string][] = [
    [rsa, undefined, 'RS256'],
    [rsa, 'PS384', 'PS384'],
    [pem('rsa', undefined, 'pkcs1'), undefined, 'RS256'],
    [pem('ec', 'prime256v1'), undefined, 'ES256'],
    [pem('ec', 'secp384r1', 'sec1'), undefined, 'ES384'],
    [pem('ec', 'secp521r1').replace(/\n/g, '\\n'), undefined, 'ES512'],
  ];
  for (const [text, given, algorithm] of rows) {
    const out = privateKeyOf(text, given);
    assert.equal(out.algorithm, algorithm);
    assert.match(out.privateKey, /^-----BEGIN PRIVATE KEY-----\n/);
  }
  assert.throws(() => privateKeyOf(rsa, 'ES256'), /it holds a rsa key, which cannot sign ES256/);
  assert.throws(
    () => privateKeyOf('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', undefined),
    /does not hold a private key in PEM/,
  );
});

test('the login ID is the same for every token of one client, another for another client or variable', () => {
  const a: MachineClient = { clientId: 'fleet', clientSecretEnv: 'S', grant: 'client_credentials' };
  assert.equal(machineLoginId('docs', a), machineLoginId('docs', { ...a }));
  assert.match(machineLoginId('docs', a), /^m-[A-Za-z0-9_-]{16}$/);
  const others = [
    machineLoginId('other', a),
    machineLoginId('docs', { ...a, clientId: 'fleet2' }),
    machineLoginId('docs', { ...a, clientSecretEnv: 'T' }),
    machineLoginId('docs', { clientId: 'fleet', privateKeyEnv: 'S' }),
  ];
  assert.equal(new Set([machineLoginId('docs', a), ...others]).size, 5);
});

test('what the status says of a machine login without a token, and what mcp list shows', () => {
  const client: MachineClient = {
    clientId: 'fleet',
    privateKeyEnv: 'FLEET_KEY',
    signingAlgorithm: 'ES256',
    grant: 'client_credentials',
  };
  assert.equal(
    machineProblemMessage('docs', client, 'invalid_client: JWT verification failed', true),
    'the authorization server refused its client credentials (invalid_client: JWT verification failed): check FLEET_KEY on the workers, or put the server back with the right client: durable-mcp mcp forget docs, then durable-mcp mcp add docs <url> --client-credentials --client-id fleet --private-key-env FLEET_KEY --signing-algorithm ES256; tried again next turn',
  );
  assert.equal(
    machineProblemMessage('docs', client, 'fetch failed', false),
    'could not get a token by the client-credentials grant (fetch failed); tried again next turn',
  );
  const server: ShelfServer = {
    name: 'docs',
    entry: { type: 'http', url: URL_, oauth: client },
    addedAt: '',
    addedBy: 't',
    proof: '',
  };
  assert.equal(serverState(server, ['a'], {}), 'client credentials (the workers get tokens with FLEET_KEY)');
  assert.equal(
    serverState(server, ['a'], { loginId: 'm-x', probe: { kind: 'unauthorized' } }),
    'client credentials (the workers get tokens with FLEET_KEY)',
  );
  assert.equal(
    serverState(server, ['a'], { loginId: 'm-x', wantedScope: 'mcp:write' }),
    'client credentials (the workers get tokens with FLEET_KEY); wants more access (scope mcp:write), asked for at the next grant',
  );
  assert.equal(serverState(server, [], {}), 'not granted');
  assert.equal(
    serverState(server, ['a'], { loginId: 'm-x', movedTo: 'https://evil.example/' }),
    'client credentials (the workers get tokens with FLEET_KEY); its authorization server moved to https://evil.example/, where no grant is made: if the move is expected, durable-mcp mcp logout ' +
      server.name,
  );
});

test('a refusal in the status: the HTTP status and a well-formed OAuth error code, nothing else of the body', () => {
  assert.deepEqual(
    refusalOf(401, JSON.stringify({ error: 'invalid_client', error_description: 'client fleet unknown at db-7.corp' })),
    { status: 401, error: 'invalid_client' },
  );
  assert.deepEqual(refusalOf(400, JSON.stringify({ error: 'urn:example:dpop_required' })), {
    status: 400,
    error: 'urn:example:dpop_required',
  });
  for (const body of [
    '<html>proxy error at 10.0.0.7</html>',
    '',
    'null',
    '[1]',
    JSON.stringify({ error: 'no such user: admin' }),
    JSON.stringify({ error: 42 }),
    JSON.stringify({ error: 'x'.repeat(65) }),
  ]) {
    assert.deepEqual(refusalOf(502, body), { status: 502 }, body);
  }
});

test('the pin: the issuer and token endpoint of the first grant; another issuer or token endpoint is a move, a trailing slash is not', () => {
  const at = (issuer: string, tokenEndpoint: string) => ({
    authorizationServerUrl: issuer,
    authorizationServerMetadata: {
      issuer,
      authorization_endpoint: `${issuer}authorize`,
      token_endpoint: tokenEndpoint,
      response_types_supported: ['code'],
    },
  });
  const pinned = authorizationServerPinOf(at('https://as.example/', 'https://as.example/oauth/token'));
  assert.deepEqual(pinned, { issuer: 'https://as.example/', tokenEndpoint: 'https://as.example/oauth/token' });
  assert.deepEqual(authorizationServerPinOf({ authorizationServerUrl: 'https://legacy.example/' }), {
    issuer: 'https://legacy.example/',
    tokenEndpoint: 'https://legacy.example/token',
  });
  assert.equal(
    authorizationServerMoveFrom(pinned, {
      issuer: 'https://as.example',
      tokenEndpoint: 'https://as.example/oauth/token',
    }),
    undefined,
  );
  assert.deepEqual(
    authorizationServerMoveFrom(
      pinned,
      authorizationServerPinOf(at('https://evil.example/', 'https://evil.example/token')),
    ),
    { what: 'authorization server', from: 'https://as.example/', to: 'https://evil.example/' },
  );
  assert.deepEqual(
    authorizationServerMoveFrom(pinned, { issuer: 'https://as.example/', tokenEndpoint: 'https://evil.example/token' }),
    { what: 'token endpoint', from: 'https://as.example/oauth/token', to: 'https://evil.example/token' },
  );
  assert.equal(
    machineMovedMessage('docs', {
      what: 'token endpoint',
      from: 'https://as.example/oauth/token',
      to: 'https://evil.example/token',
    }),
    'its token endpoint moved from https://as.example/oauth/token to https://evil.example/token, where its client credentials are not sent (only to where its first grant was made): if the move is expected, durable-mcp mcp logout docs; the next grant is then made at the new one and kept to it',
  );
});

test("the pin is the login's own: of this client at this address, whatever its tokens' state", () => {
  const client: MachineClient = { clientId: 'fleet', clientSecretEnv: 'FLEET_SECRET', grant: 'client_credentials' };
  const record: LoginRecord = {
    server: 'docs',
    serverUrl: URL_,
    loginId: machineLoginId('docs', client),
    createdAt: '2026-01-01T00:00:00.000Z',
    grant: 'client_credentials',
    client: { client_id: 'fleet' },
    discovery: { authorizationServerUrl: 'https://as.example/' },
    tokens: { access_token: 'at', token_type: 'bearer', obtainedAt: 0, expiresAt: 1 },
  };
  assert.deepEqual(machinePinOf(record, 'docs', URL_, client), {
    issuer: 'https://as.example/',
    tokenEndpoint: 'https://as.example/token',
  });
  assert.deepEqual(
    machinePinOf({ ...record, movedTo: 'https://evil.example/' }, 'docs', URL_, client)?.issuer,
    'https://as.example/',
  );
  assert.equal(machinePinOf(undefined, 'docs', URL_, client), undefined);
  assert.equal(
    machinePinOf(record, 'docs', 'https://other.example/mcp', client),
    undefined,
    'an entry put back at another address pins afresh',
  );
  assert.equal(
    machinePinOf(record, 'docs', URL_, { ...client, clientId: 'other' }),
    undefined,
    'another client pins afresh',
  );
  assert.equal(
    machinePinOf({ ...record, grant: undefined }, 'docs', URL_, client),
    undefined,
    "a person's login is no pin",
  );
});
