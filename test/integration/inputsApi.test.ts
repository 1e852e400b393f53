/**
 * Input requests over the HTTP API (fetch only): a call that asks answers 202, its questions are
 * listed, a bad answer is 422 naming the field, and answers complete the call. Real Temporal, a
 * real 2026-era server over HTTP.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type RunningApi } from '../../api/server.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { startHarness, tempDir, waitUntil, type Harness } from '../support/harness.js';
import { killStartedServers, modernHttpServer } from '../support/inputs.js';

const TOKEN = 'inputs-api-test-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Json {
  [key: string]: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('input requests over the HTTP API', { timeout: 90_000 }, () => {
  let h: Harness;
  let api: RunningApi;
  let dir: string;
  let configFile: string;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${api.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...AUTH }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const get = async (path: string) => {
    const res = await fetch(`${api.url}${path}`, { headers: AUTH });
    return { status: res.status, body: (await res.json()) as Json };
  };

  before(async () => {
    dir = await tempDir('dmcp-inputs-api-');
    const url = await modernHttpServer(join(dir, 'server.log'));
    configFile = join(dir, 'mcp.json');
    await writeFile(configFile, JSON.stringify({ mcpServers: { db: { url } } }));
    h = await startHarness('inputs-api');
    api = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'silent' }),
      turns: h.client,
      tokens: parseTokens(`${hashToken(TOKEN)} *`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: true, allowedConfigDirs: [dir], workspaceRoots: [dir] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 5_000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
      eventsPollMs: 200,
    });
  });
  after(async () => {
    await api?.close();
    await h?.stop();
    killStartedServers();
  });

  test('list, refuse a bad answer naming the field, answer twice, read the outcome', async () => {
    const sessionId = `inputs-api-${Date.now()}`;
    const started = await post(`/api/v1/sessions/${sessionId}/turns`, { workspace: dir, servers: { mcpConfigFiles: [configFile] } });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const base = `/api/v1/sessions/${sessionId}/turns/turn-1`;
    const call = await post(`${base}/calls?wait=300`, { id: 'toolu_p', name: 'mcp__db__provision', arguments: {} });
    assert.equal(call.status, 202, JSON.stringify(call.body));

    let inputs: Json[] = [];
    await waitUntil('the first question', async () => (inputs = (await get(`${base}/inputs`)).body.inputs as Json[]).length === 1);
    assert.equal(inputs[0]!.requestId, 'toolu_p:1:name');
    assert.equal(inputs[0]!.kind, 'form');
    assert.equal(inputs[0]!.requestedSchema.properties.name.type, 'string');

    const bad = await post(`${base}/inputs/toolu_p:1:name`, { action: 'accept', content: { name: 'x' } });
    assert.equal(bad.status, 422, JSON.stringify(bad.body));
    assert.equal(bad.body.error.code, 'answer_refused');
    assert.equal(bad.body.error.field, 'body.content.name');
    const malformed = await post(`${base}/inputs/toolu_p:1:name`, { action: 'accept', content: { name: 'ok' }, extra: 1 });
    assert.equal(malformed.status, 400, JSON.stringify(malformed.body));
    const unknown = await post(`${base}/inputs/toolu_p:9:nope`, { action: 'cancel' });
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    assert.equal(unknown.body.error.field, 'path.requestId');

    const first = await post(`${base}/inputs/toolu_p:1:name`, { action: 'accept', content: { name: 'api-db' } });
    assert.deepEqual(first, { status: 200, body: { requestId: 'toolu_p:1:name', action: 'accept' } });
    const again = await post(`${base}/inputs/toolu_p:1:name`, { action: 'decline' });
    assert.deepEqual(again.body, first.body, 'a second answer is the first');
    await waitUntil('the second question', async () => ((await get(`${base}/inputs`)).body.inputs as Json[]).some((r) => r.requestId === 'toolu_p:2:confirm'));
    assert.equal((await post(`${base}/inputs/toolu_p:2:confirm`, { action: 'accept', content: { confirm: true } })).status, 200);
    let outcome: Json | undefined;
    await waitUntil('the outcome', async () => {
      const res = await get(`${base}/calls/toolu_p`);
      if (res.status === 200) outcome = res.body.outcome as Json;
      return res.status === 200;
    });
    assert.equal(outcome!.status, 'ok');
    assert.deepEqual(outcome!.content, [{ type: 'text', text: 'Provisioned api-db' }]);
    assert.deepEqual((await get(`${base}/inputs`)).body, { inputs: [] });

    const doc = (await get('/api/v1/openapi.json')).body;
    assert.ok(doc.paths['/api/v1/sessions/{sessionId}/turns/{turn}/inputs'].get);
    assert.ok(doc.paths['/api/v1/sessions/{sessionId}/turns/{turn}/inputs/{requestId}'].post);
    await post(`${base}/end`, {});
  });
});
