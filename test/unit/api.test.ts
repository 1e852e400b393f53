/** The HTTP API's pure parts: tokens, references, binary links, call identity, events, error mapping, settings. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import {
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import {
  ApplicationFailure,
  RetryState,
  TerminatedFailure,
  TimeoutFailure,
  TimeoutType,
  WorkflowNotFoundError,
} from '@temporalio/common';
import { chmod, mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearerToken, findToken, hashToken, isLoopback, parseTokens, tokenAllows } from '../../api/auth.js';
import { SESSION_EVENT_DATA } from '../../api/eventSchemas.js';
import { StartTurnSchema } from '../../api/schemas.js';
import { sentToTurn } from '../../api/routing.js';
import { apiTokenFile, dataDirToken, ensureApiToken, readApiToken } from '../../api/tokenFile.js';
import { hostAllowed, originAllowed } from '../../text/localHost.js';
import { admitRefs, isUnder, type ApiBoundary } from '../../api/boundary.js';
import { binaryOf, linkBinaryContent } from '../../api/content.js';
import { ApiError, toApiError } from '../../api/errors.js';
import { newEvents } from '../../client/derivedEvents.js';
import { callFingerprint, canonicalJson } from '../../api/recorded.js';
import { createApi } from '../../api/app.js';
import { SecretInInputError, type TurnClient } from '../../client/turnClient.js';
import type { Transcript } from '../../client/transcript.js';
import {
  MAX_BATCH_CALLS,
  MAX_BATCH_GROUP_CALLS,
  MAX_SERVER_NAME_LENGTH,
  RefusalType,
  SERVER_NAME_PATTERN,
  TURN_LIMIT_RANGES,
  serverNameProblem,
  type ContentBlock,
} from '../../contract/index.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { SettingsError, loadSettings } from '../../settings/index.js';
import { smallImage } from './fixtures-images.js';

const HASH = hashToken('s3cret-token');

test('token entries: hashes with session prefixes; a plaintext token or a bad entry names where it is', () => {
  const tokens = parseTokens(
    `# ops\n${HASH} team-a-,team-b-\n\n${hashToken('other')} *  # every session\n`,
    '/etc/dmcp/tokens',
  );
  assert.equal(tokens.length, 2);
  assert.deepEqual(tokens[0]!.prefixes, ['team-a-', 'team-b-']);
  assert.deepEqual(tokens[1]!.prefixes, ['']);
  assert.equal(parseTokens(`${HASH} a-; ${hashToken('x')} b-`, 'DMCP_API_TOKENS').length, 2);
  const bad: [string, RegExp][] = [
    ['s3cret-token team-a-', /DMCP_API_TOKENS entry 1: entries hold the SHA-256 of a token, not the token/],
    [`${HASH}`, /entry 1: expected "sha256:<64 hex digits>/],
    [`sha256:abcd team-a-`, /entry 1: expected/],
    [`${HASH} team-a-; nonsense`, /entry 2/],
  ];
  for (const [text, message] of bad) {
    assert.throws(
      () => parseTokens(text, 'DMCP_API_TOKENS'),
      (err: Error) =>
        err instanceof SettingsError && message.test(err.message) && !err.message.includes('s3cret-token'),
      text,
    );
  }
  assert.throws(() => parseTokens(`${HASH} a\nplain-token b`, 'tokens.txt'), /tokens\.txt line 2/);
});

test('a presented token is found by its hash and reaches only its prefixes', () => {
  const tokens = parseTokens(`${hashToken('other')} *;${HASH} team-a-`, 'DMCP_API_TOKENS');
  const found = findToken(tokens, 's3cret-token');
  assert.ok(found);
  assert.equal(tokenAllows(found, 'team-a-7'), true);
  assert.equal(tokenAllows(found, 'team-b-7'), false);
  assert.equal(findToken(tokens, 's3cret-token '), undefined);
  assert.equal(tokenAllows(findToken(tokens, 'other')!, 'anything'), true);
  const headers: [string | undefined, string | undefined][] = [
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['Bearer  abc ', 'abc'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    [undefined, undefined],
  ];
  for (const [header, token] of headers) assert.equal(bearerToken(header), token, String(header));
  const peers: [string | undefined, boolean][] = [
    ['127.0.0.1', true],
    ['127.8.0.3', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['10.0.0.5', false],
    ['::ffff:10.0.0.5', false],
    ['fe80::1', false],
    [undefined, false],
  ];
  for (const [peer, loopback] of peers) assert.equal(isLoopback(peer), loopback, String(peer));
});

test('turn references: the API signs only what its settings allow, and names the refused field', async () => {
  const real = async (p: string) => (p === '/srv/allowed/link.json' ? '/etc/evil.json' : p);
  const b: ApiBoundary = { allowInline: false, allowedConfigDirs: ['/srv/allowed'], workspaceRoots: ['/srv/ws'] };
  const rows: [
    Partial<ApiBoundary>,
    Partial<{ workspace: string; mcpConfigFiles: string[]; inlineSpecs: string[]; plugins: string[] }>,
    unknown,
  ][] = [
    [{}, { workspace: '/elsewhere' }, { sign: false }],
    [{}, { workspace: '/srv/ws/a' }, { sign: true }],
    [{}, { workspace: '/srv/ws', inlineSpecs: ['x:cmd'] }, 'servers.inlineSpecs[0]'],
    [{ allowInline: true }, { workspace: '/srv/ws', inlineSpecs: ['x:cmd'] }, { sign: true }],
    [{ allowInline: true }, { workspace: '/srv/wsx', inlineSpecs: ['x:cmd'] }, 'workspace'],
    [{}, { workspace: '/srv/ws', mcpConfigFiles: ['/srv/allowed/mcp.json'] }, { sign: true }],
    [{}, { workspace: '/srv/ws', mcpConfigFiles: ['/srv/allowed/../other/mcp.json'] }, 'servers.mcpConfigFiles[0]'],
    [{}, { workspace: '/srv/ws', mcpConfigFiles: ['/srv/allowed/link.json'] }, 'servers.mcpConfigFiles[0]'],
    [{}, { workspace: '/srv/ws', plugins: ['/srv/allowed/p', '/tmp/p'] }, 'servers.plugins[1]'],
    [{ allowedConfigDirs: [] }, { workspace: '/srv/ws', plugins: ['/srv/allowed/p'] }, 'servers.plugins[0]'],
  ];
  for (const [override, refs, expected] of rows) {
    const decision = await admitRefs(
      { ...b, ...override },
      { workspace: '/', mcpConfigFiles: [], inlineSpecs: [], plugins: [], ...refs },
      real,
    );
    if (typeof expected === 'string') {
      assert.ok('refused' in decision, JSON.stringify(refs));
      assert.equal(decision.refused.field, expected);
    } else assert.deepEqual(decision, expected, JSON.stringify(refs));
  }
  assert.equal(isUnder('/a/b', ['/a']), true);
  assert.equal(isUnder('/ab', ['/a']), false);
  assert.equal(isUnder('/a', []), false);
});

test('binary content becomes links; the bytes are served as what they are, never as declared HTML', async () => {
  const PNG = await smallImage('png');
  const png = PNG.toString('base64');
  const blocks = [
    { type: 'text', text: 'hi' },
    { type: 'image', mimeType: 'image/png', data: png },
    {
      type: 'resource',
      resource: { uri: 'file:///x', mimeType: 'text/html', blob: Buffer.from('<script>').toString('base64') },
    },
    { type: 'audio', mimeType: 'audio/wav', data: Buffer.from('RIFF').toString('base64') },
  ] as ContentBlock[];
  const linked = linkBinaryContent(blocks, '/c');
  assert.deepEqual(linked[0], blocks[0]);
  assert.deepEqual(linked[1], { type: 'image', mimeType: 'image/png', href: '/c/1', bytes: PNG.length });
  assert.deepEqual(linked[2], {
    type: 'resource',
    resource: { uri: 'file:///x', mimeType: 'text/html', href: '/c/2', bytes: 8 },
  });
  assert.equal(binaryOf(blocks[1])?.contentType, 'image/png');
  assert.equal(
    binaryOf({ type: 'image', mimeType: 'image/png', data: Buffer.from('<html>').toString('base64') } as ContentBlock)
      ?.contentType,
    'application/octet-stream',
  );
  assert.equal(binaryOf(blocks[2])?.contentType, 'application/octet-stream');
  assert.equal(binaryOf(blocks[3])?.contentType, 'audio/wav');
  assert.equal(
    binaryOf({ type: 'audio', mimeType: 'text/html', data: 'AA==' } as ContentBlock)?.contentType,
    'application/octet-stream',
  );
  assert.equal(binaryOf(blocks[0]), undefined);
  assert.equal(binaryOf(undefined), undefined);
});

test('a call is the same call when its name and arguments match, whatever the key order', () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: 2 } }),
    '{"a":{"c":2,"d":[1,{"y":2,"z":1}]},"b":1}',
  );
  const r = callFingerprint({ name: 't', arguments: { a: 1, b: 2 } });
  assert.equal(callFingerprint({ name: 't', arguments: { b: 2, a: 1 } }), r);
  assert.notEqual(callFingerprint({ name: 't', arguments: { a: 1 } }), r);
  assert.notEqual(callFingerprint({ name: 'u', arguments: { a: 1, b: 2 } }), r);
  assert.notEqual(callFingerprint({ name: 't', arguments: { a: '1', b: 2 } }), r);
  assert.equal(callFingerprint({ name: 't' }), callFingerprint({ name: 't', arguments: {} }));
});

test("events: a model turn's steps come once each, before the calls made after them, and the end carries the answer", () => {
  const outcome = { status: 'ok' as const, content: [], isError: false, startedAt: '', durationMs: 3, attempts: 1 };
  const seen = {
    status: false,
    started: new Set<string>(),
    asked: new Set<string>(),
    finished: new Set<string>(),
    ended: false,
  };
  const step = (n: number, callsBefore: number, text?: string) => ({
    step: n,
    model: 'local',
    callsBefore,
    attempts: 1,
    failures: [],
    ...(text !== undefined ? { text, toolCalls: n === 1 ? [{ id: 'c1', name: 'n' }] : [] } : {}),
  });
  const running: Transcript = {
    turnId: 's/turn-1',
    sessionId: 's',
    tools: [],
    calls: [{ id: 'c1', name: 'n', arguments: {}, failures: [] }],
    modelSteps: [step(1, 0, 'let me look'), step(2, 1)],
    state: 'running',
  };
  assert.deepEqual(
    newEvents(running, seen).map((e) => e.key),
    ['s/turn-1|model|1', 's/turn-1|c1|started'],
    'a step not answered yet is not sent',
  );
  const done: Transcript = {
    ...running,
    calls: [{ ...running.calls[0]!, outcome }],
    modelSteps: [step(1, 0, 'let me look'), step(2, 1, 'found it')],
    state: 'completed',
    endedBy: 'answer',
    answer: 'found it',
  };
  const later = newEvents(done, seen);
  assert.deepEqual(
    later.map((e) => e.key),
    ['s/turn-1|c1|finished', 's/turn-1|model|2', 's/turn-1|ended'],
  );
  assert.equal(later[2]!.data.answer, 'found it');
  assert.deepEqual(newEvents(done, seen), []);
});

test('events: status once, each call started and finished once, then the end', () => {
  const status = { mcp: 'on' as const, servers: [], warnings: [], reportedAt: '2026-01-01T00:00:00.000Z' };
  const outcome = { status: 'ok' as const, content: [], isError: false, startedAt: '', durationMs: 3, attempts: 1 };
  const seen = {
    status: false,
    started: new Set<string>(),
    asked: new Set<string>(),
    finished: new Set<string>(),
    ended: false,
  };
  const t: Transcript = {
    turnId: 's/turn-1',
    sessionId: 's',
    status,
    tools: [],
    calls: [{ id: 'c1', name: 'n', arguments: {}, failures: [] }],
    state: 'running',
  };
  assert.deepEqual(
    newEvents(t, seen).map((e) => e.key),
    ['s/turn-1|status', 's/turn-1|c1|started'],
  );
  assert.deepEqual(newEvents(t, seen), []);
  const done: Transcript = { ...t, calls: [{ ...t.calls[0]!, outcome }], state: 'completed', endedBy: 'endTurn' };
  const later = newEvents(done, seen);
  assert.deepEqual(
    later.map((e) => e.event),
    ['call.finished', 'turn.ended'],
  );
  assert.deepEqual(later[0]!.data, {
    sessionId: 's',
    turnId: 's/turn-1',
    id: 'c1',
    name: 'n',
    status: 'ok',
    isError: false,
    durationMs: 3,
    attempts: 1,
  });
  const asking: Transcript = {
    ...t,
    calls: [{ ...t.calls[0]!, inputs: [{ key: 'name', round: 1, kind: 'form', message: 'Name?' }] }],
  };
  const asked = newEvents(asking, seen);
  assert.deepEqual(
    asked.map((e) => [e.key, e.event]),
    [['s/turn-1|c1:1:name|input_required', 'call.input_required']],
  );
  assert.deepEqual(asked[0]!.data, {
    sessionId: 's',
    turnId: 's/turn-1',
    id: 'c1',
    name: 'n',
    requestId: 'c1:1:name',
    key: 'name',
    round: 1,
    kind: 'form',
    message: 'Name?',
  });
  assert.deepEqual(newEvents(asking, seen), [], 'a question is sent once');
  assert.equal(
    newEvents(
      { ...done, state: 'continued' },
      { status: true, started: new Set(['c1']), asked: new Set(), finished: new Set(['c1']), ended: false },
    ).length,
    0,
    'a continued run is not the end',
  );
});

/** A refusal as Temporal delivers it: the workflow's typed `ApplicationFailure` as the cause. */
const refused = (type: string, message: string, details?: unknown[]) =>
  ApplicationFailure.create({ type, message, nonRetryable: true, ...(details ? { details } : {}) });

test('errors map to stable codes by their class and failure type; unknown errors say nothing about themselves', () => {
  const grpc = (code: number) => Object.assign(new Error('grpc said so'), { code, details: 'x', metadata: {} });
  const failed = (cause: Error) =>
    new WorkflowFailedError('Workflow execution failed', cause, RetryState.NON_RETRYABLE_FAILURE);
  const rows: [unknown, string, number, string?][] = [
    [new SecretInInputError('arguments contain the value of API_KEY'), 'secret_in_input', 422],
    [
      new WorkflowUpdateFailedError('Workflow Update failed', refused(RefusalType.turnEnded, 'the turn has ended')),
      'turn_ended',
      409,
    ],
    [
      new WorkflowUpdateFailedError(
        'Workflow Update failed',
        refused(RefusalType.callRequest, 'call x: arguments nest deeper than 64 levels'),
      ),
      'call_refused',
      422,
    ],
    [
      new WorkflowUpdateFailedError('Workflow Update failed', refused(RefusalType.callRequest, 'the turn has ended')),
      'call_refused',
      422,
      'the type decides, not the text',
    ],
    [
      new WorkflowNotFoundError('workflow execution already completed', 'a/turn-1', undefined),
      'not_found',
      404,
      'the routes that send to a turn look it up (sentToTurn)',
    ],
    [new Error('workflow execution already completed'), 'internal', 500, 'text alone says nothing'],
    [new Error('boom /secret/path'), 'internal', 500],
    [new ServiceError('rpc failed', { cause: grpc(8) }), 'rate_limited', 429],
    [grpc(14), 'unavailable', 503],
    [new WorkflowExecutionAlreadyStartedError('already started', 's/turn-1', 'agentTurn'), 'turn_exists', 409],
    [failed(refused(RefusalType.turnInput, 'batch refused: too many')), 'call_refused', 422],
    [failed(new TerminatedFailure('Workflow execution terminated')), 'turn_ended', 409],
    [
      new WorkflowFailedError(
        'Workflow execution timed out',
        new TimeoutFailure('Workflow execution timed out', undefined, TimeoutType.START_TO_CLOSE),
        RetryState.TIMEOUT,
      ),
      'turn_ended',
      409,
    ],
    [failed(refused('SomeBug', 'a workflow bug')), 'internal', 500],
    [grpc(5), 'not_found', 404],
  ];
  for (const [err, code, status, why] of rows) {
    const e = toApiError(err);
    assert.equal(e.code, code, `${String(err)}${why ? ` (${why})` : ''}`);
    assert.equal(e.status, status);
  }
  assert.equal(toApiError(new Error('boom /secret/path')).message, 'internal error');
  assert.ok(toApiError(new ApiError('forbidden', 'no')) instanceof ApiError);
  assert.equal(toApiError(grpc(8)).retryAfter, 1, 'a 429 says when to come back');
  // A refused turn input names its field when the refusal carries one (RefusalDetail), else the batch.
  assert.equal(toApiError(failed(refused(RefusalType.turnInput, 'batch refused: too many'))).field, 'body.calls');
  assert.equal(
    toApiError(failed(refused(RefusalType.turnInput, 'limits refused: idleMs', [{ field: 'limits.idleMs' }]))).field,
    'body.limits.idleMs',
  );
});

test("an Update Temporal cannot deliver: turn_ended when the turn has closed, else Temporal's error", async () => {
  const turnsWith = (describe: () => Promise<unknown>) =>
    ({ client: { workflow: { getHandle: () => ({ describe }) } } }) as unknown as TurnClient;
  const gone = () =>
    Promise.reject(new WorkflowNotFoundError('workflow execution already completed', 's/turn-1', undefined));
  const closed = turnsWith(async () => ({ status: { name: 'COMPLETED' } }));
  await assert.rejects(
    sentToTurn(closed, 's/turn-1', gone()),
    (e: unknown) => e instanceof ApiError && e.code === 'turn_ended',
  );
  const missing = turnsWith(() => Promise.reject(new WorkflowNotFoundError('not found', 's/turn-9', undefined)));
  await assert.rejects(sentToTurn(missing, 's/turn-9', gone()), (e: unknown) => toApiError(e).code === 'not_found');
  const other = new Error('boom');
  await assert.rejects(sentToTurn(closed, 's/turn-1', Promise.reject(other)), (e: unknown) => e === other);
  assert.equal(await sentToTurn(closed, 's/turn-1', Promise.resolve(7)), 7);
});

test('the API accepts what the workflow accepts: limits, batch sizes, server names', () => {
  const start = (body: unknown) => StartTurnSchema.safeParse(body).success;
  for (const [field, { min, max }] of Object.entries(TURN_LIMIT_RANGES)) {
    assert.equal(start({ limits: { [field]: min } }), true, `${field} ${min}`);
    assert.equal(start({ limits: { [field]: max } }), true, `${field} ${max}`);
    assert.equal(start({ limits: { [field]: min - 1 } }), false, `${field} ${min - 1}`);
    assert.equal(start({ limits: { [field]: max + 1 } }), false, `${field} ${max + 1}`);
  }
  const call = (i: number) => ({ id: `c${i}`, name: 'mcp__s__t' });
  assert.equal(start({ calls: [Array.from({ length: MAX_BATCH_GROUP_CALLS }, (_, i) => call(i))] }), true);
  assert.equal(start({ calls: [Array.from({ length: MAX_BATCH_GROUP_CALLS + 1 }, (_, i) => call(i))] }), false);
  assert.equal(
    start({ calls: Array.from({ length: MAX_BATCH_CALLS }, (_, i) => [call(i)]) }),
    true,
    'as many groups as the turn takes calls',
  );
  for (const name of [
    'docs',
    'a',
    'a1-b_c',
    'x'.repeat(32),
    'a-',
    'a__b',
    '_a',
    '1a',
    'a.b',
    'x'.repeat(33),
    '',
    'a-_b',
    'Ab9-Z',
  ]) {
    assert.equal(
      SERVER_NAME_PATTERN.test(name) && name.length <= MAX_SERVER_NAME_LENGTH,
      serverNameProblem(name) === undefined,
      name,
    );
  }
});

const TOKEN = 's3cret-token';
const appWith = (
  tokens = parseTokens(`${HASH} s`, 'DMCP_API_TOKENS'),
  extra: Partial<Parameters<typeof createApi>[0]> = {},
) =>
  createApi({
    turns: {} as TurnClient,
    logger: pino({ level: 'silent' }),
    tokens,
    boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
    maxBodyBytes: 4096,
    callWaitMs: 1000,
    shapeLimits: DEFAULT_SHAPE_LIMITS,
    ...extra,
  });
type ErrorJson = { error: { code: string; message: string; requestId: string } };

test('no token, no route: loopback included, and an API without tokens serves no one; the refusal comes before Temporal is touched', async () => {
  const at = (app: ReturnType<typeof createApi>, path: string, init: RequestInit = {}) =>
    app.request(`http://127.0.0.1:8235${path}`, init, { incoming: { socket: { remoteAddress: '127.0.0.1' } } });
  for (const app of [appWith(), appWith([])]) {
    for (const [method, path] of [
      ['GET', '/api/v1/sessions/s1/turns'],
      ['GET', '/api/v1/shelf'],
      ['PUT', '/api/v1/shelf/servers/docs/agents/bot'],
      ['DELETE', '/api/v1/shelf/servers/docs'],
      ['GET', '/api/v1/agents/bot/servers'],
    ] as const) {
      const res = await at(app, path, { method });
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
      const body = (await res.json()) as ErrorJson;
      assert.equal(body.error.code, 'unauthorized');
      assert.equal(res.headers.get('x-request-id'), body.error.requestId);
    }
    assert.equal((await at(app, '/healthz')).status, 200, 'health needs no token');
    assert.equal((await at(app, '/api/v1/openapi.json')).status, 200, 'nor does the document');
  }
  assert.match(
    ((await (await at(appWith([]), '/api/v1/shelf')).json()) as ErrorJson).error.message,
    /has no tokens configured, so it serves no one/,
  );
  const withToken = await at(appWith(), '/api/v1/sessions/t1/turns', { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(withToken.status, 403, 'past the token, its prefixes decide');
});

test('Host and Origin: loopback names and pages only, unless allowed; a network listener takes any Host but still no cross-site Origin', async () => {
  const auth = { authorization: `Bearer ${TOKEN}` };
  const status = async (
    app: ReturnType<typeof createApi>,
    host: string,
    headers: Record<string, string> = {},
    method = 'GET',
  ) =>
    (await app.request(`http://${host}/api/v1/sessions/t1/turns`, { method, headers: { host, ...auth, ...headers } }))
      .status;
  const local = appWith();
  for (const host of ['127.0.0.1:8235', 'localhost:8235', 'LOCALHOST', '[::1]:8235', '127.0.0.2'])
    assert.equal(await status(local, host), 403, `${host}: past the Host check, the prefix refuses`);
  const refusedHost = await local.request('http://evil.example/api/v1/sessions/s1/turns', {
    headers: { host: 'evil.example', ...auth },
  });
  assert.equal(refusedHost.status, 403);
  assert.match(
    ((await refusedHost.json()) as ErrorJson).error.message,
    /Host "evil\.example" is not a name of this API.*DMCP_API_ALLOWED_HOSTS/,
  );
  for (const host of ['evil.example:8235', '127.0.0.1.evil.example', 'localhost.evil.example:8235']) {
    const res = await local.request(`http://${host}/api/v1/sessions/s1/turns`, { headers: { host, ...auth } });
    assert.equal(res.status, 403, host);
  }
  assert.equal(
    (await local.request('http://evil.example/healthz', { headers: { host: 'evil.example' } })).status,
    403,
    'health too: a rebound page learns nothing',
  );
  const allowed = appWith(undefined, {
    requestOrigins: { allowedHosts: ['api.internal'], allowedOrigins: ['https://console.example'] },
  });
  assert.equal(await status(allowed, 'api.internal:8235'), 403, 'an allowed name is served (then the prefix refuses)');
  assert.equal(
    (
      await allowed.request('http://evil.example/api/v1/sessions/s1/turns', {
        headers: { host: 'evil.example', ...auth },
      })
    ).status,
    403,
  );
  const network = appWith(undefined, { requestOrigins: { anyHost: true } });
  const s1 = (app: ReturnType<typeof createApi>, host: string, headers: Record<string, string>) =>
    app.request(`http://${host}/api/v1/sessions/s1/turns`, { headers: { host, ...headers } });
  assert.equal(
    (await s1(network, 'api.example.com', {})).status,
    401,
    'listening on a network: any name, then the token',
  );

  for (const origin of [
    'http://evil.example',
    'null',
    'http://127.0.0.1.evil.example',
    'https://localhost.evil.example',
  ]) {
    const res = await s1(local, '127.0.0.1:8235', { origin, ...auth });
    assert.equal(res.status, 403, origin);
    assert.match(((await res.json()) as ErrorJson).error.message, /Origin .* may not call this API/);
  }
  const page = await s1(local, '127.0.0.1:8235', { origin: 'http://localhost:3000' });
  assert.equal(page.status, 401, 'a loopback page is served (here: then the token is unknown)');
  assert.equal(page.headers.get('access-control-allow-origin'), 'http://localhost:3000');
  assert.equal(
    (await s1(network, 'api.example.com', { origin: 'https://api.example.com' })).status,
    401,
    "the API's own page is served",
  );
  assert.equal((await s1(network, 'api.example.com', { origin: 'https://evil.example' })).status, 403);
  assert.equal(
    (await s1(allowed, '127.0.0.1', { origin: 'https://console.example' })).status,
    401,
    'an allowed origin is served',
  );
  const preflight = await local.request('http://127.0.0.1/api/v1/shelf', {
    method: 'OPTIONS',
    headers: { host: '127.0.0.1', origin: 'http://localhost:3000', 'access-control-request-method': 'PUT' },
  });
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Authorization/);
  const refusedPreflight = await local.request('http://127.0.0.1/api/v1/shelf', {
    method: 'OPTIONS',
    headers: { host: '127.0.0.1', origin: 'http://evil.example', 'access-control-request-method': 'PUT' },
  });
  assert.equal(refusedPreflight.status, 403);
  assert.equal(refusedPreflight.headers.get('access-control-allow-origin'), null);
});

test('a state-changing request with a form or text type is refused before anything runs, even with the token; no type at all is fine', async () => {
  const app = appWith(parseTokens(`${HASH} * shelf`, 'DMCP_API_TOKENS'));
  const send = (method: string, path: string, headers: Record<string, string>, body?: string) =>
    app.request(`http://127.0.0.1${path}`, {
      method,
      headers: { host: '127.0.0.1', ...headers },
      ...(body !== undefined ? { body } : {}),
    });
  for (const type of [
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'text/plain;charset=UTF-8',
  ]) {
    for (const [method, path] of [
      ['POST', '/api/v1/sessions/s1/turns/turn-1/end'],
      ['POST', '/api/v1/sessions/s1/turns/turn-1/calls/c1/cancel'],
      ['PUT', '/api/v1/shelf/servers/docs/agents/bot'],
      ['DELETE', '/api/v1/shelf/servers/docs'],
    ]) {
      const anonymous = await send(method!, path!, { 'content-type': type }, 'a=b');
      assert.equal(anonymous.status, 401, `${method} ${path} as ${type}, no token`);
      const res = await send(method!, path!, { 'content-type': type, authorization: `Bearer ${TOKEN}` }, 'a=b');
      assert.equal(res.status, 415, `${method} ${path} as ${type}`);
      assert.equal(((await res.json()) as ErrorJson).error.code, 'unsupported_media_type');
    }
  }
  const noBody = await send('POST', '/api/v1/sessions/s1/turns', { authorization: `Bearer ${TOKEN}` });
  assert.equal(noBody.status, 415, 'a route whose body is required refuses a request without one');
  const unsupported = await send('PATCH', '/api/v1/shelf', { authorization: `Bearer ${TOKEN}` });
  assert.equal(unsupported.status, 405);
  assert.equal(unsupported.headers.get('allow'), 'GET');
});

test('the document says what each route needs: no token for health, any token for sessions and agents, the shelf scope for the shelf; events and links as they are', async () => {
  for (const [tokenSource, words] of [
    ['configured', /DMCP_API_TOKENS/],
    ['dataDir', /api\.token of the API's data dir/],
  ] as const) {
    const doc = (await (
      await appWith(undefined, { tokenSource }).request('http://127.0.0.1/api/v1/openapi.json')
    ).json()) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.match(doc.components.securitySchemes.bearer.description, words);
    assert.deepEqual(doc.security, [{ bearer: [] }]);
    assert.deepEqual(doc.paths['/healthz'].get.security, []);
    assert.deepEqual(doc.paths['/readyz'].get.security, []);
    for (const [path, method] of [
      ['/api/v1/shelf', 'get'],
      ['/api/v1/shelf/servers/{name}', 'put'],
      ['/api/v1/shelf/servers/{name}', 'delete'],
      ['/api/v1/shelf/servers/{name}/agents/{agent}', 'put'],
      ['/api/v1/shelf/servers/{name}/agents/{agent}', 'delete'],
    ]) {
      assert.deepEqual(doc.paths[path!][method!].security, [{ bearer: ['shelf'] }], `${method} ${path}`);
    }
    assert.deepEqual(doc.paths['/api/v1/agents/{agent}/servers'].get.security, [{ bearer: [] }]);
    assert.equal(
      doc.paths['/api/v1/sessions/{sessionId}/turns'].post.security,
      undefined,
      'sessions: the document-wide bearer',
    );
    const stream =
      doc.paths['/api/v1/sessions/{sessionId}/events'].get.responses['200'].content['text/event-stream'].schema;
    assert.deepEqual(
      stream.oneOf.map((e: { properties: { event: { const: string } } }) => e.properties.event.const),
      [
        'mcp.status',
        'call.started',
        'call.input_required',
        'call.progress',
        'call.finished',
        'model.step',
        'model.text',
        'model.reset',
        'call.approval_required',
        'turn.ended',
        'error',
      ],
    );
    for (const e of stream.oneOf)
      assert.ok(
        doc.components.schemas[e.properties.data.contentSchema.$ref.split('/').pop()],
        'each event data schema is a component',
      );
    const url = doc.components.schemas.ShelfEntry.oneOf[0].properties.url;
    assert.match(url.pattern, /^\^\[Hh\]\[Tt\]\[Tt\]\[Pp\]\[Ss\]\?:/, 'a shelf URL is http(s), as the workers take it');
    assert.equal(url.format, undefined, 'not `uri`: it may hold ${VAR} references, which RFC 3986 has no room for');
    assert.equal(doc.components.schemas.TurnStarted.properties.links.properties.end.format, 'uri-reference');
  }
});

test('the events as sent match the schemas the document gives them', () => {
  const t: Transcript = {
    turnId: 's/turn-1',
    sessionId: 's',
    tools: [],
    state: 'completed',
    endedBy: 'endTurn',
    serversParagraph: 'p',
    status: { mcp: 'on', servers: [], warnings: [], reportedAt: '2026-01-01T00:00:00Z' },
    calls: [
      {
        id: 'c1',
        name: 'mcp__x__y',
        arguments: {},
        failures: [],
        outcome: {
          status: 'error',
          content: [],
          isError: true,
          errorKind: 'timeout',
          startedAt: 'x',
          durationMs: 3,
          attempts: 1,
        },
      },
    ],
  } as unknown as Transcript;
  const schemas = new Map(SESSION_EVENT_DATA.map(([event, , schema]) => [event, schema]));
  t.calls[0]!.inputs = [
    {
      key: 'name',
      round: 1,
      kind: 'form',
      message: 'Name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
      action: 'accept',
    },
    { key: 'page', round: 2, kind: 'url', message: 'Sign in', url: 'https://example.test/in', elicitationId: 'e1' },
  ];
  t.calls[0]!.task = {
    taskId: 'tk',
    status: 'completed',
    polls: 3,
    changes: [
      { poll: 0, status: 'working' },
      { poll: 2, status: 'working', statusMessage: 'step 2/3' },
      { poll: 3, status: 'completed' },
    ],
  };
  const seen = {
    status: false,
    started: new Set<string>(),
    asked: new Set<string>(),
    finished: new Set<string>(),
    ended: false,
  };
  const events = newEvents(t, seen);
  assert.deepEqual(
    events.map((e) => e.event),
    [
      'mcp.status',
      'call.started',
      'call.input_required',
      'call.input_required',
      'call.progress',
      'call.progress',
      'call.progress',
      'call.finished',
      'turn.ended',
    ],
  );
  assert.deepEqual(
    events.filter((e) => e.event === 'call.progress').map((e) => [e.key, e.data.status, e.data.statusMessage]),
    [
      ['s/turn-1|c1|task|0', 'working', undefined],
      ['s/turn-1|c1|task|2', 'working', 'step 2/3'],
      ['s/turn-1|c1|task|3', 'completed', undefined],
    ],
  );
  assert.deepEqual(newEvents(t, seen), [], 'each change is sent once');
  for (const e of events)
    assert.equal(schemas.get(e.event)!.safeParse(JSON.parse(JSON.stringify(e.data))).success, true, e.event);
});

test('the token file: created 0600 by linking into place, one token for processes starting at once, refused when open to others', async () => {
  const dir = join(await mkdtemp(join(tmpdir(), 'dmcp-api-token-')), 'data');
  const [a, b] = await Promise.all([ensureApiToken(dir), ensureApiToken(dir)]);
  assert.equal(a, b);
  assert.match(a, /^[A-Za-z0-9_-]{43}$/);
  assert.equal((await stat(apiTokenFile(dir))).mode & 0o777, 0o600);
  assert.equal((await stat(dir)).mode & 0o777, 0o700);
  assert.deepEqual((await readdir(dir)).sort(), ['api.token'], 'no temporary file is left');
  assert.equal(await ensureApiToken(dir), a, 'the next start reads the same token');
  const token = dataDirToken(a);
  assert.deepEqual([token.prefixes, token.shelf, token.source], [[''], true, 'api.token']);
  assert.ok(findToken([token], a));
  await chmod(apiTokenFile(dir), 0o644);
  await assert.rejects(ensureApiToken(dir), /open to other users \(mode 644\).*chmod 600/);
  await chmod(apiTokenFile(dir), 0o600);
  await writeFile(apiTokenFile(dir), 'short\n', { mode: 0o600 });
  await assert.rejects(readApiToken(apiTokenFile(dir)), /does not hold a token/);
});

test('Host and Origin checks, shared with the codec server', () => {
  const hosts: [string | undefined, string[], boolean][] = [
    ['127.0.0.1:8235', [], true],
    ['localhost', [], true],
    ['[::1]:1', [], true],
    ['127.9.9.9', [], true],
    [undefined, [], false],
    ['', [], false],
    ['evil.example', [], false],
    ['127.0.0.1.evil.example', [], false],
    ['api.internal:8235', ['api.internal'], true],
    ['api.internal:8235', ['api.internal:9000'], false],
    ['API.internal', ['api.internal'], true],
  ];
  for (const [host, allowed, ok] of hosts) assert.equal(hostAllowed(host, allowed), ok, String(host));
  const origins: [string, string[], boolean][] = [
    ['http://127.0.0.1:8233', [], true],
    ['http://localhost', [], true],
    ['https://[::1]:3000', [], true],
    ['null', [], false],
    ['http://localhost.evil.example', [], false],
    ['https://console.example', ['https://console.example'], true],
    ['https://console.example:444', ['https://console.example'], false],
  ];
  for (const [origin, allowed, ok] of origins) assert.equal(originAllowed(origin, allowed), ok, origin);
});

test('settings: the api block, its defaults and its errors', () => {
  assert.deepEqual(loadSettings({}).api, {
    host: '127.0.0.1',
    port: 8235,
    maxBodyBytes: 2 * 1024 * 1024,
    callWaitMs: 30_000,
  });
  const s = loadSettings({
    DMCP_API_HOST: '0.0.0.0',
    DMCP_API_PORT: '0',
    DMCP_API_TOKENS: `${HASH} a-`,
    DMCP_API_TOKENS_FILE: '/etc/dmcp/tokens',
    DMCP_API_MAX_BODY: '4096',
    DMCP_API_CALL_WAIT: '5s',
  });
  assert.deepEqual(s.api, {
    host: '0.0.0.0',
    port: 0,
    tokens: `${HASH} a-`,
    tokensFile: '/etc/dmcp/tokens',
    maxBodyBytes: 4096,
    callWaitMs: 5000,
  });
  assert.throws(() => loadSettings({ DMCP_API_PORT: 'http' }), /DMCP_API_PORT must be a port number/);
  assert.throws(
    () => loadSettings({ DMCP_API_MAX_BODY: '10' }),
    /DMCP_API_MAX_BODY must be a whole number of bytes, at least 1024/,
  );
  assert.throws(() => loadSettings({ DMCP_API_CALL_WAIT: 'later' }), /DMCP_API_CALL_WAIT/);
  const named = loadSettings({
    DMCP_API_ALLOWED_HOSTS: 'api.internal, api.internal:8235 [::1]',
    DMCP_API_ALLOWED_ORIGINS: 'https://console.example,http://localhost:3000',
  }).api;
  assert.deepEqual(
    [named.allowedHosts, named.allowedOrigins],
    [
      ['api.internal', 'api.internal:8235', '[::1]'],
      ['https://console.example', 'http://localhost:3000'],
    ],
  );
  assert.throws(
    () => loadSettings({ DMCP_API_ALLOWED_HOSTS: 'https://api.internal' }),
    /DMCP_API_ALLOWED_HOSTS must list host names/,
  );
  assert.throws(
    () => loadSettings({ DMCP_API_ALLOWED_ORIGINS: 'https://console.example/app' }),
    /DMCP_API_ALLOWED_ORIGINS must list web origins/,
  );
});
