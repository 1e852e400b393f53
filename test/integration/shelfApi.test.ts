/**
 * The shelf over HTTP, on a real API server, worker and Temporal: the routes, the `shelf` scope
 * (401 without a token, 403 for a token without the scope), the agent prefix rule for an agent's
 * servers and for a turn's `agent`, and the OpenAPI document.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type RunningApi } from '../../api/server.js';
import type { TurnInput } from '../../contract/index.js';
import { verifyShelfServer } from '../../plane/shelf.js';
import { ShelfClient } from '../../plane/shelfClient.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { startHarness, tempDir, type Harness } from '../support/harness.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ADMIN = 'shelf-admin-token-0123456789';
const TEAM_A = 'team-a-token-0123456789';
const NO_SHELF_SCOPE = /the token has no shelf scope \(its entry in DMCP_API_TOKENS ends in the word "shelf"\)/;

describe('the shelf over HTTP', { timeout: 120_000 }, () => {
  let harness: Harness;
  let api: RunningApi;
  let workspaceRoot: string;
  const key = randomBytes(32);
  const logs: string[] = [];

  before(async () => {
    harness = await startHarness('shelf-api');
    workspaceRoot = await tempDir('dmcp-shelf-api-');
    api = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) }),
      turns: harness.client,
      tokens: parseTokens(`${hashToken(ADMIN)} * shelf\n${hashToken(TEAM_A)} team-a-`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [workspaceRoot] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 10_000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
      shelf: { turnKey: key, env: { DOCS_TOKEN: 'docs-secret-value-42' } },
    });
  });
  after(async () => {
    await api?.close();
    await harness?.stop();
  });

  const call = async (
    method: string,
    path: string,
    token?: string,
    body?: unknown,
  ): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  };

  test('reading and changing the shelf needs the shelf scope', async () => {
    const docs = {
      entry: { type: 'http', url: 'https://docs.example/mcp', headers: { 'X-Team': 'core' } },
      agents: ['team-a-bot'],
    };
    const rows: [string, string, string | undefined, unknown, number][] = [
      ['GET', '/api/v1/shelf', undefined, undefined, 401],
      ['GET', '/api/v1/shelf', 'not-a-known-token', undefined, 401],
      ['GET', '/api/v1/shelf', TEAM_A, undefined, 403],
      ['PUT', '/api/v1/shelf/servers/docs', TEAM_A, docs, 403],
      ['DELETE', '/api/v1/shelf/servers/docs', TEAM_A, undefined, 403],
      ['PUT', '/api/v1/shelf/servers/docs/agents/team-a-bot', TEAM_A, undefined, 403],
      ['DELETE', '/api/v1/shelf/servers/docs/agents/team-a-bot', TEAM_A, undefined, 403],
    ];
    for (const [method, path, token, body, status] of rows) {
      const r = await call(method, path, token, body);
      assert.equal(r.status, status, `${method} ${path} ${token ?? 'no token'}: ${JSON.stringify(r.body)}`);
      if (status === 403) assert.match(r.body.error.message, NO_SHELF_SCOPE);
    }
    const empty = await call('GET', '/api/v1/shelf', ADMIN);
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, { version: 0, servers: [], grants: [], log: [] });
    assert.ok(
      logs.every((l) => !l.includes(ADMIN) && !l.includes(TEAM_A)),
      'no token in the logs',
    );
  });

  test('put, grant, read, drop and forget; conflicts, secrets and bad input are named', async () => {
    const docs = {
      entry: { type: 'http', url: 'https://docs.example/mcp', headers: { Authorization: 'Bearer ${DOCS_TOKEN}' } },
      agents: ['team-a-bot', 'team-a-helper'],
    };
    const created = await call('PUT', '/api/v1/shelf/servers/docs', ADMIN, docs);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body, { changed: true, version: 2 });
    const same = await call('PUT', '/api/v1/shelf/servers/docs', ADMIN, docs);
    assert.equal(same.status, 200);
    assert.deepEqual(same.body, { changed: false, version: 2 });

    const refusals: [string, string, unknown, number, string, string | undefined, RegExp][] = [
      [
        'PUT',
        '/api/v1/shelf/servers/docs',
        { entry: { type: 'http', url: 'https://other.example/mcp' } },
        409,
        'shelf_conflict',
        'body.entry.url',
        /"docs" is on the shelf already with another url/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/leak',
        { entry: { type: 'http', url: 'https://x.example/mcp', headers: { 'X-Api-Key': 'abc123' } } },
        422,
        'entry_refused',
        'body.entry.headers.X-Api-Key',
        /literal credential/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/leak',
        { entry: { type: 'http', url: 'https://x.example/mcp?api_key=abc123' } },
        422,
        'entry_refused',
        'body.entry.url',
        /query parameter "api_key" holds a literal credential/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/leak',
        { entry: { type: 'stdio', command: 'srv', args: ['${BROKEN'] } },
        422,
        'entry_refused',
        undefined,
        /unclosed/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/url',
        { entry: { type: 'http', url: 'ftp://x.example/mcp' } },
        400,
        'bad_request',
        'body.entry.url',
        /an http:\/\/ or https:\/\/ URL/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/url',
        { entry: { type: 'http', url: 'https://user:pw@x.example/mcp' } },
        400,
        'bad_request',
        'body.entry.url',
        /without a user name or password/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/env',
        { entry: { type: 'stdio', command: 'srv', env: { 'NOT A NAME': 'x' } } },
        400,
        'bad_request',
        undefined,
        /body\.entry\.env/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/leak',
        { entry: { type: 'stdio', command: 'srv', args: ['--token', 'docs-secret-value-42'] } },
        422,
        'secret_in_input',
        'body.entry.args[1]',
        /value of the secret variable DOCS_TOKEN/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/ftp',
        { entry: { type: 'ftp', url: 'ftp://x' } },
        400,
        'bad_request',
        undefined,
        /body\.entry\.type/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/bad__name',
        { entry: { type: 'http', url: 'https://x.example/mcp' } },
        400,
        'bad_request',
        'path.name',
        /with single "_" or "-" between them/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/x',
        { entry: { type: 'http', url: 'https://x.example/mcp' }, agents: ['no spaces'] },
        400,
        'bad_request',
        undefined,
        /body\.agents\.0/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/gh',
        {
          entry: {
            type: 'http',
            url: 'https://x.example/mcp',
            oauth: { clientId: 'c1', clientSecretEnv: 'not a name' },
          },
        },
        400,
        'bad_request',
        undefined,
        /body\.entry\.oauth\.clientSecretEnv/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/gh',
        { entry: { type: 'http', url: 'https://x.example/mcp', oauth: { clientId: 'c1', clientSecret: 'abc' } } },
        400,
        'bad_request',
        undefined,
        /body\.entry\.oauth/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/gh',
        { entry: { type: 'http', url: 'https://x.example/mcp', oauth: { clientId: 'docs-secret-value-42' } } },
        422,
        'secret_in_input',
        'body.entry.oauth.clientId',
        /value of the secret variable DOCS_TOKEN/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/m2m',
        {
          entry: { type: 'http', url: 'https://x.example/mcp', oauth: { clientId: 'c1', grant: 'client_credentials' } },
        },
        422,
        'entry_refused',
        'body.entry.oauth',
        /either a secret \(oauth\.clientSecretEnv\) or a private key \(oauth\.privateKeyEnv\)/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/m2m',
        { entry: { type: 'http', url: 'https://x.example/mcp', oauth: { clientId: 'c1', privateKeyEnv: 'KEY' } } },
        422,
        'entry_refused',
        'body.entry.oauth.privateKeyEnv',
        /is for a machine login \(oauth\.grant: client_credentials\)/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/m2m',
        {
          entry: {
            type: 'http',
            url: 'https://x.example/mcp',
            oauth: { clientId: 'c1', grant: 'client_credentials', privateKeyEnv: 'KEY', signingAlgorithm: 'HS256' },
          },
        },
        400,
        'bad_request',
        undefined,
        /body\.entry\.oauth\.signingAlgorithm/,
      ],
      [
        'PUT',
        '/api/v1/shelf/servers/nope/agents/team-a-bot',
        undefined,
        404,
        'not_found',
        'path.name',
        /"nope" is not on the shelf/,
      ],
    ];
    for (const [method, path, body, status, code, field, message] of refusals) {
      const r = await call(method, path, ADMIN, body);
      assert.equal(r.status, status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, code);
      if (field) assert.equal(r.body.error.field, field);
      assert.match(r.body.error.message, message);
      assert.ok(!JSON.stringify(r.body).includes('docs-secret-value-42'));
    }

    assert.equal((await call('PUT', '/api/v1/shelf/servers/docs/agents/ops-bot', ADMIN)).status, 201);
    assert.equal((await call('PUT', '/api/v1/shelf/servers/docs/agents/ops-bot', ADMIN)).status, 200);
    const shelf = await call('GET', '/api/v1/shelf', ADMIN);
    assert.equal(shelf.status, 200);
    assert.equal(shelf.body.version, 3);
    assert.deepEqual(
      shelf.body.servers.map((s: Json) => [s.name, s.agents]),
      [['docs', ['ops-bot', 'team-a-bot', 'team-a-helper']]],
    );
    assert.ok(!JSON.stringify(shelf.body).includes('proof'), 'proofs are not shown');
    assert.equal(shelf.body.log[0].by, 'api token DMCP_API_TOKENS line 1');
    // Signed with the API's key: a worker holding it uses the server.
    const state = await new ShelfClient({
      client: harness.client.client,
      taskQueue: harness.taskQueue,
      by: 'test',
    }).read();
    assert.equal(verifyShelfServer(key, state.servers[0]!), true);

    const dropped = await call('DELETE', '/api/v1/shelf/servers/docs/agents/ops-bot', ADMIN);
    assert.deepEqual([dropped.status, dropped.body], [200, { changed: true, version: 4 }]);
    const droppedAgain = await call('DELETE', '/api/v1/shelf/servers/docs/agents/ops-bot', ADMIN);
    assert.deepEqual(droppedAgain.body, { changed: false, version: 4 });

    // An agent's servers: the shelf scope, or a token whose prefixes reach the agent.
    const own = await call('GET', '/api/v1/agents/team-a-bot/servers', TEAM_A);
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.deepEqual(
      own.body.servers.map((s: Json) => [s.name, s.verified, s.entry.url]),
      [['docs', true, 'https://docs.example/mcp']],
    );
    const other = await call('GET', '/api/v1/agents/ops-bot/servers', TEAM_A);
    assert.equal(other.status, 403);
    assert.match(other.body.error.message, /may not reach agent "ops-bot"/);
    assert.deepEqual((await call('GET', '/api/v1/agents/ops-bot/servers', ADMIN)).body, {
      agent: 'ops-bot',
      servers: [],
    });
    assert.equal((await call('GET', '/api/v1/agents/team-a-bot/servers')).status, 401);

    const forgot = await call('DELETE', '/api/v1/shelf/servers/docs', ADMIN);
    assert.deepEqual(
      [forgot.status, forgot.body],
      [200, { changed: true, version: 5, agents: ['team-a-bot', 'team-a-helper'] }],
    );
    assert.deepEqual((await call('DELETE', '/api/v1/shelf/servers/docs', ADMIN)).body, {
      changed: false,
      version: 5,
      agents: [],
    });

    // A pre-registered client: its ID and the name of the variable holding its secret.
    const gh = {
      type: 'http',
      url: 'https://gh.example/mcp',
      oauth: { clientId: 'Iv1.abc', clientSecretEnv: 'GH_CLIENT_SECRET' },
    };
    assert.equal((await call('PUT', '/api/v1/shelf/servers/gh', ADMIN, { entry: gh })).status, 201);
    assert.deepEqual(
      (await call('GET', '/api/v1/shelf', ADMIN)).body.servers.map((s: Json) => s.entry),
      [gh],
    );
    assert.equal((await call('DELETE', '/api/v1/shelf/servers/gh', ADMIN)).status, 200);
    // A machine login: the client's ID, the grant, and the name of the variable holding its key.
    const fleet = {
      type: 'http',
      url: 'https://fleet.example/mcp',
      oauth: { clientId: 'fleet', grant: 'client_credentials', privateKeyEnv: 'FLEET_KEY', signingAlgorithm: 'ES256' },
    };
    assert.equal((await call('PUT', '/api/v1/shelf/servers/fleet', ADMIN, { entry: fleet })).status, 201);
    assert.deepEqual(
      (await call('GET', '/api/v1/shelf', ADMIN)).body.servers.map((s: Json) => s.entry),
      [fleet],
    );
    assert.equal((await call('DELETE', '/api/v1/shelf/servers/fleet', ADMIN)).status, 200);
  });

  test("a turn's agent must start with one of the token's prefixes, and is signed with the workspace", async () => {
    const start = (sessionId: string, body: Json) => call('POST', `/api/v1/sessions/${sessionId}/turns`, TEAM_A, body);
    const elsewhere = await start('team-a-s1', { workspace: workspaceRoot, agent: 'ops-bot' });
    assert.equal(elsewhere.status, 403);
    assert.equal(elsewhere.body.error.field, 'body.agent');
    assert.match(elsewhere.body.error.message, /may not run turns as agent "ops-bot"/);
    const unsignedWorkspace = await start('team-a-s1', { workspace: '/', agent: 'team-a-bot' });
    assert.equal(unsignedWorkspace.status, 403);
    assert.equal(unsignedWorkspace.body.error.field, 'body.workspace');
    assert.match(unsignedWorkspace.body.error.message, /names an agent, so its references are signed as a whole/);
    const badAgent = await start('team-a-s1', { workspace: workspaceRoot, agent: '-bad' });
    assert.equal(badAgent.status, 400);
    assert.equal(badAgent.body.error.field, 'body.agent');

    const started = await start('team-a-s1', { workspace: workspaceRoot, agent: 'team-a-bot' });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    try {
      const history = await harness.client.client.workflow.getHandle(started.body.turnId).fetchHistory();
      const first = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
      const input = harness.client.client.options.loadedDataConverter.payloadConverter.fromPayload<TurnInput>(first!);
      assert.equal(input.refs.agent, 'team-a-bot');
    } finally {
      await call('POST', `${started.body.links.end.replace(api.url, '')}`, TEAM_A, {});
    }
  });

  test('without a token nothing reaches the shelf, from this machine either; an API without tokens serves no one', async () => {
    const entry = JSON.stringify({
      entry: { type: 'stdio', command: 'sh', args: ['-c', 'id'] },
      agents: ['support-bot'],
    });
    for (const [method, path, body] of [
      ['GET', '/api/v1/shelf'],
      ['PUT', '/api/v1/shelf/servers/notes', entry],
      ['PUT', '/api/v1/shelf/servers/notes/agents/support-bot'],
      ['GET', '/api/v1/agents/support-bot/servers'],
    ] as const) {
      const res = await fetch(`${api.url}${path}`, {
        method,
        ...(body ? { headers: { 'content-type': 'application/json' }, body } : {}),
      });
      assert.equal(res.status, 401, `${method} ${path}`);
    }
    const keyless = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'silent' }),
      turns: harness.client,
      tokens: [],
      boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
      maxBodyBytes: 4096,
      callWaitMs: 1000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
    });
    try {
      const put = await fetch(`${keyless.url}/api/v1/shelf/servers/notes`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: entry,
      });
      assert.equal(put.status, 401);
      assert.match(((await put.json()) as Json).error.message, /has no tokens configured, so it serves no one/);
    } finally {
      await keyless.close();
    }
    assert.deepEqual(
      (await call('GET', '/api/v1/shelf', ADMIN)).body.servers.map((s: Json) => s.name),
      [],
      'nothing reached the shelf',
    );
  });

  test('an API without the turn key refuses to sign, even for the shelf scope', async () => {
    const unsigned = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'silent' }),
      turns: harness.client,
      tokens: parseTokens(`${hashToken(ADMIN)} * shelf`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
      maxBodyBytes: 4096,
      callWaitMs: 1000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
    });
    try {
      const keyless = await fetch(`${unsigned.url}/api/v1/shelf/servers/docs`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
        body: JSON.stringify({ entry: { type: 'http', url: 'https://x.example/mcp' } }),
      });
      assert.equal(keyless.status, 403);
      assert.match(((await keyless.json()) as Json).error.message, /cannot sign shelf changes: it has no turn key/);
    } finally {
      await unsigned.close();
    }
  });

  test('the OpenAPI document describes the shelf routes and the agent of a turn', async () => {
    const doc = (await (await fetch(`${api.url}/api/v1/openapi.json`)).json()) as Json;
    for (const path of [
      '/api/v1/shelf',
      '/api/v1/shelf/servers/{name}',
      '/api/v1/shelf/servers/{name}/agents/{agent}',
      '/api/v1/agents/{agent}/servers',
    ]) {
      assert.ok(doc.paths[path], `${path} is in the document`);
    }
    assert.ok(doc.paths['/api/v1/shelf/servers/{name}'].put.responses['409']);
    assert.ok(doc.components.schemas.ShelfEntry);
    assert.ok(doc.components.schemas.StartTurn.properties.agent);
  });
});
