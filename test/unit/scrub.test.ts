/**
 * Scrubbing: results are scrubbed string by string (never through their JSON text), encoded forms
 * of a secret go too, a remote server's own header and URL secrets leave no result or progress
 * detail, and text is scrubbed before it is cut (stderr lines, HTTP error bodies, junk lines).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities, scrubResult, type SessionServers } from '../../activities/index.js';
import { scrubDeep, scrubSecrets, secretScrubber } from '../../config/secrets.js';
import type { ServerEntry } from '../../config/types.js';
import type { CallOutcome } from '../../contract/index.js';
import { describeRemoteError, summarizeBody } from '../../mcp/httpTransport.js';
import { ManagedServer } from '../../mcp/managedServer.js';

const QUOTED = 'pa"ss\\word-with-quote-0123';
const JSONISH = '"}]},{"x":"';
const PLAIN = 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB';
const ENV = {
  PATH: '/usr/bin',
  DMCP_MCP_ENV: 'QUOTED_SECRET,JSONISH_SECRET',
  QUOTED_SECRET: QUOTED,
  JSONISH_SECRET: JSONISH,
  GITHUB_TOKEN: PLAIN,
};
const scrub = (t: string) => scrubSecrets(t, ENV);

void test('a secret holding a quote or a backslash is scrubbed from a result, not left in its escaped form', () => {
  const result = {
    content: [{ type: 'text', text: `value: ${QUOTED}` }],
    structuredContent: { v: QUOTED, nested: [{ [QUOTED]: 1 }] },
  };
  const clean = scrubResult(result, scrub);
  const json = JSON.stringify(clean);
  assert.ok(!json.includes(JSON.stringify(QUOTED).slice(1, -1)), json);
  assert.equal(clean.content[0]!.text, 'value: [redacted]');
  assert.deepEqual(clean.structuredContent, { v: '[redacted]', nested: [{ '[redacted]': 1 }] });
});

void test('a secret that looks like JSON syntax neither breaks scrubbing nor survives', () => {
  const result = { content: [{ type: 'text', text: `x${JSONISH}y` }], isError: false };
  const clean = scrubResult(result, scrub);
  assert.deepEqual(clean, { content: [{ type: 'text', text: 'x[redacted]y' }], isError: false });
});

void test('an unchanged result is returned as it is; keys named __proto__ stay own data', () => {
  const result = { content: [{ type: 'text', text: 'nothing secret' }] };
  assert.equal(scrubResult(result, scrub), result);
  const tricky = JSON.parse(`{"__proto__": {"a": "${PLAIN}"}, "b": 1}`) as Record<string, unknown>;
  const clean = scrubDeep(tricky, scrub);
  assert.ok(Object.hasOwn(clean, '__proto__'));
  assert.equal(JSON.stringify(clean), '{"__proto__":{"a":"[redacted]"},"b":1}');
  assert.equal(Object.getPrototypeOf(clean), Object.prototype);
});

void test('encoded forms of a secret are scrubbed: base64, base64url, URL-encoding, hex, JSON escapes, Basic auth for any user', () => {
  const secret = 'sk-live/+?&= é"\\x_0123456789';
  const env = { API_TOKEN: secret };
  const forms = {
    base64: Buffer.from(secret).toString('base64'),
    base64url: Buffer.from(secret).toString('base64url'),
    uri: encodeURIComponent(secret),
    uriLower: encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    form: encodeURIComponent(secret).replace(/%20/g, '+'),
    hex: Buffer.from(secret).toString('hex'),
    json: JSON.stringify(secret).slice(1, -1),
    basic: Buffer.from(`alice:${secret}`).toString('base64'),
    basicLongUser: Buffer.from(`a-much-longer-user@example.com:${secret}`).toString('base64'),
    embeddedBase64: Buffer.from(`{"auth":"${secret}","more":"x"}`).toString('base64'),
  };
  for (const [name, form] of Object.entries(forms)) {
    const out = scrubSecrets(`before ${form} after`, env);
    assert.ok(!out.includes(form), `${name} survived: ${out}`);
    assert.match(out, /\[redacted\]/, name);
  }
});

void test('a multi-line secret is scrubbed line by line as well (a PEM key printed by lines)', () => {
  const pem =
    '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----';
  const out = scrubSecrets('line: MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7', {
    TEMPORAL_TLS_CLIENT_KEY_DATA: pem,
  });
  assert.equal(out, 'line: [redacted]');
});

void test('a scrubber is built once per environment: values that are plain words are left alone', () => {
  const env = { SKIP_AUTH: 'true', GITHUB_TOKEN: PLAIN };
  const s = secretScrubber(env);
  assert.equal(s(`true ${PLAIN}`), 'true [redacted]');
  assert.equal(secretScrubber(env), s);
});

void test("callTool scrubs the remote server's header and URL secrets from the result and from progress details", async () => {
  const headerValue = 'x-api-key-value-000111222333';
  const queryToken = 'query-token-444555666777';
  const pool: SessionServers = {
    reconcile: () => Promise.reject(new Error('unused')),
    tools: () => [],
    endSession: () => Promise.reject(new Error('unused')),
    callTool: async (_s, _server, _tool, _args, options) => {
      options.onServerSecrets?.(() => [headerValue, queryToken]);
      options.onProgress?.({ progress: 1, message: `sent ${headerValue} to ${encodeURIComponent(queryToken)}` });
      return {
        content: [
          {
            type: 'text',
            text: `headers: ${headerValue}; url: /mcp?k=${queryToken}; b64 ${Buffer.from(headerValue).toString('base64')}`,
          },
        ],
      };
    },
  };
  const activities = createActivities({
    pool,
    workerQueue: 'q',
    loadConfig: () => Promise.reject(new Error('unused')),
    logger: pino({ level: 'silent' }),
    scrub: (t) => t,
  });
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const outcome = (await env.run(activities.callTool, {
    sessionId: 's',
    firstRunId: 'r1',
    server: 'web',
    tool: 't',
    name: 'mcp__web__t',
    arguments: {},
    requestTimeoutMs: 1000,
  } as never)) as unknown as CallOutcome;
  const texts = JSON.stringify([outcome, beats]);
  assert.ok(beats.length > 0, 'progress was heartbeated');
  for (const s of [headerValue, queryToken, Buffer.from(headerValue).toString('base64').slice(0, 20)])
    assert.ok(!texts.includes(s), `${s} in ${texts}`);
  assert.match(texts, /\[redacted\]/);
});

void test("callTool scrubs a token the server's login got during the call (a refresh mid-call)", async () => {
  const before = 'access-token-before-000111222333';
  const during = 'access-token-refreshed-444555666';
  const known = [before];
  const pool: SessionServers = {
    reconcile: () => Promise.reject(new Error('unused')),
    tools: () => [],
    endSession: () => Promise.reject(new Error('unused')),
    callTool: async (_s, _server, _tool, _args, options) => {
      options.onServerSecrets?.(() => known);
      known.push(during); // the login refreshed while the request was on its way
      options.onProgress?.({ progress: 1, message: `using ${during}` });
      return { content: [{ type: 'text', text: `you are ${during}` }] };
    },
  };
  const activities = createActivities({
    pool,
    workerQueue: 'q',
    loadConfig: () => Promise.reject(new Error('unused')),
    logger: pino({ level: 'silent' }),
    scrub: (t) => t,
  });
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const outcome = (await env.run(activities.callTool, {
    sessionId: 's',
    firstRunId: 'r1',
    server: 'web',
    tool: 't',
    name: 'mcp__web__t',
    arguments: {},
    requestTimeoutMs: 1000,
  } as never)) as unknown as CallOutcome;
  const texts = JSON.stringify([outcome, beats]);
  assert.ok(!texts.includes(during), texts);
  assert.match(JSON.stringify(outcome), /you are \[redacted\]/);
});

// --- cut after scrubbing ---

const SECRET = `stderr-secret-${'0123456789abcdef'.repeat(4)}`;
const servers: ManagedServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

function stdioServer(script: string): { server: ManagedServer; logs: string[] } {
  const logs: string[] = [];
  const entry: ServerEntry = {
    name: 'leaky',
    layer: 'inline',
    source: '--mcp #1',
    trusted: true,
    type: 'stdio',
    command: process.execPath,
    args: ['-e', script],
    env: {},
    envFrom: {},
    headers: {},
    enabled: true,
  };
  const server = new ManagedServer(entry, {
    logger: pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) }),
    environment: () => ({ PATH: process.env.PATH ?? '' }),
    scrub: (t) => scrubSecrets(t, { LEAK_TOKEN: SECRET }),
    startTimeoutMs: 10_000,
    clientVersion: 'test',
  });
  servers.push(server);
  return { server, logs };
}

void test('a secret split across two stderr writes is scrubbed whole in the log and in the start error', async () => {
  const half = SECRET.length / 2;
  const script = `process.stderr.write(${JSON.stringify(`token=${SECRET.slice(0, half)}`)});
    setTimeout(() => { process.stderr.write(${JSON.stringify(`${SECRET.slice(half)} end\n`)}); setTimeout(() => process.exit(3), 100); }, 200);`;
  const { server, logs } = stdioServer(script);
  await server.start();
  assert.equal(server.state, 'failed');
  const all = [server.error ?? '', ...logs].join('\n');
  for (const part of [SECRET.slice(0, half), SECRET.slice(half)])
    assert.ok(!all.includes(part), `a half of the secret leaked: ${all}`);
  assert.match(logs.join('\n'), /token=\[redacted\] end/);
  assert.match(server.error ?? '', /token=\[redacted\] end/);
});

void test('a secret at the cut of the stderr tail does not leave its end in the start error', async () => {
  // The tail keeps the last 4096 characters; the secret straddles that boundary.
  const line = `${SECRET}${'y'.repeat(4096 - 20)}`;
  const script = `process.stderr.write(${JSON.stringify(`${line}\n`)}, () => process.exit(3));`;
  const { server } = stdioServer(script);
  await server.start();
  assert.equal(server.state, 'failed');
  assert.ok(
    !(server.error ?? '').includes(SECRET.slice(-16)),
    `the secret's end leaked: ${server.error?.slice(0, 200)}`,
  );
});

void test('a secret at the cut of an HTTP error body is scrubbed before the body is cut', () => {
  const body = `${'e'.repeat(190)}${SECRET} rest`;
  const s = (t: string) => scrubSecrets(t, { LEAK_TOKEN: SECRET });
  const summary = summarizeBody(body, s);
  assert.ok(!summary.includes(SECRET.slice(0, 10)), summary);
  const err = Object.assign(new Error(`Error POSTing to endpoint (HTTP 500): ${body}`), { code: 500 });
  const described = describeRemoteError(err, undefined, s);
  assert.ok(!described.includes(SECRET.slice(0, 10)), described);
});

void test('scrubDeep handles errors, cycles and arrays in log meta', () => {
  const err = new Error(`failed with ${PLAIN}`);
  const meta: Record<string, unknown> = { err, list: [PLAIN, 1, null, true], n: 5n };
  meta.self = meta;
  const clean = scrubDeep(meta, scrub) as Record<string, unknown>;
  const cleanErr = clean.err as { message: string; stack?: string };
  assert.equal(cleanErr.message, 'failed with [redacted]');
  assert.ok(!(cleanErr.stack ?? '').includes(PLAIN));
  assert.deepEqual(clean.list, ['[redacted]', 1, null, true]);
  assert.equal(clean.n, 5n);
  assert.equal(clean.self, '[circular]');
});

void test('a result is scrubbed with one read of the environment, and a secret set between two results is seen', () => {
  let scans = 0;
  const values: NodeJS.ProcessEnv = { PATH: '/usr/bin', GITHUB_TOKEN: PLAIN };
  // Counts whole-environment reads, as process.env would be read.
  const env = new Proxy(values, {
    ownKeys(target) {
      scans += 1;
      return Reflect.ownKeys(target);
    },
  });
  const scrubEnv = (text: string) => scrubSecrets(text, env);
  const result = {
    content: [
      { type: 'text', text: `a ${PLAIN}` },
      { type: 'text', text: 'b' },
    ],
    structuredContent: { k: PLAIN, list: ['x', 'y', PLAIN] },
  };
  const clean = scrubResult(result, scrubEnv);
  assert.equal(scans, 1, 'one read for every string of the result');
  assert.equal(clean.content[0]!.text, 'a [redacted]');
  assert.deepEqual(clean.structuredContent, { k: '[redacted]', list: ['x', 'y', '[redacted]'] });

  values.NEW_API_KEY = 'freshly-set-secret-value';
  assert.deepEqual(
    scrubResult({ text: 'uses freshly-set-secret-value' }, scrubEnv),
    { text: 'uses [redacted]' },
    'a variable set after the last result is scrubbed from the next',
  );
  assert.equal(scrubEnv('and freshly-set-secret-value alone'), 'and [redacted] alone');
  assert.equal(scans, 3);
});
