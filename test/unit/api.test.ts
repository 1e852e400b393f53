/** The HTTP API's pure parts: tokens, references, binary links, call identity, events, error mapping, settings. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { ServiceError, WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { bearerToken, findToken, hashToken, isLoopback, parseTokens, tokenAllows } from '../../api/auth.js';
import { admitRefs, isUnder, type ApiBoundary } from '../../api/boundary.js';
import { binaryOf, linkBinaryContent } from '../../api/content.js';
import { ApiError, toApiError } from '../../api/errors.js';
import { newEvents } from '../../api/events.js';
import { callFingerprint, canonicalJson } from '../../api/recorded.js';
import { createApi } from '../../api/app.js';
import { SecretInInputError, type TurnClient } from '../../client/turnClient.js';
import type { Transcript } from '../../client/transcript.js';
import { TURN_INPUT_FAILURE_TYPE, type ContentBlock } from '../../contract/index.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { SettingsError, loadSettings } from '../../settings/index.js';
import { smallImage } from './fixtures-images.js';

const HASH = hashToken('s3cret-token');

test('token entries: hashes with session prefixes; a plaintext token or a bad entry names where it is', () => {
  const tokens = parseTokens(`# ops\n${HASH} team-a-,team-b-\n\n${hashToken('other')} *  # every session\n`, '/etc/dmcp/tokens');
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
    assert.throws(() => parseTokens(text, 'DMCP_API_TOKENS'), (err: Error) => err instanceof SettingsError && message.test(err.message) && !err.message.includes('s3cret-token'), text);
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
    ['Bearer abc', 'abc'], ['bearer abc', 'abc'], ['Bearer  abc ', 'abc'], ['Basic abc', undefined], ['Bearer', undefined], ['Bearer a b', undefined], [undefined, undefined],
  ];
  for (const [header, token] of headers) assert.equal(bearerToken(header), token, String(header));
  const peers: [string | undefined, boolean][] = [['127.0.0.1', true], ['127.8.0.3', true], ['::1', true], ['::ffff:127.0.0.1', true], ['10.0.0.5', false], ['::ffff:10.0.0.5', false], ['fe80::1', false], [undefined, false]];
  for (const [peer, loopback] of peers) assert.equal(isLoopback(peer), loopback, String(peer));
});

test('turn references: the API signs only what its settings allow, and names the refused field', async () => {
  const real = async (p: string) => (p === '/srv/allowed/link.json' ? '/etc/evil.json' : p);
  const b: ApiBoundary = { allowInline: false, allowedConfigDirs: ['/srv/allowed'], workspaceRoots: ['/srv/ws'] };
  const rows: [Partial<ApiBoundary>, Partial<{ workspace: string; mcpConfigFiles: string[]; inlineSpecs: string[]; plugins: string[] }>, unknown][] = [
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
    const decision = await admitRefs({ ...b, ...override }, { workspace: '/', mcpConfigFiles: [], inlineSpecs: [], plugins: [], ...refs }, real);
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
    { type: 'resource', resource: { uri: 'file:///x', mimeType: 'text/html', blob: Buffer.from('<script>').toString('base64') } },
    { type: 'audio', mimeType: 'audio/wav', data: Buffer.from('RIFF').toString('base64') },
  ] as ContentBlock[];
  const linked = linkBinaryContent(blocks, '/c');
  assert.deepEqual(linked[0], blocks[0]);
  assert.deepEqual(linked[1], { type: 'image', mimeType: 'image/png', href: '/c/1', bytes: PNG.length });
  assert.deepEqual(linked[2], { type: 'resource', resource: { uri: 'file:///x', mimeType: 'text/html', href: '/c/2', bytes: 8 } });
  assert.equal(binaryOf(blocks[1])?.contentType, 'image/png');
  assert.equal(binaryOf({ type: 'image', mimeType: 'image/png', data: Buffer.from('<html>').toString('base64') } as ContentBlock)?.contentType, 'application/octet-stream');
  assert.equal(binaryOf(blocks[2])?.contentType, 'application/octet-stream');
  assert.equal(binaryOf(blocks[3])?.contentType, 'audio/wav');
  assert.equal(binaryOf({ type: 'audio', mimeType: 'text/html', data: 'AA==' } as ContentBlock)?.contentType, 'application/octet-stream');
  assert.equal(binaryOf(blocks[0]), undefined);
  assert.equal(binaryOf(undefined), undefined);
});

test('a call is the same call when its name and arguments match, whatever the key order', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: 2 } }), '{"a":{"c":2,"d":[1,{"y":2,"z":1}]},"b":1}');
  const r = callFingerprint({ name: 't', arguments: { a: 1, b: 2 } });
  assert.equal(callFingerprint({ name: 't', arguments: { b: 2, a: 1 } }), r);
  assert.notEqual(callFingerprint({ name: 't', arguments: { a: 1 } }), r);
  assert.notEqual(callFingerprint({ name: 'u', arguments: { a: 1, b: 2 } }), r);
  assert.notEqual(callFingerprint({ name: 't', arguments: { a: '1', b: 2 } }), r);
  assert.equal(callFingerprint({ name: 't' }), callFingerprint({ name: 't', arguments: {} }));
});

test('events: status once, each call started and finished once, then the end', () => {
  const status = { mcp: 'on' as const, servers: [], warnings: [], reportedAt: '2026-01-01T00:00:00.000Z' };
  const outcome = { status: 'ok' as const, content: [], isError: false, startedAt: '', durationMs: 3, attempts: 1 };
  const seen = { status: false, started: new Set<string>(), finished: new Set<string>(), ended: false };
  const t: Transcript = { turnId: 's/turn-1', sessionId: 's', status, tools: [], calls: [{ id: 'c1', name: 'n', arguments: {}, failures: [] }], state: 'running' };
  assert.deepEqual(newEvents(t, seen).map((e) => e.id), ['s/turn-1|status', 's/turn-1|c1|started']);
  assert.deepEqual(newEvents(t, seen), []);
  const done: Transcript = { ...t, calls: [{ ...t.calls[0]!, outcome }], state: 'completed', endedBy: 'endTurn' };
  const later = newEvents(done, seen);
  assert.deepEqual(later.map((e) => e.event), ['call.finished', 'turn.ended']);
  assert.deepEqual(later[0]!.data, { sessionId: 's', turnId: 's/turn-1', id: 'c1', name: 'n', status: 'ok', isError: false, durationMs: 3, attempts: 1 });
  assert.equal(newEvents({ ...done, state: 'continued' }, { status: true, started: new Set(['c1']), finished: new Set(['c1']), ended: false }).length, 0, 'a continued run is not the end');
});

test('errors map to stable codes; unknown errors say nothing about themselves', () => {
  const grpc = (code: number) => Object.assign(new Error('grpc said so'), { code, details: 'x', metadata: {} });
  const rows: [unknown, string, number][] = [
    [new SecretInInputError('arguments contain the value of API_KEY'), 'secret_in_input', 422],
    [new WorkflowUpdateFailedError('update failed', new Error('the turn has ended')), 'turn_ended', 409],
    [new WorkflowUpdateFailedError('update failed', new Error('call x: arguments nest deeper than 64 levels')), 'call_refused', 422],
    [new WorkflowNotFoundError('not found', 'a/turn-1', undefined), 'not_found', 404],
    [new Error('workflow execution already completed'), 'turn_ended', 409],
    [new Error('boom /secret/path'), 'internal', 500],
    [new ServiceError('rpc failed', { cause: grpc(8) }), 'rate_limited', 429],
    [grpc(14), 'unavailable', 503],
    [new WorkflowExecutionAlreadyStartedError('already started', 's/turn-1', 'agentTurn'), 'turn_exists', 409],
    [new WorkflowFailedError('failed', ApplicationFailure.create({ type: TURN_INPUT_FAILURE_TYPE, message: 'batch refused: too many', nonRetryable: true }), 'NON_RETRYABLE_FAILURE'), 'call_refused', 422],
    [grpc(5), 'not_found', 404],
  ];
  for (const [err, code, status] of rows) {
    const e = toApiError(err);
    assert.equal(e.code, code, String(err));
    assert.equal(e.status, status);
  }
  assert.equal(toApiError(new Error('boom /secret/path')).message, 'internal error');
  assert.ok(toApiError(new ApiError('forbidden', 'no')) instanceof ApiError);
  assert.equal(toApiError(grpc(8)).retryAfter, 1, 'a 429 says when to come back');
});

test('without tokens only loopback peers are served; the refusal comes before Temporal is touched', async () => {
  const app = createApi({
    turns: {} as TurnClient, logger: pino({ level: 'silent' }), tokens: [], boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
    maxBodyBytes: 4096, callWaitMs: 1000, shapeLimits: DEFAULT_SHAPE_LIMITS,
  });
  const from = (remoteAddress: string) => ({ incoming: { socket: { remoteAddress } } });
  const remote = await app.request('/api/v1/sessions/s1/turns', {}, from('10.1.2.3'));
  assert.equal(remote.status, 403);
  const body = (await remote.json()) as { error: { code: string; message: string; requestId: string } };
  assert.equal(body.error.code, 'forbidden');
  assert.match(body.error.message, /DMCP_API_TOKENS/);
  assert.equal(remote.headers.get('x-request-id'), body.error.requestId);
  assert.equal((await app.request('/healthz', {}, from('10.1.2.3'))).status, 200);
  const tokens = parseTokens(`${HASH} s`, 'DMCP_API_TOKENS');
  const secured = createApi({
    turns: {} as TurnClient, logger: pino({ level: 'silent' }), tokens, boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
    maxBodyBytes: 4096, callWaitMs: 1000, shapeLimits: DEFAULT_SHAPE_LIMITS,
  });
  assert.equal((await secured.request('/api/v1/sessions/s1/turns', {}, from('127.0.0.1'))).status, 401, 'with tokens, loopback needs one too');
});

test('settings: the api block, its defaults and its errors', () => {
  assert.deepEqual(loadSettings({}).api, { host: '127.0.0.1', port: 8235, maxBodyBytes: 2 * 1024 * 1024, callWaitMs: 30_000 });
  const s = loadSettings({ DMCP_API_HOST: '0.0.0.0', DMCP_API_PORT: '0', DMCP_API_TOKENS: `${HASH} a-`, DMCP_API_TOKENS_FILE: '/etc/dmcp/tokens', DMCP_API_MAX_BODY: '4096', DMCP_API_CALL_WAIT: '5s' });
  assert.deepEqual(s.api, { host: '0.0.0.0', port: 0, tokens: `${HASH} a-`, tokensFile: '/etc/dmcp/tokens', maxBodyBytes: 4096, callWaitMs: 5000 });
  assert.throws(() => loadSettings({ DMCP_API_PORT: 'http' }), /DMCP_API_PORT must be a port number/);
  assert.throws(() => loadSettings({ DMCP_API_MAX_BODY: '10' }), /DMCP_API_MAX_BODY must be a whole number of bytes, at least 1024/);
  assert.throws(() => loadSettings({ DMCP_API_CALL_WAIT: 'later' }), /DMCP_API_CALL_WAIT/);
});
