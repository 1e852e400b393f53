import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConfigIO } from '../../config/configIO.js';
import { parseInlineSpec } from '../../config/layers.js';
import { configDirPath, loadConfig } from '../../config/load.js';
import { hashEntries, mergeLayers } from '../../config/merge.js';
import { expandString, parseTemplate, splitCommand, type ExpandContext } from '../../config/expand.js';
import { isValidServerName, nameProblem } from '../../config/names.js';
import { findCommandExpressions, parseConfigText } from '../../config/parse.js';
import {
  allowedSecretNames,
  bearerToken,
  isSecretName,
  requestHeaders,
  scrubbedEnvironment,
  scrubSecrets,
  secretValues,
  serverEnvironment,
} from '../../config/secrets.js';
import { ConfigError, type ServerEntry } from '../../config/types.js';
import { BASE_ENV, configText, fakeIO, WS } from './configFixtures.js';

const FILE = '/cfg/mcp.json';

function parseOne(entry: string, env: NodeJS.ProcessEnv = BASE_ENV): ServerEntry {
  const result = parseConfigText(configText([entry]), { kind: 'configDir', file: FILE, workspace: WS }, env);
  assert.deepEqual(result.refused, []);
  assert.equal(result.servers.length, 1);
  return result.servers[0];
}

const goodCases: [string, string, Partial<ServerEntry>][] = [
  [
    'stdio inferred',
    '"fs": { "command": "npx", "args": ["-y", "server-fs"] }',
    { type: 'stdio', command: 'npx', args: ['-y', 'server-fs'], cwd: '/cfg', enabled: true },
  ],
  [
    'http inferred',
    '"api": { "url": "https://a.example/mcp" }',
    { type: 'http', url: 'https://a.example/mcp', cwd: undefined },
  ],
  ['sse declared', '"old": { "type": "sse", "url": "http://127.0.0.1:3001/sse" }', { type: 'sse' }],
  ['stdio declared', '"s": { "type": "stdio", "command": "x" }', { type: 'stdio' }],
  [
    "relative cwd joins the layer's folder, not the workspace",
    '"s": { "command": "x", "cwd": "sub/dir" }',
    { cwd: '/cfg/sub/dir' },
  ],
  ["relative cwd may leave the layer's folder", '"s": { "command": "x", "cwd": "../other" }', { cwd: '/other' }],
  ['cwd may name the workspace explicitly', '"s": { "command": "x", "cwd": "/ws" }', { cwd: WS }],
  ['absolute cwd is kept (normalised)', '"s": { "command": "x", "cwd": "/srv//data/./x" }', { cwd: '/srv/data/x' }],
  ['cwd "." is the layer\'s folder', '"s": { "command": "x", "cwd": "." }', { cwd: '/cfg' }],
  [
    'timeouts are seconds',
    '"s": { "command": "x", "startTimeout": 30, "toolTimeout": 1.5 }',
    { startTimeoutMs: 30_000, toolTimeoutMs: 1500 },
  ],
  ['disabled', '"s": { "command": "x", "enabled": false }', { enabled: false }],
  [
    'disabled keeps unset variables unexpanded',
    '"s": { "command": "$NOT_SET", "enabled": false }',
    { enabled: false, command: '$NOT_SET' },
  ],
  ['tools deduplicated', '"s": { "command": "x", "tools": ["a", "b", "a"] }', { tools: ['a', 'b'] }],
  [
    'env and envFrom',
    '"s": { "command": "x", "env": { "A": "1", "B": "${SET_VAR}" }, "envFrom": { "TOKEN": "GH_TOKEN" } }',
    { env: { A: '1', B: 'value' }, envFrom: { TOKEN: 'GH_TOKEN' } },
  ],
  [
    'bearerTokenEnv',
    '"s": { "url": "https://a.example", "bearerTokenEnv": "GH_TOKEN" }',
    { bearerTokenEnv: 'GH_TOKEN', headers: {} },
  ],
  [
    'Authorization Bearer ${VAR} becomes bearerTokenEnv',
    '"s": { "url": "https://a.example", "headers": { "Authorization": "Bearer ${GH_TOKEN}", "X-Team": "core" } }',
    { bearerTokenEnv: 'GH_TOKEN', headers: { 'X-Team': 'core' } },
  ],
  [
    'Authorization Bearer $VAR becomes bearerTokenEnv',
    '"s": { "url": "https://a.example", "headers": { "authorization": "Bearer $DB_PASS" } }',
    { bearerTokenEnv: 'DB_PASS' },
  ],
  [
    'same variable in both forms',
    '"s": { "url": "https://a.example", "bearerTokenEnv": "GH_TOKEN", "headers": { "Authorization": "Bearer ${GH_TOKEN}" } }',
    { bearerTokenEnv: 'GH_TOKEN' },
  ],
  [
    'url from variables',
    '"s": { "url": "https://${HOST:-localhost}:${PORT:-8080}/mcp" }',
    { url: 'https://localhost:8080/mcp' },
  ],
  ['$$ is a dollar', '"s": { "command": "x", "args": ["$$5", "a$$b"] }', { args: ['$5', 'a$b'] }],
  ['32-character name', `"${'a'.repeat(32)}": { "command": "x" }`, { name: 'a'.repeat(32) }],
  ['name with single separators', '"my-srv_2": { "command": "x" }', { name: 'my-srv_2' }],
  [
    'query string kept',
    '"s": { "url": "https://a.example/mcp?x=1&y=$SET_VAR" }',
    { url: 'https://a.example/mcp?x=1&y=value' },
  ],
  ['protocol left out: negotiated', '"s": { "command": "x" }', { protocol: undefined }],
  ['protocol auto', '"s": { "command": "x", "protocol": "auto" }', { protocol: 'auto' }],
  ['protocol legacy on http', '"s": { "url": "https://a.example", "protocol": "legacy" }', { protocol: 'legacy' }],
  ['protocol pinned on stdio', '"s": { "command": "x", "protocol": "2026-07-28" }', { protocol: '2026-07-28' }],
  [
    'protocol legacy on sse',
    '"s": { "type": "sse", "url": "https://a.example", "protocol": "legacy" }',
    { type: 'sse', protocol: 'legacy' },
  ],
  ['tasks left out: only task-required tools run as tasks', '"s": { "command": "x" }', { tasks: undefined }],
  ['tasks auto', '"s": { "command": "x", "tasks": "auto" }', { tasks: 'auto' }],
  ['tasks prefer on http', '"s": { "url": "https://a.example", "tasks": "prefer" }', { tasks: 'prefer' }],
  ['retry left out: the annotations decide', '"s": { "command": "x" }', { retry: undefined }],
  ['retry auto', '"s": { "command": "x", "retry": "auto" }', { retry: 'auto' }],
  ['retry safe on stdio', '"s": { "command": "x", "retry": "safe" }', { retry: 'safe' }],
  ['retry never on http', '"s": { "url": "https://a.example", "retry": "never" }', { retry: 'never' }],
  [
    'retry safe on sse',
    '"s": { "type": "sse", "url": "https://a.example", "retry": "safe" }',
    { type: 'sse', retry: 'safe' },
  ],
  ['roots left out: the turn decides', '"s": { "command": "x" }', { roots: undefined }],
  ['roots false: never offered a root', '"s": { "command": "x", "roots": false }', { roots: false }],
  ['roots true is the default', '"s": { "url": "https://a.example", "roots": true }', { roots: undefined }],
  [
    'retry on a disabled entry',
    '"s": { "command": "x", "enabled": false, "retry": "never" }',
    { enabled: false, retry: 'never' },
  ],
];

for (const [title, entry, expected] of goodCases) {
  void test(`good entry: ${title}`, () => {
    const got = parseOne(entry);
    for (const [key, value] of Object.entries(expected)) assert.deepEqual(got[key as keyof ServerEntry], value, key);
    assert.equal(got.source, `${FILE}:3`);
  });
}

void test('good file: $schema and a leading byte order mark are accepted; other top-level fields warn', () => {
  const text = `\uFEFF{ "$schema": "https://x.example/schema.json", "inputs": [], "mcpServers": { "a": { "command": "x" } } }`;
  const result = parseConfigText(text, { kind: 'configDir', file: FILE, workspace: WS }, {});
  assert.deepEqual(
    result.servers.map((s) => s.name),
    ['a'],
  );
  assert.deepEqual(result.warnings, [`${FILE}:1: unknown top-level field "inputs" ignored`]);
});

void test('good file: a command with spaces and no path warns that args belong in "args"', () => {
  const result = parseConfigText(
    configText(['"a": { "command": "npx -y pkg" }']),
    { kind: 'configDir', file: FILE, workspace: WS },
    {},
  );
  assert.equal(result.servers.length, 1);
  assert.match(result.warnings[0], /"command" contains spaces/);
});

void test('good file: untrusted layers may set "retry" on their own servers', () => {
  for (const kind of ['workspace', 'plugin'] as const) {
    const plugin = kind === 'plugin' ? { plugin: { name: 'p', root: '/p' } } : {};
    const result = parseConfigText(
      configText(['"s": { "command": "x", "retry": "safe" }']),
      { kind, file: FILE, workspace: WS, ...plugin },
      {},
    );
    assert.deepEqual(result.refused, []);
    assert.equal(result.servers[0].retry, 'safe');
  }
});

// Where a server without "cwd" starts, and what a relative "cwd" joins: its layer's own folder.
// Trusted servers never start in the agent-writable workspace unless "cwd" says so.
const cwdCases: [string, Parameters<typeof parseConfigText>[1], string, string][] = [
  [
    'config dir: the config dir',
    { kind: 'configDir', file: '/cfg/mcp.json', folder: '/cfg', workspace: WS },
    '/cfg',
    '/cfg/bin',
  ],
  [
    'explicit file: its folder',
    { kind: 'explicit', file: '/etc/dmcp/ci.json', workspace: WS },
    '/etc/dmcp',
    '/etc/dmcp/bin',
  ],
  [
    'explicit file read through a symlink: the real folder',
    { kind: 'explicit', file: '/home/me/ci.json', folder: '/etc/dmcp', workspace: WS },
    '/etc/dmcp',
    '/etc/dmcp/bin',
  ],
  [
    'workspace layer: the workspace',
    { kind: 'workspace', file: `${WS}/.agents/mcp.json`, workspace: WS },
    WS,
    `${WS}/bin`,
  ],
  [
    'plugin: the plugin folder',
    { kind: 'plugin', file: '/plug/.mcp.json', workspace: WS, plugin: { name: 'p', root: '/plug' } },
    '/plug',
    '/plug/bin',
  ],
];
for (const [title, layer, dflt, relative] of cwdCases) {
  void test(`good cwd: ${title}`, () => {
    const result = parseConfigText(
      configText(['"a": { "command": "x" }', '"b": { "command": "x", "cwd": "bin" }']),
      layer,
      {},
    );
    assert.deepEqual(result.refused, []);
    assert.deepEqual(
      result.servers.map((e) => e.cwd),
      [dflt, relative],
    );
  });
}

void test('good file: empty mcpServers', () => {
  assert.deepEqual(parseConfigText('{ "mcpServers": {} }', { kind: 'explicit', file: FILE, workspace: WS }, {}), {
    servers: [],
    refused: [],
    warnings: [],
  });
});

void test('good inline specs', () => {
  assert.deepEqual(parseInlineSpec('fs:npx -y  @scope/server-fs /tmp', 0, '/neutral'), {
    name: 'fs',
    layer: 'inline',
    source: '--mcp #1',
    trusted: true,
    type: 'stdio',
    command: 'npx',
    args: ['-y', '@scope/server-fs', '/tmp'],
    env: {},
    envFrom: {},
    headers: {},
    enabled: true,
    cwd: '/neutral',
  });
  const web = parseInlineSpec('web:https://a.example/mcp', 1, WS);
  assert.equal(web.type, 'http');
  assert.equal(web.url, 'https://a.example/mcp');
  assert.equal(parseInlineSpec('x:$HOME/bin', 0, WS).command, '$HOME/bin');
});

// ---------------------------------------------------------------- layers and precedence

const cfg = (name: string, command: string): string => configText([`"${name}": { "command": "${command}" }`]);

interface LayerCase {
  title: string;
  files: Record<string, string>;
  env?: NodeJS.ProcessEnv;
  refs?: { mcpConfigFiles?: string[]; inlineSpecs?: string[]; plugins?: string[] };
  /** name -> [layer, command] */
  expect: Record<string, [string, string | undefined]>;
  warn?: RegExp;
}

const layerCases: LayerCase[] = [
  { title: 'config dir alone', files: { '/cfg/mcp.json': cfg('a', 'dir') }, expect: { a: ['configDir', 'dir'] } },
  { title: 'missing config dir is normal', files: {}, expect: {} },
  {
    title: 'DMCP_NO_USER_CONFIG=1 skips the config dir',
    files: { '/cfg/mcp.json': cfg('a', 'dir') },
    env: { DMCP_NO_USER_CONFIG: '1' },
    expect: {},
  },
  { title: 'workspace ignored by default', files: { [`${WS}/.agents/mcp.json`]: cfg('w', 'ws') }, expect: {} },
  {
    title: 'workspace read with DMCP_WORKSPACE_MCP=true',
    files: { [`${WS}/.agents/mcp.json`]: cfg('w', 'ws') },
    env: { DMCP_WORKSPACE_MCP: 'true' },
    expect: { w: ['workspace', 'ws'] },
  },
  {
    title: 'workspace does not replace the config dir',
    env: { DMCP_WORKSPACE_MCP: 'true' },
    files: { '/cfg/mcp.json': cfg('a', 'dir'), [`${WS}/.agents/mcp.json`]: cfg('a', 'ws') },
    expect: { a: ['configDir', 'dir'] },
    warn: /untrusted layer cannot replace/,
  },
  {
    title: 'explicit replaces the config dir whole',
    refs: { mcpConfigFiles: ['/e1.json'] },
    files: {
      '/cfg/mcp.json': configText(['"a": { "command": "dir", "env": { "X": "1" } }']),
      '/e1.json': cfg('a', 'explicit'),
    },
    expect: { a: ['explicit', 'explicit'] },
  },
  {
    title: 'explicit replaces the workspace',
    refs: { mcpConfigFiles: ['/e1.json'] },
    env: { DMCP_WORKSPACE_MCP: 'true' },
    files: { [`${WS}/.agents/mcp.json`]: cfg('a', 'ws'), '/e1.json': cfg('a', 'explicit') },
    expect: { a: ['explicit', 'explicit'] },
  },
  {
    title: 'later explicit files win',
    refs: { mcpConfigFiles: ['/e1.json', '/e2.json'] },
    files: { '/e1.json': cfg('a', 'one'), '/e2.json': cfg('a', 'two') },
    expect: { a: ['explicit', 'two'] },
  },
  {
    title: 'inline wins over everything',
    refs: { mcpConfigFiles: ['/e1.json'], inlineSpecs: ['a:inline'] },
    files: { '/cfg/mcp.json': cfg('a', 'dir'), '/e1.json': cfg('a', 'explicit') },
    expect: { a: ['inline', 'inline'] },
  },
  {
    title: 'plugin servers are prefixed; the manifest wins inside a plugin',
    refs: { plugins: ['/plugins/tools'] },
    files: {
      '/plugins/tools/.mcp.json': configText([
        '"a": { "command": "file-a" }',
        '"b": { "command": "${PLUGIN_ROOT}/b" }',
      ]),
      '/plugins/tools/plugin.json':
        '{ "name": "tools", "description": "x", "mcpServers": { "a": { "command": "manifest-a" } } }',
    },
    expect: { plugin_tools_a: ['plugin', 'manifest-a'], plugin_tools_b: ['plugin', '/plugins/tools/b'] },
  },
  {
    title: 'plugin name falls back to the folder',
    refs: { plugins: ['/plugins/my-kit'] },
    files: { '/plugins/my-kit/.mcp.json': cfg('srv', 'x') },
    expect: { 'plugin_my-kit_srv': ['plugin', 'x'] },
  },
  {
    title: 'plugin names may exceed 32 characters',
    refs: { plugins: ['/p'] },
    files: {
      '/p/plugin.json': `{ "name": "${'p'.repeat(30)}", "mcpServers": { "${'s'.repeat(30)}": { "command": "x" } } }`,
    },
    expect: { [`plugin_${'p'.repeat(30)}_${'s'.repeat(30)}`]: ['plugin', 'x'] },
  },
  {
    title: 'DMCP_MCP_ENV junk warns',
    files: {},
    env: { DMCP_MCP_ENV: 'GOOD, bad-name' },
    expect: {},
    warn: /DMCP_MCP_ENV: ignored "bad-name"/,
  },
];

for (const c of layerCases) {
  void test(`layers: ${c.title}`, async () => {
    const loaded = await loadConfig(
      {
        workspace: WS,
        mcpConfigFiles: c.refs?.mcpConfigFiles ?? [],
        inlineSpecs: c.refs?.inlineSpecs ?? [],
        plugins: c.refs?.plugins,
      },
      { DMCP_CONFIG_DIR: '/cfg', ...c.env },
      fakeIO(c.files),
    );
    assert.deepEqual(Object.fromEntries(loaded.servers.map((s) => [s.name, [s.layer, s.command]])), c.expect);
    assert.deepEqual(loaded.refused, []);
    if (c.warn)
      assert.ok(
        loaded.warnings.some((w) => c.warn?.test(w)),
        loaded.warnings.join('\n'),
      );
    else assert.deepEqual(loaded.warnings, []);
  });
}

void test('layers: DMCP_MCP=false turns MCP off without reading anything', async () => {
  const io = fakeIO({ '/cfg/mcp.json': cfg('a', 'x') });
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: ['/missing.json'], inlineSpecs: ['a:x'] },
    { DMCP_CONFIG_DIR: '/cfg', DMCP_MCP: 'false' },
    io,
  );
  assert.deepEqual(loaded, { off: true, servers: [], refused: [], warnings: [], hash: 'off' });
  assert.deepEqual(io.reads, []);
});

const dirCases: [NodeJS.ProcessEnv, string | undefined][] = [
  [{ DMCP_CONFIG_DIR: '/d', XDG_CONFIG_HOME: '/x', HOME: '/h' }, '/d'],
  [{ XDG_CONFIG_HOME: '/x', HOME: '/h' }, '/x/durable-mcp'],
  [{ XDG_CONFIG_HOME: 'relative', HOME: '/h' }, '/h/.config/durable-mcp'],
  [{ HOME: '/h' }, '/h/.config/durable-mcp'],
  [{}, undefined],
];
for (const [env, dir] of dirCases) {
  void test(`config dir from ${JSON.stringify(env)}`, () => assert.equal(configDirPath(env), dir));
}

void test('layers: the config dir comes from the environment when refs do not say', async () => {
  const io = fakeIO({ '/x/durable-mcp/mcp.json': cfg('a', 'x') });
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: [], inlineSpecs: [] },
    { XDG_CONFIG_HOME: '/x' },
    io,
  );
  assert.deepEqual(
    loaded.servers.map((s) => s.name),
    ['a'],
  );
});

void test('layers: mergeLayers keeps positions when a trusted layer replaces an entry', () => {
  const e = (name: string, layer: ServerEntry['layer'], command: string): ServerEntry => ({
    name,
    layer,
    source: layer,
    trusted: layer !== 'workspace',
    type: 'stdio',
    command,
    args: [],
    env: {},
    envFrom: {},
    headers: {},
    enabled: true,
  });
  const merged = mergeLayers([
    { kind: 'configDir', servers: [e('a', 'configDir', '1'), e('b', 'configDir', '1')], refused: [] },
    { kind: 'workspace', servers: [e('c', 'workspace', '2')], refused: [] },
    { kind: 'explicit', servers: [e('a', 'explicit', '3')], refused: [] },
  ]);
  assert.deepEqual(
    merged.servers.map((s) => `${s.name}:${s.command}`),
    ['a:3', 'b:1', 'c:2'],
  );
});

// ---------------------------------------------------------------- command expressions

void test('commands: run once per load, argv when possible, with the scrubbed environment, trimmed', async () => {
  const text = configText([
    '"a": { "command": "$(which node)", "args": ["$(which node)", "--token-file=$(cat \'my file\')"] }',
    '"b": { "url": "https://a.example/$(printf x | tr x y)" }',
    '"c": { "command": "$(never-run)", "enabled": false }',
  ]);
  const io = fakeIO(
    { '/cfg/mcp.json': text, '/e.json': text },
    {
      'which node': '/usr/bin/node',
      'cat my file': ' /t ',
      '/bin/sh -c printf x | tr x y': 'y',
    },
  );
  const env = { ...BASE_ENV };
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: ['/e.json'], inlineSpecs: [] },
    { ...env, DMCP_CONFIG_DIR: '/cfg' },
    io,
  );
  // Each command runs once per folder (the config dir, then / for /e.json), never once per field.
  const once = [
    ['which', 'node'],
    ['cat', 'my file'],
    ['/bin/sh', '-c', 'printf x | tr x y'],
  ];
  assert.deepEqual(
    io.calls.map((c) => [c.cwd, c.argv]),
    [...once.map((a) => ['/cfg', a]), ...once.map((a) => ['/', a])],
  );
  for (const call of io.calls) {
    assert.equal(call.env.GH_TOKEN, undefined);
    assert.equal(call.env.OPENAI_API_KEY, undefined);
    assert.equal(call.env.SET_VAR, 'value');
    assert.equal(call.timeoutMs, 10_000);
  }
  const a = loaded.servers.find((s) => s.name === 'a');
  assert.deepEqual([a?.command, a?.args], ['/usr/bin/node', ['/usr/bin/node', '--token-file=/t']]);
  assert.equal(loaded.servers.find((s) => s.name === 'b')?.url, 'https://a.example/y');
});

void test('commands: findCommandExpressions lists each once, skipping disabled entries', () => {
  const text = configText([
    '"a": { "command": "$(x)", "env": { "A": "$(y) $(x)" } }',
    '"b": { "command": "$(z)", "enabled": false }',
  ]);
  assert.deepEqual(findCommandExpressions(text), ['x', 'y']);
  assert.deepEqual(findCommandExpressions('not json'), []);
});

const splitCases: [string, string[] | undefined][] = [
  ['cat file', ['cat', 'file']],
  ['  op  read  "op://vault/item/field" ', ['op', 'read', 'op://vault/item/field']],
  ['echo \'a b\' "c d"', ['echo', 'a b', 'c d']],
  ['echo ""', ['echo', '']],
  ['a | b', undefined],
  ['echo $HOME', undefined],
  ['ls *.json', undefined],
  ['cat ~/x', undefined],
  ['A=1 cmd', undefined],
  ['echo "unterminated', undefined],
  ['echo "a\\"b"', undefined],
];
for (const [command, argv] of splitCases) {
  void test(`splitCommand ${JSON.stringify(command)}`, () => assert.deepEqual(splitCommand(command), argv));
}

// ---------------------------------------------------------------- expansion

const ctx: ExpandContext = {
  env: BASE_ENV,
  allowCommands: true,
  layerLabel: 'config dir',
  commands: new Map([['date', { ok: true, stdout: '2024' }]]),
};
const expandCases: [string, string | RegExp][] = [
  ['plain', 'plain'],
  ['$SET_VAR', 'value'],
  ['${SET_VAR}', 'value'],
  ['pre-${SET_VAR}-post', 'pre-value-post'],
  ['$SET_VAR.x', 'value.x'],
  ['$SET_VARx', /"SET_VARx" is not set/],
  ['${UNSET:-fallback}', 'fallback'],
  ['${EMPTY_VAR:-fallback}', 'fallback'],
  ['${SET_VAR:-fallback}', 'value'],
  ['${UNSET:-}', ''],
  ['${UNSET:-a b:c}', 'a b:c'],
  ['$EMPTY_VAR', ''],
  ['$$', '$'],
  ['$$SET_VAR', '$SET_VAR'],
  ['$$$SET_VAR', '$value'],
  ['$(date)', '2024'],
  ['v$(date)!', 'v2024!'],
  ['$(other)', /"\$\(other\)" was not run/],
  ['$', /lone "\$"/],
  ['a$ b', /lone "\$"/],
  ['$1', /lone "\$"/],
  ['${}', /not a supported expression/],
  ['${A:=b}', /not a supported expression/],
  ['$(', /unclosed "\$\("/],
  ['$()', /empty command/],
  ['${GH_TOKEN:-x}', /is secret/],
  ['$ANTHROPIC_API_KEY', /is secret/],
  ['$PGPASSWORD', /is secret/],
  ['$AWS_SECRET_ACCESS_KEY', /is secret/],
];
for (const [input, want] of expandCases) {
  void test(`expand ${JSON.stringify(input)}`, () => {
    const got = expandString(input, ctx);
    if (typeof want === 'string') assert.deepEqual(got, { ok: true, value: want });
    else assert.ok(!got.ok && want.test(got.problem), JSON.stringify(got));
  });
}

void test('expand: untrusted layers refuse commands; check-only mode keeps text and skips unset variables', () => {
  const untrusted = expandString('$(date)', { ...ctx, allowCommands: false, layerLabel: 'workspace' });
  assert.ok(!untrusted.ok && /not allowed in the workspace layer/.test(untrusted.problem));
  assert.deepEqual(expandString('$UNSET $(date)', { ...ctx, checkOnly: true }), { ok: true, value: '$UNSET $(date)' });
  assert.ok(!expandString('$GH_TOKEN', { ...ctx, checkOnly: true }).ok);
  assert.deepEqual(parseTemplate('a${B:-c}$(d)'), {
    ok: true,
    parts: [
      { kind: 'text', text: 'a' },
      { kind: 'var', name: 'B', fallback: 'c' },
      { kind: 'command', command: 'd' },
    ],
  });
});

// ---------------------------------------------------------------- names

const nameCases: [string, boolean][] = [
  ['a', true],
  ['Abc-1_x', true],
  ['a'.repeat(32), true],
  ['a'.repeat(33), false],
  ['', false],
  ['1a', false],
  ['_a', false],
  ['a__b', false],
  ['a--b', false],
  ['a_-b', false],
  ['a_', false],
  ['a-', false],
  ['a.b', false],
  ['ä', false],
  ['a b', false],
  ['a\nb', false],
];
for (const [name, ok] of nameCases) {
  void test(`name ${JSON.stringify(name)} is ${ok ? 'valid' : 'refused'}`, () => {
    assert.equal(isValidServerName(name), ok);
    if (!ok) assert.ok(nameProblem(name)?.includes(name === '' ? 'empty' : JSON.stringify(name)));
  });
}

// ---------------------------------------------------------------- secrets

const secretNameCases: [string, boolean][] = [
  ['OPENAI_API_KEY', true],
  ['ANTHROPIC_API_KEY', true],
  ['GOOGLE_APIKEY', true],
  ['GITHUB_TOKEN', true],
  ['AWS_SESSION_TOKEN', true],
  ['AWS_SECRET_ACCESS_KEY', true],
  ['PGPASSWORD', true],
  ['DB_PASSWORD', true],
  ['GOOGLE_APPLICATION_CREDENTIALS', true],
  ['TEMPORAL_API_KEY', true],
  ['TEMPORAL_TLS_CLIENT_KEY_PATH', true],
  ['TEMPORAL_TLS_CLIENT_KEY_DATA', true],
  ['TEMPORAL_CODEC_AUTH', true],
  ['DMCP_ENCRYPTION_KEY', true],
  ['DB_PASS', true /* allow-listed in BASE_ENV */],
  ['github_token', true],
  ['HOME', false],
  ['PATH', false],
  ['NPM_TOKEN_FILE', false],
  ['DMCP_MAX_TOOL_RESULT_TOKENS', false],
  ['TEMPORAL_ADDRESS', false],
  ['TEMPORAL_NAMESPACE', false],
  ['KEYBOARD', false],
  // TLS settings that are not credentials: scrubbing `localhost` or `true` out of every result would garble it.
  ['TEMPORAL_TLS_SERVER_NAME', false],
  ['TEMPORAL_TLS_DISABLE_HOST_VERIFICATION', false],
  ['TEMPORAL_TLS_CLIENT_CERT_PATH', false],
  ['TEMPORAL_TLS_SERVER_CA_CERT_PATH', false],
  ['MONKEY', false],
  ['DMCP_MCP_ENV', false],
];
for (const [name, secret] of secretNameCases) {
  void test(`secret name ${name}: ${secret}`, () => assert.equal(isSecretName(name, BASE_ENV), secret));
}

void test('secrets: DMCP_MCP_ENV parsing', () => {
  assert.deepEqual(allowedSecretNames({ DMCP_MCP_ENV: ' A, B ,,C D,A,bad-name,1X ' }), ['A', 'B', 'C', 'D']);
  assert.deepEqual(allowedSecretNames({}), []);
});

const stdioEntry: ServerEntry = {
  name: 's',
  layer: 'configDir',
  source: '/cfg/mcp.json:3',
  trusted: true,
  type: 'stdio',
  command: 'x',
  args: [],
  env: { PLAIN: '1', PATH: '/custom' },
  envFrom: { TOKEN: 'GH_TOKEN' },
  headers: {},
  enabled: true,
};

void test('secrets: a stdio server gets the worker environment minus secrets, plus env, plus envFrom', () => {
  const got = serverEnvironment(stdioEntry, BASE_ENV);
  assert.deepEqual(got, {
    HOME: '/home/u',
    PATH: '/custom',
    DMCP_MCP_ENV: 'GH_TOKEN,DB_PASS',
    SET_VAR: 'value',
    EMPTY_VAR: '',
    NEWLINE_VAR: BASE_ENV.NEWLINE_VAR,
    PLAIN: '1',
    TOKEN: 'ghp_supersecretvalue',
  });
  const plain = serverEnvironment({ ...stdioEntry, envFrom: {} }, BASE_ENV);
  for (const value of secretValues(BASE_ENV)) assert.ok(!Object.values(plain).includes(value));
  assert.deepEqual(scrubbedEnvironment({ A: '1', GH_TOKEN: 'x', U: undefined }), { A: '1' });
});

void test('secrets: a missing or unlisted envFrom variable is an error naming it', () => {
  assert.throws(
    () => serverEnvironment(stdioEntry, { DMCP_MCP_ENV: 'GH_TOKEN' }),
    (err: unknown) =>
      err instanceof ConfigError &&
      /"GH_TOKEN" is not set on this worker/.test(err.message) &&
      err.field === 'envFrom.TOKEN',
  );
  assert.throws(() => serverEnvironment(stdioEntry, { GH_TOKEN: 'ghp_x' }), /"GH_TOKEN" is not listed in DMCP_MCP_ENV/);
});

void test('secrets: bearer tokens resolve on the worker', () => {
  const http: ServerEntry = {
    ...stdioEntry,
    type: 'http',
    url: 'https://a.example',
    envFrom: {},
    env: {},
    headers: { 'X-A': '1' },
    bearerTokenEnv: 'GH_TOKEN',
  };
  assert.equal(bearerToken(http, BASE_ENV), 'ghp_supersecretvalue');
  assert.deepEqual(requestHeaders(http, BASE_ENV), { 'X-A': '1', Authorization: 'Bearer ghp_supersecretvalue' });
  assert.equal(bearerToken({ ...http, bearerTokenEnv: undefined }, BASE_ENV), undefined);
  assert.throws(() => bearerToken(http, { DMCP_MCP_ENV: 'GH_TOKEN' }), /not set on this worker/);
  assert.throws(
    () => bearerToken(http, { DMCP_MCP_ENV: 'GH_TOKEN', GH_TOKEN: 'a\r\nX: y' }),
    (err: unknown) => err instanceof ConfigError && /line break/.test(err.message) && !err.message.includes('X: y'),
  );
});

void test('secrets: scrubbing replaces every secret value of 4+ characters', () => {
  const env = { DMCP_MCP_ENV: 'A,B', A: 'abcd', B: 'abcdef', C_TOKEN: 'xyz', HOME: '/home/u' };
  assert.deepEqual(secretValues(env), ['abcdef', 'abcd']);
  assert.equal(scrubSecrets('abcdef abcd xyz /home/u', env), '[redacted] [redacted] xyz /home/u');
});

// ---------------------------------------------------------------- hash

void test('hash: same content gives the same hash, whatever the key order or line', async () => {
  const refs = { workspace: WS, mcpConfigFiles: ['/e.json'], inlineSpecs: [] };
  const env = { DMCP_NO_USER_CONFIG: '1' };
  const load = (text: string): Promise<string> =>
    loadConfig(refs, env, fakeIO({ '/e.json': text })).then((c) => c.hash);
  const h1 = await load(
    '{ "mcpServers": { "a": { "command": "x", "env": { "A": "1", "B": "2" } }, "b": { "url": "https://a.example" } } }',
  );
  const h2 = await load(
    '{\n\n "mcpServers": {\n "b": { "url": "https://a.example" },\n "a": { "env": { "B": "2", "A": "1" }, "command": "x" } } }',
  );
  const h3 = await load(
    '{ "mcpServers": { "a": { "command": "x", "env": { "A": "1", "B": "3" } }, "b": { "url": "https://a.example" } } }',
  );
  assert.equal(h1, h2);
  assert.notEqual(h1, h3);
  assert.match(h1, /^[0-9a-f]{16}$/);
  assert.equal(hashEntries([]), hashEntries([]));
});

void test('hash: "retry" counts, and "auto" hashes like leaving it out', async () => {
  const refs = { workspace: WS, mcpConfigFiles: ['/e.json'], inlineSpecs: [] };
  const env = { DMCP_NO_USER_CONFIG: '1' };
  const load = (retry: string): Promise<string> =>
    loadConfig(refs, env, fakeIO({ '/e.json': `{ "mcpServers": { "a": { "command": "x"${retry} } } }` })).then(
      (c) => c.hash,
    );
  const [none, auto, safe, never] = await Promise.all(
    ['', ', "retry": "auto"', ', "retry": "safe"', ', "retry": "never"'].map(load),
  );
  assert.equal(none, auto);
  assert.equal(new Set([auto, safe, never]).size, 3);
});

void test('hash: "protocol" counts, and "auto" hashes like leaving it out', async () => {
  const refs = { workspace: WS, mcpConfigFiles: ['/e.json'], inlineSpecs: [] };
  const env = { DMCP_NO_USER_CONFIG: '1' };
  const load = (protocol: string): Promise<string> =>
    loadConfig(refs, env, fakeIO({ '/e.json': `{ "mcpServers": { "a": { "command": "x"${protocol} } } }` })).then(
      (c) => c.hash,
    );
  const [none, auto, legacy, pinned] = await Promise.all(
    ['', ', "protocol": "auto"', ', "protocol": "legacy"', ', "protocol": "2026-07-28"'].map(load),
  );
  assert.equal(none, auto);
  assert.equal(new Set([auto, legacy, pinned]).size, 3);
});

void test('hash: "tasks" counts, and "auto" hashes like leaving it out', async () => {
  const refs = { workspace: WS, mcpConfigFiles: ['/e.json'], inlineSpecs: [] };
  const env = { DMCP_NO_USER_CONFIG: '1' };
  const load = (tasks: string): Promise<string> =>
    loadConfig(refs, env, fakeIO({ '/e.json': `{ "mcpServers": { "a": { "command": "x"${tasks} } } }` })).then(
      (c) => c.hash,
    );
  const [none, auto, prefer] = await Promise.all(['', ', "tasks": "auto"', ', "tasks": "prefer"'].map(load));
  assert.equal(none, auto);
  assert.notEqual(auto, prefer);
});

void test('io: the real ConfigIO reports missing files as ENOENT and runs commands', async () => {
  const { nodeConfigIO } = await import('../../config/configIO.js');
  const io: ConfigIO = nodeConfigIO;
  await assert.rejects(io.readText('/definitely/not/here.json'), (err: NodeJS.ErrnoException) => err.code === 'ENOENT');
  const out = await io.runCommand?.({
    argv: [process.execPath, '-e', 'process.stdout.write(process.env.SET_VAR ?? "none")'],
    cwd: '/',
    env: { SET_VAR: 'v' },
    timeoutMs: 5000,
  });
  assert.equal(out, 'v');
  await assert.rejects(
    io.runCommand?.({
      argv: [process.execPath, '-e', 'setTimeout(() => {}, 5000)'],
      cwd: '/',
      env: {},
      timeoutMs: 200,
    }) ?? Promise.reject(new Error('x')),
    /timed out/,
  );
});
