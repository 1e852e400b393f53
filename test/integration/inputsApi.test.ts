/**
 * Input requests over the HTTP API (fetch only): a call that asks answers 202, its questions are
 * listed and sent on the event stream, a bad answer is 422 naming the field, and answers complete
 * the call. Real Temporal, a real 2026-era server over HTTP.
 */
import assert from 'node:assert/strict';
import { placeOf } from '../../client/turnEvents.js';
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
    const res = await fetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify(body),
    });
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

  /** Reads the session's event stream until `stop` aborts; `raw` is every byte as text. */
  const listen = (sessionId: string, stop: AbortSignal) => {
    const seen = { events: [] as { event: string; id: string; data: Json }[], raw: '' };
    const reading = (async () => {
      const res = await fetch(`${api.url}/api/v1/sessions/${sessionId}/events`, { signal: stop, headers: AUTH });
      assert.equal(res.status, 200);
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        seen.raw += text;
        buffer += text;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const field = (name: string) =>
            block
              .split('\n')
              .find((l) => l.startsWith(`${name}:`))
              ?.slice(name.length + 1)
              .trim();
          if (field('event'))
            seen.events.push({
              event: field('event')!,
              id: field('id') ?? '',
              data: JSON.parse(field('data') ?? '{}') as Json,
            });
        }
      }
    })().catch((err: unknown) => {
      if (!stop.aborted) throw err;
    });
    return { seen, reading };
  };

  test('list, stream, refuse a bad answer naming the field, answer twice, read the outcome', async () => {
    const sessionId = `inputs-api-${Date.now()}`;
    const stop = new AbortController();
    const stream = listen(sessionId, stop.signal);
    const started = await post(`/api/v1/sessions/${sessionId}/turns`, {
      workspace: dir,
      servers: { mcpConfigFiles: [configFile] },
    });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const base = `/api/v1/sessions/${sessionId}/turns/turn-1`;
    const call = await post(`${base}/calls?wait=300`, { id: 'toolu_p', name: 'mcp__db__provision', arguments: {} });
    assert.equal(call.status, 202, JSON.stringify(call.body));

    let inputs: Json[] = [];
    await waitUntil(
      'the first question',
      async () => (inputs = (await get(`${base}/inputs`)).body.inputs as Json[]).length === 1,
    );
    assert.equal(inputs[0]!.requestId, 'toolu_p:1:name');
    assert.equal(inputs[0]!.kind, 'form');
    assert.equal(inputs[0]!.requestedSchema.properties.name.type, 'string');
    await waitUntil(
      'call.input_required on the stream',
      async () => stream.seen.events.some((e) => e.event === 'call.input_required'),
      15_000,
    );
    const asked = stream.seen.events.find((e) => e.event === 'call.input_required')!;
    // Its ID is its place in the turn, which a reconnecting client sends back as Last-Event-ID.
    assert.equal(placeOf(asked.id as string, `${sessionId}/turn-1`).length, 3);
    assert.equal(asked.data.requestId, 'toolu_p:1:name', 'the ID the answer is posted under');
    assert.equal(asked.data.id, 'toolu_p');
    assert.equal(asked.data.name, 'mcp__db__provision');
    assert.equal(asked.data.kind, 'form');
    assert.equal(asked.data.message, inputs[0]!.message);
    assert.deepEqual(asked.data.requestedSchema, inputs[0]!.requestedSchema);

    const bad = await post(`${base}/inputs/toolu_p:1:name`, { action: 'accept', content: { name: 'x' } });
    assert.equal(bad.status, 422, JSON.stringify(bad.body));
    assert.equal(bad.body.error.code, 'answer_refused');
    assert.equal(bad.body.error.field, 'body.content.name');
    const malformed = await post(`${base}/inputs/toolu_p:1:name`, {
      action: 'accept',
      content: { name: 'ok' },
      extra: 1,
    });
    assert.equal(malformed.status, 400, JSON.stringify(malformed.body));
    const unknown = await post(`${base}/inputs/toolu_p:9:nope`, { action: 'cancel' });
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    assert.equal(unknown.body.error.field, 'path.requestId');

    const first = await post(`${base}/inputs/toolu_p:1:name`, { action: 'accept', content: { name: 'api-db' } });
    assert.deepEqual(first, { status: 200, body: { requestId: 'toolu_p:1:name', action: 'accept' } });
    const again = await post(`${base}/inputs/toolu_p:1:name`, { action: 'decline' });
    assert.deepEqual(again.body, first.body, 'a second answer is the first');
    await waitUntil('the second question', async () =>
      ((await get(`${base}/inputs`)).body.inputs as Json[]).some((r) => r.requestId === 'toolu_p:2:confirm'),
    );
    assert.equal(
      (await post(`${base}/inputs/toolu_p:2:confirm`, { action: 'accept', content: { confirm: true } })).status,
      200,
    );
    let outcome: Json | undefined;
    await waitUntil('the outcome', async () => {
      const res = await get(`${base}/calls/toolu_p`);
      if (res.status === 200) outcome = res.body.outcome as Json;
      return res.status === 200;
    });
    assert.equal(outcome!.status, 'ok');
    assert.deepEqual(outcome!.content, [{ type: 'text', text: 'Provisioned api-db' }]);
    assert.deepEqual((await get(`${base}/inputs`)).body, { inputs: [] });
    await waitUntil(
      'call.finished on the stream',
      async () => stream.seen.events.some((e) => e.event === 'call.finished'),
      15_000,
    );
    stop.abort();
    await stream.reading;
    assert.deepEqual(
      stream.seen.events.filter((e) => e.event.startsWith('call.')).map((e) => [e.event, e.data.requestId]),
      [
        ['call.started', undefined],
        ['call.input_required', 'toolu_p:1:name'],
        ['call.input_required', 'toolu_p:2:confirm'],
        ['call.finished', undefined],
      ],
      'each question once, in order, between the start and the end',
    );
    // The server itself repeats the name in its second question; nothing else may carry it.
    const raw = stream.seen.raw.replaceAll('Create database api-db?', '');
    assert.ok(!raw.includes('api-db'), `an answer never reaches the event stream: ${raw}`);

    const doc = (await get('/api/v1/openapi.json')).body;
    assert.ok(doc.paths['/api/v1/sessions/{sessionId}/turns/{turn}/inputs'].get);
    assert.ok(doc.paths['/api/v1/sessions/{sessionId}/turns/{turn}/inputs/{requestId}'].post);
    assert.ok(doc.components.schemas.CallInputRequiredEvent.properties.requestId, 'the event is in the document');
    await post(`${base}/end`, {});
  });
});
