import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/limits.js';
import { SettingsError, loadSettings, parseDuration, parseFlag } from '../../settings/index.js';

test('an empty environment gives the documented defaults', () => {
  const s = loadSettings({});
  assert.deepEqual(s, {
    temporal: { address: undefined, namespace: 'default' },
    taskQueue: 'durable-mcp',
    dataDir: resolve('.data'),
    startTimeoutMs: 10_000,
    sessionIdleMs: 10 * 60_000,
    warmSpares: 0,
    turnIdleMs: 30 * 60_000,
    inputTimeoutMs: 24 * 60 * 60_000,
    legacyInputTimeoutMs: 10 * 60_000,
    shutdownGraceMs: 30_000,
    stickyWaitMs: 500,
    fastPath: true,
    eagerCalls: true,
    sharedCalls: true,
    toolPrefix: 'mcp',
    logLevel: 'info',
    sdkLogLevel: 'WARN',
    payloads: { encryptionKey: undefined, previousEncryptionKeys: [], externalThresholdBytes: 16 * 1024 },
    dev: { port: 7233, uiPort: 8233, codecPort: 8234 },
    shape: DEFAULT_SHAPE_LIMITS,
    config: { mcpOff: false, noUserConfig: false, workspaceMcp: false, mcpEnv: [] },
    governance: { allowedTools: undefined, disallowedTools: [] },
    boundary: { allowInline: undefined, allowedConfigDirs: undefined, workspaceRoots: undefined },
    api: { host: '127.0.0.1', port: 8235, maxBodyBytes: 2 * 1024 * 1024, callWaitMs: 30_000 },
    untrustedStdio: { mode: 'sandbox', bwrap: 'bwrap', hide: [] },
    metrics: { host: '127.0.0.1' },
    oauth: { dir: resolve('.data', 'oauth'), previousKeys: [], callbackPort: 8788 },
    debug: false,
    given: new Set(),
  });
});

const good: { env: Record<string, string>; check: (s: ReturnType<typeof loadSettings>) => void }[] = [
  {
    env: { TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_NAMESPACE: 'agents' },
    check: (s) => assert.deepEqual(s.temporal, { address: 'temporal:7233', namespace: 'agents' }),
  },
  { env: { DMCP_TASK_QUEUE: 'tools' }, check: (s) => assert.equal(s.taskQueue, 'tools') },
  {
    env: { DMCP_LOG_LEVEL: 'warn', DMCP_DEBUG: ' ', PATH: '/bin' },
    check: (s) => assert.deepEqual([...s.given], ['DMCP_LOG_LEVEL']),
  },
  {
    env: { HOME: '/home/a', XDG_CONFIG_HOME: 'relative' },
    check: (s) => assert.equal(s.config.configDir, '/home/a/.config/durable-mcp'),
  },
  {
    env: { DMCP_CONFIG_DIR: '/etc/dmcp', HOME: '/home/a' },
    check: (s) => assert.equal(s.config.configDir, '/etc/dmcp'),
  },
  { env: { DMCP_DATA_DIR: '/srv/dmcp' }, check: (s) => assert.equal(s.dataDir, '/srv/dmcp') },
  { env: { DMCP_INPUT_TIMEOUT: '90s' }, check: (s) => assert.equal(s.inputTimeoutMs, 90_000) },
  { env: { DMCP_LEGACY_INPUT_TIMEOUT: '2m' }, check: (s) => assert.equal(s.legacyInputTimeoutMs, 120_000) },
  {
    env: { DMCP_START_TIMEOUT: '2.5s', DMCP_SESSION_IDLE: '1h', DMCP_TURN_IDLE: '500' },
    check: (s) => assert.deepEqual([s.startTimeoutMs, s.sessionIdleMs, s.turnIdleMs], [2500, 3_600_000, 500]),
  },
  { env: { DMCP_STICKY_WAIT: '2s' }, check: (s) => assert.equal(s.stickyWaitMs, 2000) },
  {
    env: { DMCP_DEPLOYMENT_NAME: ' durable-mcp ', DMCP_BUILD_ID: 'v1.4.2' },
    check: (s) => assert.deepEqual(s.deployment, { name: 'durable-mcp', buildId: 'v1.4.2' }),
  },
  { env: { DMCP_FAST_PATH: 'false' }, check: (s) => assert.equal(s.fastPath, false) },
  { env: { DMCP_FAST_PATH: 'on' }, check: (s) => assert.equal(s.fastPath, true) },
  { env: { DMCP_EAGER_CALLS: 'false' }, check: (s) => assert.deepEqual([s.eagerCalls, s.fastPath], [false, true]) },
  {
    env: { DMCP_SHARED_CALLS: 'false' },
    check: (s) => assert.deepEqual([s.sharedCalls, s.eagerCalls, s.fastPath], [false, true, true]),
  },
  { env: { DMCP_TOOL_PREFIX: 'NONE' }, check: (s) => assert.equal(s.toolPrefix, 'none') },
  {
    env: { DMCP_LOG_LEVEL: 'DEBUG', DMCP_SDK_LOG_LEVEL: 'info' },
    check: (s) => assert.deepEqual([s.logLevel, s.sdkLogLevel], ['debug', 'INFO']),
  },
  {
    env: { DMCP_ENCRYPTION_KEYS_PREVIOUS: ' a, b ,,c' },
    check: (s) => assert.deepEqual(s.payloads.previousEncryptionKeys, ['a', 'b', 'c']),
  },
  { env: { DMCP_EXTERNAL_THRESHOLD_BYTES: '0' }, check: (s) => assert.equal(s.payloads.externalThresholdBytes, 0) },
  {
    env: { DMCP_DEV_PORT: '0', DMCP_CODEC_PORT: '9000' },
    check: (s) => assert.deepEqual([s.dev.port, s.dev.codecPort], [0, 9000]),
  },
  {
    env: { DMCP_MCP: 'off', DMCP_NO_USER_CONFIG: '1', DMCP_WORKSPACE_MCP: 'Yes' },
    check: (s) => assert.deepEqual([s.config.mcpOff, s.config.noUserConfig, s.config.workspaceMcp], [true, true, true]),
  },
  {
    env: { DMCP_MCP_ENV: 'GITHUB_TOKEN, DOCS_KEY' },
    check: (s) => assert.deepEqual(s.config.mcpEnv, ['GITHUB_TOKEN', 'DOCS_KEY']),
  },
  { env: { DMCP_MAX_TOOL_RESULT_TOKENS: '100' }, check: (s) => assert.equal(s.shape.maxTokens, 100) },
  {
    env: { DMCP_METRICS_PORT: '9464', DMCP_METRICS_HOST: '0.0.0.0' },
    check: (s) => assert.deepEqual(s.metrics, { port: 9464, host: '0.0.0.0' }),
  },
  { env: { DMCP_METRICS_PORT: '0' }, check: (s) => assert.deepEqual(s.metrics, { port: 0, host: '127.0.0.1' }) },
  { env: { DMCP_TASK_QUEUE: '   ' }, check: (s) => assert.equal(s.taskQueue, 'durable-mcp', 'blank is unset') },
  {
    env: { DMCP_OAUTH_CLIENT_METADATA_URL: ' https://example.org/dmcp/client.json ' },
    check: (s) => assert.equal(s.oauth.clientMetadataUrl, 'https://example.org/dmcp/client.json'),
  },
  { env: {}, check: (s) => assert.equal(s.oauth.clientMetadataUrl, undefined) },
  {
    env: { DMCP_SANDBOX_HIDE: '/etc/ssl/private/agent.key: /srv/other-dmcp/.data/' },
    check: (s) => assert.deepEqual(s.untrustedStdio.hide, ['/etc/ssl/private/agent.key', '/srv/other-dmcp/.data']),
  },
];
for (const [i, row] of good.entries()) {
  void test(`reads ${Object.keys(row.env).join(', ')} (#${i + 1})`, () => row.check(loadSettings(row.env)));
}

const bad: [string, string][] = [
  ['DMCP_START_TIMEOUT', 'soon'],
  ['DMCP_SESSION_IDLE', '-1m'],
  ['DMCP_STICKY_WAIT', '50ms'],
  ['DMCP_LEGACY_INPUT_TIMEOUT', '7h'],
  ['DMCP_LEGACY_INPUT_TIMEOUT', '500ms'],
  ['DMCP_STICKY_WAIT', '2m'],
  ['DMCP_BUILD_ID', 'v1.4.2'],
  ['DMCP_DEPLOYMENT_NAME', 'durable-mcp'],
  ['DMCP_FAST_PATH', 'fast'],
  ['DMCP_EAGER_CALLS', 'eager'],
  ['DMCP_TOOL_PREFIX', 'tools'],
  ['DMCP_LOG_LEVEL', 'loud'],
  ['DMCP_SDK_LOG_LEVEL', 'verbose'],
  ['DMCP_EXTERNAL_THRESHOLD_BYTES', '16k'],
  ['DMCP_DEV_PORT', '70000'],
  ['DMCP_CODEC_PORT', 'http'],
  ['DMCP_MCP', 'maybe'],
  ['DMCP_NO_USER_CONFIG', '2'],
  ['DMCP_MAX_IMAGES_PER_MESSAGE', 'many'],
  ['DMCP_METRICS_PORT', '70000'],
  ['DMCP_METRICS_PORT', 'prom'],
  ['DMCP_OAUTH_CLIENT_METADATA_URL', 'http://example.org/client.json'],
  ['DMCP_OAUTH_CLIENT_METADATA_URL', 'https://example.org/'],
  ['DMCP_OAUTH_CLIENT_METADATA_URL', 'https://example.org/c.json#x'],
  ['DMCP_OAUTH_CLIENT_METADATA_URL', 'https://u:p@example.org/c.json'],
  ['DMCP_OAUTH_CLIENT_METADATA_URL', 'client.json'],
  ['DMCP_SANDBOX_HIDE', 'secrets/agent.key'],
  ['DMCP_SANDBOX_HIDE', '/etc/agent.key:/'],
];
for (const [name, value] of bad) {
  void test(`refuses ${name}=${value}, naming the variable`, () => {
    assert.throws(
      () => loadSettings({ [name]: value }),
      (e: Error) => e instanceof SettingsError && e.message.includes(name) && e.message.includes(value),
    );
  });
}

test('every bad variable is named in one error, not only the first', () => {
  assert.throws(
    () => loadSettings({ DMCP_TOOL_PREFIX: 'x', DMCP_DEV_PORT: 'y' }),
    (e: Error) => e.message.includes('DMCP_TOOL_PREFIX') && e.message.includes('DMCP_DEV_PORT'),
  );
});

test('parseDuration and parseFlag', () => {
  assert.equal(parseDuration('250ms', 'X'), 250);
  assert.equal(parseDuration('1.5m', 'X'), 90_000);
  assert.throws(() => parseDuration('1d', 'X'), /X: expected a duration/);
  assert.equal(parseFlag(undefined, 'X'), undefined);
  assert.equal(parseFlag(' ON ', 'X'), true);
  assert.equal(parseFlag('no', 'X'), false);
  assert.throws(() => parseFlag('perhaps', 'X'), /X must be true or false/);
});
