/**
 * The shelf's pure side: `mcp add` arguments, the checks an entry passes before it is recorded in
 * history, proofs, the worker's layer text, and what `mcp list` shows.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { parseTokens, hashToken, tokenAllowsAgent } from '../../api/auth.js';
import { probeServer } from '../../cli/commands/mcp/list.js';
import {
  commandLine,
  listRows,
  renderLog,
  renderTable,
  serverState,
  type ServerFacts,
} from '../../cli/commands/mcp/listView.js';
import { parseConfigText } from '../../config/parse.js';
import {
  SHELF_WORKFLOW_ID,
  type ShelfEntry,
  type ShelfGrant,
  type ShelfServer,
  type ShelfState,
} from '../../contract/index.js';
import {
  ShelfInputError,
  parseAddArguments,
  shelfConfigEntry,
  shelfEntryProblem,
  shelfWorkflowId,
  signShelfGrant,
  signShelfServer,
  verifyShelfGrant,
  verifyShelfServer,
  workerVariablesOf,
} from '../../plane/shelf.js';
import { shelfLayerText } from '../../plane/shelfLayer.js';
import { SettingsError } from '../../settings/index.js';

test('mcp add arguments: a URL, sse <url>, http <url>, or a command after --', () => {
  const rows: [string, Parameters<typeof parseAddArguments>[1], ShelfEntry][] = [
    ['docs', { target: ['https://docs.example/mcp'] }, { type: 'http', url: 'https://docs.example/mcp' }],
    ['docs', { target: ['sse', 'https://docs.example/sse'] }, { type: 'sse', url: 'https://docs.example/sse' }],
    ['docs', { target: ['HTTP', 'http://127.0.0.1:8080/mcp'] }, { type: 'http', url: 'http://127.0.0.1:8080/mcp' }],
    [
      'docs',
      { target: ['https://d/mcp'], headers: ['X-Team:  core ', 'Authorization: Bearer ${DOCS_TOKEN}'] },
      { type: 'http', url: 'https://d/mcp', headers: { 'X-Team': 'core', Authorization: 'Bearer ${DOCS_TOKEN}' } },
    ],
    [
      'fs',
      { target: ['npx', '-y', '@modelcontextprotocol/server-filesystem', '/srv'], afterDashes: true },
      { type: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv'] },
    ],
    [
      'gh',
      { target: ['gh-mcp'], env: ['GITHUB_TOKEN=${GITHUB_TOKEN}', 'MODE=a=b'], afterDashes: true },
      { type: 'stdio', command: 'gh-mcp', args: [], env: { GITHUB_TOKEN: '${GITHUB_TOKEN}', MODE: 'a=b' } },
    ],
    [
      'gh',
      { target: ['https://gh/mcp'], clientId: ' Iv1.abc ' },
      { type: 'http', url: 'https://gh/mcp', oauth: { clientId: 'Iv1.abc' } },
    ],
    [
      'gh',
      { target: ['https://gh/mcp'], clientId: 'Iv1.abc', clientSecretEnv: 'GH_CLIENT_SECRET' },
      { type: 'http', url: 'https://gh/mcp', oauth: { clientId: 'Iv1.abc', clientSecretEnv: 'GH_CLIENT_SECRET' } },
    ],
    [
      'gh',
      { target: ['https://gh/mcp'], clientId: 'Iv1.abc', clientSecretEnv: '${GH_CLIENT_SECRET}' },
      { type: 'http', url: 'https://gh/mcp', oauth: { clientId: 'Iv1.abc', clientSecretEnv: 'GH_CLIENT_SECRET' } },
    ],
    // After "--" a URL-looking word is a command.
    [
      'odd',
      { target: ['https://x/tool', 'arg'], afterDashes: true },
      { type: 'stdio', command: 'https://x/tool', args: ['arg'] },
    ],
  ];
  for (const [name, args, entry] of rows)
    assert.deepEqual(parseAddArguments(name, args), { name, entry }, JSON.stringify(args));
});

test('mcp add arguments: each mistake is refused naming the argument', () => {
  const rows: [string, Parameters<typeof parseAddArguments>[1], string, RegExp][] = [
    ['bad__name', { target: ['https://x/mcp'] }, 'name', /two separators in a row/],
    ['1docs', { target: ['https://x/mcp'] }, 'name', /must start with a letter/],
    ['docs', { target: [] }, 'target', /say what the server is/],
    ['docs', { target: ['sse'] }, 'url', /URL is missing/],
    ['docs', { target: ['sse', 'docs.example'] }, 'url', /is not a URL/],
    ['docs', { target: ['https://x/mcp', 'extra'] }, 'target', /unexpected "extra" after the URL/],
    ['docs', { target: ['https://x/mcp'], env: ['A=b'] }, 'env', /--env only applies to a command/],
    [
      'fs',
      { target: ['npx'], headers: ['X: y'], afterDashes: true },
      'headers',
      /--header only applies to a remote server/,
    ],
    ['docs', { target: ['https://x/mcp'], headers: ['no colon'] }, 'header', /--header #1: expected 'Name: value'/],
    ['docs', { target: ['https://x/mcp'], headers: ['X: a', 'X: b'] }, 'header', /--header #2: "X" is given twice/],
    ['fs', { target: ['npx'], env: ['=v'], afterDashes: true }, 'env', /--env #1: expected NAME=value/],
    ['fs', { target: [''], afterDashes: true }, 'command', /the command is empty/],
    [
      'gh',
      { target: ['https://gh/mcp'], clientSecretEnv: 'S' },
      'oauth.clientSecretEnv',
      /--client-secret-env needs --client-id/,
    ],
    ['gh', { target: ['https://gh/mcp'], clientId: '  ' }, 'oauth.clientId', /--client-id must be the client ID/],
    [
      'gh',
      { target: ['https://gh/mcp'], clientId: 'a', clientSecretEnv: 's3cr3t-value!' },
      'oauth.clientSecretEnv',
      /name of a variable holding the secret.*not the secret itself/,
    ],
    ['fs', { target: ['npx'], clientId: 'a', afterDashes: true }, 'oauth', /only apply to a remote server/],
  ];
  for (const [name, args, field, message] of rows) {
    assert.throws(
      () => parseAddArguments(name, args),
      (err: Error) => err instanceof ShelfInputError && err.field === field && message.test(err.message),
      `${name} ${JSON.stringify(args)}`,
    );
  }
});

test('an entry with a secret value is refused before it reaches history, naming the field', () => {
  const env = { DOCS_TOKEN: 'tok-1234567890', HOME: '/home/op' };
  const rows: [ShelfEntry, string, RegExp][] = [
    [
      { type: 'http', url: 'https://d/mcp', headers: { Authorization: 'Bearer abc123' } },
      'headers.Authorization',
      /literal credential/,
    ],
    [
      { type: 'http', url: 'https://d/mcp', headers: { 'X-Api-Key': 'abc123' } },
      'headers.X-Api-Key',
      /literal credential/,
    ],
    [{ type: 'http', url: 'https://d/mcp', headers: { Cookie: 'session=1' } }, 'headers.Cookie', /literal credential/],
    [
      { type: 'http', url: 'https://d/mcp?api_key=abc123' },
      'url',
      /query parameter "api_key" holds a literal credential/,
    ],
    [{ type: 'http', url: 'https://user:pw@d/mcp' }, 'url', /contains a user name or password/],
    [
      { type: 'http', url: 'https://d/mcp', headers: { 'X-Team': 'tok-1234567890' } },
      'headers.X-Team',
      /value of the secret variable DOCS_TOKEN/,
    ],
    [
      { type: 'stdio', command: 'gh-mcp', args: [], env: { GITHUB_TOKEN: 'ghp_literal' } },
      'env.GITHUB_TOKEN',
      /literal value.*GITHUB_TOKEN='\$\{GITHUB_TOKEN\}'/,
    ],
    [{ type: 'stdio', command: 'srv', args: ['--token', 'tok-1234567890'] }, 'args[1]', /secret variable DOCS_TOKEN/],
    // The config room's own rules, through the same parser the worker uses.
    [{ type: 'http', url: 'ws://d/mcp' }, 'url', /WebSocket URLs/],
    [
      { type: 'http', url: 'https://d/mcp', headers: { 'Bad Header': 'x' } },
      'headers.Bad Header',
      /not a valid HTTP header name/,
    ],
    [
      { type: 'http', url: 'https://d/mcp', headers: { 'X-Team': '${DOCS_TOKEN}' } },
      'headers.X-Team',
      /variable "DOCS_TOKEN" is secret and cannot be expanded/,
    ],
    [{ type: 'stdio', command: 'srv', args: ['$(cat /etc/passwd)'] }, 'args[0]', /command expressions/],
    [{ type: 'stdio', command: 'srv', args: [], env: { 'BAD-NAME': 'x' } }, 'env.BAD-NAME', /is not a variable name/],
    // A pre-registered client: its ID is no place for a secret, and its secret only ever a variable's name.
    [
      { type: 'http', url: 'https://d/mcp', oauth: { clientId: 'tok-1234567890' } },
      'oauth.clientId',
      /value of the secret variable DOCS_TOKEN/,
    ],
    [
      { type: 'http', url: 'https://d/mcp', oauth: { clientId: 'a', clientSecretEnv: 'not a name' } },
      'oauth.clientSecretEnv',
      /must name a variable/,
    ],
    [{ type: 'http', url: 'https://d/mcp', oauth: { clientId: 'a\nb' } }, 'oauth.clientId', /one line, not blank/],
  ];
  for (const [entry, field, message] of rows) {
    const problem = shelfEntryProblem('docs', entry, env);
    assert.ok(problem, `accepted: ${JSON.stringify(entry)}`);
    assert.equal(problem.field, field, problem.message);
    assert.match(problem.message, message);
    assert.ok(!problem.message.includes('tok-1234567890'), 'the message never shows the secret');
  }
});

test('references stay references: accepted, and handed over or expanded on the worker', () => {
  const accepted: ShelfEntry[] = [
    { type: 'http', url: 'https://d/mcp', headers: { Authorization: 'Bearer ${DOCS_TOKEN}', 'X-Team': 'core' } },
    { type: 'sse', url: 'https://d/sse?team=core' },
    {
      type: 'stdio',
      command: 'gh-mcp',
      args: ['--root', '${HOME}/src'],
      env: { GITHUB_TOKEN: '${GITHUB_TOKEN}', LOG: 'debug' },
    },
    { type: 'http', url: 'https://${DOCS_HOST}/mcp' },
  ];
  for (const entry of accepted)
    assert.equal(
      shelfEntryProblem('docs', entry, { DOCS_TOKEN: 'tok-1234567890' })?.message,
      undefined,
      JSON.stringify(entry),
    );
  // A secret variable whose value is a plain word does not make that word a secret.
  assert.equal(
    shelfEntryProblem(
      'fs',
      { type: 'stdio', command: 'srv', args: ['--verbose', 'true'], env: { DEBUG: 'true' } },
      { SKIP_AUTH: 'true', API_KEY: 'abc' },
    )?.message,
    undefined,
  );
  const gh = accepted[2]!;
  assert.deepEqual(shelfConfigEntry(gh), {
    type: 'stdio',
    command: 'gh-mcp',
    args: ['--root', '${HOME}/src'],
    env: { LOG: 'debug' },
    envFrom: { GITHUB_TOKEN: 'GITHUB_TOKEN' },
  });
  assert.deepEqual(workerVariablesOf(gh), ['GITHUB_TOKEN']);
  assert.deepEqual(
    workerVariablesOf({
      type: 'http',
      url: 'https://gh/mcp',
      oauth: { clientId: 'Iv1.abc', clientSecretEnv: 'GH_CLIENT_SECRET' },
    }),
    ['GH_CLIENT_SECRET'],
  );
  assert.deepEqual(workerVariablesOf(accepted[0]!), ['DOCS_TOKEN']);
  // The worker's parser, with the worker's environment, resolves them (the shelf is a trusted layer).
  const text = JSON.stringify({ mcpServers: { gh: shelfConfigEntry(gh), docs: shelfConfigEntry(accepted[0]!) } });
  const parsed = parseConfigText(
    text,
    { kind: 'shelf', file: 'shelf', workspace: '/', folder: '/' },
    { HOME: '/home/op', DMCP_MCP_ENV: 'GITHUB_TOKEN,DOCS_TOKEN', GITHUB_TOKEN: 'x', DOCS_TOKEN: 'y' },
  );
  assert.deepEqual(parsed.refused, []);
  const [ghEntry, docsEntry] = parsed.servers;
  assert.deepEqual(ghEntry!.args, ['--root', '/home/op/src']);
  assert.deepEqual(ghEntry!.envFrom, { GITHUB_TOKEN: 'GITHUB_TOKEN' });
  assert.equal(docsEntry!.bearerTokenEnv, 'DOCS_TOKEN');
});

const key = randomBytes(32);
const otherKey = randomBytes(32);

function server(name: string, entry: ShelfEntry, signWith = key): ShelfServer {
  return {
    name,
    entry,
    addedAt: '2026-01-01T00:00:00.000Z',
    addedBy: 'cli',
    proof: signShelfServer(signWith, name, entry),
  };
}
function grant(
  serverName: string,
  agent: string,
  signWith = key,
  entry: ShelfEntry = { type: 'http', url: `https://${serverName}/mcp` },
): ShelfGrant {
  return {
    server: serverName,
    agent,
    grantedAt: '2026-01-01T00:00:00.000Z',
    proof: signShelfGrant(signWith, serverName, agent, entry),
  };
}

test('proofs: the turn key signs name and entry, and any change to either breaks them', () => {
  const docs = server('docs', { type: 'http', url: 'https://d/mcp', headers: { B: '2', A: '1' } });
  assert.equal(verifyShelfServer(key, docs), true);
  // Key order does not matter (the proof text is canonical).
  assert.equal(
    verifyShelfServer(key, { ...docs, entry: { type: 'http', url: 'https://d/mcp', headers: { A: '1', B: '2' } } }),
    true,
  );
  const tampered: ShelfServer[] = [
    { ...docs, name: 'docs2' },
    { ...docs, entry: { type: 'http', url: 'https://evil/mcp', headers: { A: '1', B: '2' } } },
    { ...docs, entry: { type: 'sse', url: 'https://d/mcp', headers: { A: '1', B: '2' } } },
    { ...docs, proof: '' },
    { ...docs, proof: 'zz' },
    { ...docs, proof: docs.proof.toUpperCase() },
  ];
  for (const s of tampered) assert.equal(verifyShelfServer(key, s), false, JSON.stringify(s));
  assert.equal(verifyShelfServer(otherKey, docs), false);
  const docsEntry: ShelfEntry = { type: 'http', url: 'https://docs/mcp' };
  const g = grant('docs', 'bot-a', key, docsEntry);
  assert.equal(verifyShelfGrant(key, g, docsEntry), true);
  for (const bad of [
    { ...g, agent: 'bot-b' },
    { ...g, server: 'other' },
  ])
    assert.equal(verifyShelfGrant(key, bad, docsEntry), false);
  assert.equal(verifyShelfGrant(otherKey, g, docsEntry), false);
  // A grant is bound to the entry it was made for: a server forgotten and put back under the same
  // name as something else (a command, say) is not granted by the old grant's proof, replayed or not.
  assert.equal(verifyShelfGrant(key, g, { type: 'stdio', command: 'sh', args: ['-c', 'anything'] }), false);
  assert.equal(verifyShelfGrant(key, g, { type: 'http', url: 'https://docs/mcp', headers: { X: '1' } }), false);
});

test("the worker's layer: only the agent's verified servers, a warning for each bad proof", () => {
  const docs = server('docs', { type: 'http', url: 'https://d/mcp' });
  const fs = server('fs', {
    type: 'stdio',
    command: 'npx',
    args: ['-y', 'fs-server'],
    env: { GITHUB_TOKEN: '${GITHUB_TOKEN}' },
  });
  const forged = server('forged', { type: 'stdio', command: 'sh', args: ['-c', 'evil'] }, otherKey);
  const wiki = server('wiki', { type: 'sse', url: 'https://w/sse' });
  const state: ShelfState = {
    servers: [docs, fs, forged, wiki],
    grants: [
      grant('docs', 'bot-a', key, docs.entry),
      grant('fs', 'bot-a', key, fs.entry),
      grant('forged', 'bot-a', key, forged.entry),
      grant('wiki', 'bot-a', otherKey, wiki.entry),
      grant('wiki', 'bot-b', key, wiki.entry),
      grant('gone', 'bot-a'),
    ],
    log: [],
    version: 7,
  };
  const layer = shelfLayerText(state, 'bot-a', key);
  assert.ok(layer.text);
  const parsed = JSON.parse(layer.text) as { mcpServers: Record<string, unknown> };
  assert.deepEqual(Object.keys(parsed.mcpServers), ['docs', 'fs']);
  assert.deepEqual(parsed.mcpServers.fs, {
    type: 'stdio',
    command: 'npx',
    args: ['-y', 'fs-server'],
    envFrom: { GITHUB_TOKEN: 'GITHUB_TOKEN' },
  });
  assert.equal(layer.warnings.length, 2, layer.warnings.join('\n'));
  assert.match(layer.warnings[0]!, /server "forged" not used: it is not signed with this worker's turn key/);
  assert.match(layer.warnings[1]!, /server "wiki" not used for agent "bot-a": the grant is not signed/);
  // What the worker parses it with: the shelf layer is trusted, so the reference becomes envFrom.
  const result = parseConfigText(
    layer.text,
    { kind: 'shelf', file: 'shelf', workspace: '/', folder: '/' },
    { DMCP_MCP_ENV: 'GITHUB_TOKEN', GITHUB_TOKEN: 'x' },
  );
  assert.deepEqual(result.refused, []);
  assert.deepEqual(
    result.servers.map((s) => [s.name, s.trusted, s.type]),
    [
      ['docs', true, 'http'],
      ['fs', true, 'stdio'],
    ],
  );

  assert.deepEqual(shelfLayerText(state, 'bot-b', key), {
    text: `${JSON.stringify({ mcpServers: { wiki: { type: 'sse', url: 'https://w/sse' } } }, null, 2)}\n`,
    warnings: [],
  });
  assert.deepEqual(shelfLayerText(state, 'nobody', key), { text: undefined, warnings: [] });
  const keyless = shelfLayerText(state, 'bot-b', undefined);
  assert.equal(keyless.text, undefined);
  assert.match(keyless.warnings[0]!, /no turn key/);
});

test('one shelf per namespace and shared queue: the default queue keeps the plain ID', () => {
  assert.equal(shelfWorkflowId('durable-mcp'), SHELF_WORKFLOW_ID);
  assert.equal(shelfWorkflowId('team-a'), `${SHELF_WORKFLOW_ID}/team-a`);
});

test('API tokens: the shelf scope is the word after the prefixes; agents are reached by prefix', () => {
  const [plain, shelf, all] = parseTokens(
    `${hashToken('a')} team-a-\n${hashToken('b')} ops-,team-b- shelf\n${hashToken('c')} * shelf`,
    'tokens.txt',
  );
  assert.equal(plain!.shelf, false);
  assert.equal(shelf!.shelf, true);
  assert.deepEqual(shelf!.prefixes, ['ops-', 'team-b-']);
  assert.equal(tokenAllowsAgent(plain!, 'team-a-bot'), true);
  assert.equal(tokenAllowsAgent(plain!, 'team-b-bot'), false);
  assert.equal(tokenAllowsAgent(all!, 'anyone'), true);
  assert.throws(
    () => parseTokens(`${hashToken('a')} team-a- admin`, 'DMCP_API_TOKENS'),
    (err: Error) => err instanceof SettingsError && /entry 1: unknown scope "admin"/.test(err.message),
  );
  assert.throws(() => parseTokens(`${hashToken('a')} team-a- shelf extra`, 'DMCP_API_TOKENS'), SettingsError);
});

test('mcp list: state by grant, transport, login and probe; agents listed', () => {
  const docs = server('docs', { type: 'http', url: 'https://d/mcp' });
  const bearer = server('bearer', {
    type: 'http',
    url: 'https://b/mcp',
    headers: { Authorization: 'Bearer ${B_TOKEN}' },
  });
  const fs = server('fs', { type: 'stdio', command: 'npx', args: ['-y', 'a b'] });
  const rows: [ShelfServer, string[], ServerFacts, string][] = [
    [docs, [], { probe: { kind: 'reachable' } }, 'not granted'],
    [fs, ['a'], {}, 'command'],
    [docs, ['a'], { loginId: 'l1', probe: { kind: 'unauthorized' } }, 'logged in'],
    [docs, ['a'], { loginId: 'l1', loginUrl: 'https://d/mcp/' }, 'logged in'],
    [
      docs,
      ['a'],
      { loginId: 'l1', wantedScope: 'mcp:tools mcp:write' },
      'logged in, wants more access (scope mcp:tools mcp:write): durable-mcp mcp login docs',
    ],
    [
      docs,
      ['a'],
      { loginId: 'l1', loginUrl: 'https://old.example/mcp' },
      'logged in for another address (https://old.example/mcp), so not used: durable-mcp mcp login docs',
    ],
    [
      docs,
      ['a'],
      { loginId: 'l1', expiredAt: new Date('2026-01-02T03:04:05.000Z') },
      'login expired or revoked 2026-01-02T03:04:05.000Z: durable-mcp mcp login docs',
    ],
    [
      docs,
      ['a'],
      { loginId: 'l1', movedTo: 'https://as2.example' },
      'its authorization server moved to https://as2.example: durable-mcp mcp login docs',
    ],
    [
      docs,
      ['a'],
      { loginId: 'l1', movedTo: 'https://as2.example', expiredAt: new Date('2026-01-02T03:04:05.000Z') },
      'its authorization server moved to https://as2.example: durable-mcp mcp login docs',
    ],
    [
      docs,
      ['a'],
      { pendingSince: new Date('2026-01-02T03:04:05.000Z') },
      'login started 2026-01-02T03:04:05.000Z, not finished: durable-mcp mcp login docs',
    ],
    [docs, ['a'], { probe: { kind: 'unauthorized' } }, 'wants an account: durable-mcp mcp login docs'],
    [
      bearer,
      ['a'],
      { probe: { kind: 'unauthorized' } },
      'reachable (answers 401 without the bearer token the workers send)',
    ],
    [docs, ['a'], { probe: { kind: 'reachable' } }, 'reachable'],
    [docs, ['a'], { probe: { kind: 'reachable', era: 'modern' } }, 'reachable (MCP 2026-07-28)'],
    [docs, ['a'], { probe: { kind: 'reachable', era: 'legacy' } }, 'reachable (legacy MCP)'],
    [docs, ['a'], { probe: { kind: 'unreachable', why: 'ECONNREFUSED' } }, 'unreachable: ECONNREFUSED'],
    [docs, ['a'], {}, 'not probed'],
  ];
  for (const [s, agents, facts, state] of rows)
    assert.equal(serverState(s, agents, facts), state, `${s.name} ${JSON.stringify(facts)}`);
  assert.equal(commandLine(fs.entry), "npx -y 'a b'");

  const state: ShelfState = {
    servers: [fs, docs],
    grants: [grant('docs', 'zed'), grant('docs', 'amy')],
    log: [
      { at: '2026-01-01T00:00:00.000Z', by: 'cli op@host', op: 'grant', server: 'docs', agent: 'amy' },
      { at: '2026-01-01T00:00:01.000Z', by: 'api (loopback)', op: 'forget', server: 'old' },
    ],
    version: 3,
  };
  const table = renderTable(listRows(state, new Map([['docs', { probe: { kind: 'reachable' } }]])));
  assert.deepEqual(table, [
    'SERVER  TRANSPORT  WHERE          STATE        AGENTS',
    'docs    http       https://d/mcp  reachable    amy, zed',
    "fs      stdio      npx -y 'a b'   not granted  -",
  ]);
  assert.deepEqual(renderLog(state), [
    '2026-01-01T00:00:00.000Z  grant   docs (agent amy)  by cli op@host',
    '2026-01-01T00:00:01.000Z  forget  old  by api (loopback)',
  ]);
});

test("the probe: the pool's negotiation without the entry's headers; a session it opened is closed; a silent server times out", async () => {
  const seen: { method: string; path: string; headers: Record<string, unknown>; body: string }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      if (req.url === '/silent') return; // never answers
      if (req.url === '/locked') return void res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
      if (req.url === '/broken') return void res.writeHead(502, 'Bad Gateway').end();
      // A 2025 server: `initialize` opens a session; anything else outside one is refused.
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      if (req.method === 'GET') return void res.writeHead(405).end();
      const message = JSON.parse(body || '{}') as {
        id?: number;
        method?: string;
        params?: { protocolVersion?: string };
      };
      if (message.method === 'initialize') {
        const result = {
          protocolVersion: message.params?.protocolVersion,
          capabilities: {},
          serverInfo: { name: 'legacy', version: '1.0.0' },
        };
        return void res
          .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      }
      if (req.headers['mcp-session-id'] === 'session-1') return void res.writeHead(202).end();
      res.writeHead(400, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: message.id ?? null,
          error: { code: -32000, message: 'Bad Request: Server not initialized' },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    assert.deepEqual(
      await probeServer(
        { type: 'http', url: `${base}/mcp`, headers: { Authorization: 'Bearer ${T}', 'X-Team': 'core' } },
        2000,
      ),
      { kind: 'reachable', era: 'legacy' },
      'a refused server/discover is no 2026-07-28 server',
    );
    const posted = seen
      .filter((r) => r.method === 'POST')
      .map((r) => (JSON.parse(r.body) as { method?: string }).method);
    assert.deepEqual(posted.slice(0, 2), ['server/discover', 'initialize'], 'the era is negotiated as the pool does');
    for (const r of seen) {
      assert.equal(r.headers.authorization, undefined, 'no header of the entry is sent');
      assert.equal(r.headers['x-team'], undefined);
    }
    const end = seen[seen.length - 1];
    assert.deepEqual([end!.method, end!.headers['mcp-session-id']], ['DELETE', 'session-1']);
    assert.deepEqual(await probeServer({ type: 'http', url: `${base}/locked` }, 2000), { kind: 'unauthorized' });
    assert.deepEqual(await probeServer({ type: 'sse', url: `${base}/locked` }, 2000), { kind: 'unauthorized' });
    assert.equal(seen[seen.length - 1]!.method, 'GET', 'SSE opens the stream');
    assert.deepEqual(await probeServer({ type: 'http', url: `${base}/broken` }, 2000), {
      kind: 'unreachable',
      why: 'HTTP 502 Bad Gateway',
    });
    assert.deepEqual(await probeServer({ type: 'http', url: `${base}/silent` }, 300), {
      kind: 'unreachable',
      why: 'no answer within 0.3 s',
    });
    assert.deepEqual(await probeServer({ type: 'http', url: 'https://${HOST}/mcp' }, 300), {
      kind: 'not_probed',
      why: 'its URL holds variables the workers resolve',
    });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('the probe: a web page that answers every request with 200 is no MCP server, in either era', async () => {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on(
      'end',
      () => void res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Sign in</title>'),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const probe = await probeServer({ type: 'http', url: `${base}/app` }, 2000);
    assert.equal(probe.kind, 'unreachable', JSON.stringify(probe));
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
