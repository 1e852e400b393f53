/**
 * `durable-mcp api` over real HTTP (fetch only), against the test run's Temporal dev server, a real
 * worker and real MCP servers: the echo fixture (which logs every execution, so exactly-once is
 * counted) and @modelcontextprotocol/server-everything (for an image).
 */
import assert from 'node:assert/strict';
import type { AsyncLocalStorage } from 'node:async_hooks';
import { spawn, spawnSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { Client, Connection } from '@temporalio/client';
import { TurnClient } from '../../client/turnClient.js';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type RunningApi } from '../../api/server.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import {
  everythingServer,
  fixtureServer,
  readLines,
  startHarness,
  temporalAddress,
  tempDir,
  waitUntil,
  within,
  type Harness,
} from '../support/harness.js';

const cliMain = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

const SECRET = 'sk-api-test-0123456789';
/** The API's one token here: every session (the routes' own tests), as the data dir's token of `dev`. */
const TOKEN = 'api-test-every-session-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

interface Json {
  [key: string]: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('the HTTP API', () => {
  let h: Harness;
  let dir: string;
  let execLog: string;
  let api: RunningApi;
  let turns: TurnClient;
  const apiLogs: string[] = [];
  const spec = () => `fixture:${process.execPath} ${fixtureServer}`;

  const post = async (path: string, body: unknown, init: RequestInit = {}) => {
    const res = await fetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify(body),
      ...init,
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
  };
  const get = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${api.url}${path}`, {
      ...init,
      headers: { ...AUTH, ...(init.headers as Record<string, string> | undefined) },
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
  };
  const executions = async (match: (line: Json) => boolean) =>
    (await readLines(execLog)).map((l) => JSON.parse(l) as Json).filter(match).length;
  const startTurn = async (sessionId: string, inline = [spec()]) => {
    const res = await post(`/api/v1/sessions/${sessionId}/turns`, { workspace: dir, servers: { inlineSpecs: inline } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };

  before(async () => {
    dir = await tempDir('dmcp-api-');
    execLog = join(dir, 'executions.log');
    h = await startHarness('api', { FIXTURE_LOG: execLog });
    turns = new TurnClient({ client: h.client.client, taskQueue: h.taskQueue, secrets: { API_TEST_TOKEN: SECRET } });
    api = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'debug' }, { write: (line: string) => void apiLogs.push(line) }),
      turns,
      tokens: parseTokens(`${hashToken(TOKEN)} *`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: true, allowedConfigDirs: [], workspaceRoots: [dir] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 20_000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
      eventsPollMs: 200,
    });
  });
  after(async () => {
    await api?.close();
    await h?.stop();
  });

  test('an interactive turn driven with fetch only: start, call, retry, conflict, model view, status, end', async () => {
    const sessionId = `api-turn-${Date.now()}`;
    const started = await startTurn(sessionId);
    assert.equal(started.turnId, `${sessionId}/turn-1`);
    assert.equal(started.turn, 'turn-1');
    const echo = started.tools.find((t: Json) => t.name === 'mcp__fixture__echo');
    assert.ok(echo, 'the frozen tool list has the echo tool');
    assert.equal(echo.inputSchema.type, 'object');
    assert.match(started.serversParagraph, /fixture/);
    assert.equal(started.status.servers[0].state, 'ready');

    const calls = started.links.calls as string;
    const request = { id: 'toolu_api_once', name: 'mcp__fixture__echo', arguments: { text: 'api once' } };
    const first = await post(calls, request);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body.outcome.content, [{ type: 'text', text: 'api once' }]);
    const again = await post(calls, request);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.outcome, first.body.outcome, 'the same ID returns the recorded outcome');
    const other = await post(calls, { ...request, arguments: { text: 'something else' } });
    assert.equal(other.status, 409);
    assert.equal(other.body.error.code, 'call_id_conflict');
    assert.equal(other.body.error.field, 'body.id');
    const otherTool = await post(calls, { ...request, name: 'mcp__fixture__fail' });
    assert.equal(otherTool.status, 409);
    assert.equal(
      await executions((l) => l.tool === 'echo' && l.args.text === 'api once'),
      1,
      'the tool ran exactly once',
    );
    assert.equal(
      await executions((l) => l.args.text === 'something else' || l.tool === 'fail'),
      0,
      'the conflicting requests ran nothing',
    );

    const model = await post(`${calls}?render=model`, {
      id: 'toolu_api_model',
      name: 'mcp__fixture__echo',
      arguments: { text: 'for the model' },
    });
    assert.equal(model.status, 200);
    assert.match(model.body.model.text, /<toolOutput>[\s\S]*for the model[\s\S]*<\/toolOutput>/);

    const recorded = await get(`${calls}/toolu_api_once`);
    assert.equal(recorded.status, 200);
    assert.deepEqual(recorded.body.outcome, first.body.outcome);
    assert.equal((await get(`${calls}/no-such-call`)).status, 404);

    const status = await get(`/api/v1/sessions/${sessionId}/mcp`);
    assert.equal(status.status, 200);
    assert.equal(status.body.turnId, started.turnId);
    assert.equal(status.body.status.servers[0].name, 'fixture');
    assert.ok(!Number.isNaN(Date.parse(status.body.reportedAt)), 'reportedAt is a time');

    const list = await get(`/api/v1/sessions/${sessionId}/turns`);
    assert.deepEqual(
      list.body.turns.map((t: Json) => t.turnId),
      [started.turnId],
    );

    const ended = await post(started.links.end, {});
    assert.equal(ended.status, 200, JSON.stringify(ended.body));
    assert.equal(ended.body.endedBy, 'endTurn');
    assert.deepEqual(ended.body.calls.map((c: Json) => c.id).sort(), ['toolu_api_model', 'toolu_api_once']);
    const late = await post(calls, { id: 'toolu_after_end', name: 'mcp__fixture__echo', arguments: { text: 'late' } });
    assert.equal(late.status, 409, JSON.stringify(late.body));
    assert.equal(late.body.error.code, 'turn_ended');
    assert.equal(await executions((l) => l.args.text === 'late'), 0);
  });

  test('after continue-as-new, a retried call ID is still answered from the record, and other arguments are still 409', async () => {
    const sessionId = `api-continued-${Date.now()}`;
    const turn = await turns.startTurn({
      sessionId,
      workspace: dir,
      servers: { inlineSpecs: [spec()] },
      limits: { continueAsNewAfterCalls: 2 },
    });
    const calls = `/api/v1/sessions/${sessionId}/turn-1/calls`.replace('/turn-1', '/turns/turn-1');
    const first = { id: 'toolu_c1', name: 'mcp__fixture__echo', arguments: { text: 'carried one' } };
    const answered = await post(calls, first);
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    for (const n of [2, 3])
      assert.equal(
        (await post(calls, { id: `toolu_c${n}`, name: 'mcp__fixture__echo', arguments: { text: `carried ${n}` } }))
          .status,
        200,
      );
    await waitUntil(
      'the turn to continue as new',
      async () => {
        const runs: string[] = [];
        for await (const w of h.client.client.workflow.list({ query: `WorkflowId = '${turn.turnId}'` }))
          runs.push(w.runId);
        return runs.length > 1;
      },
      15_000,
    );
    // Other arguments first: the new run has never seen this ID as an Update, so only its input tells.
    const changed = await post(calls, { ...first, arguments: { text: 'carried changed' } });
    assert.equal(changed.status, 409, JSON.stringify(changed.body));
    assert.equal(changed.body.error.code, 'call_id_conflict');
    const retried = await post(calls, first);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.deepEqual(retried.body.outcome, answered.body.outcome);
    assert.equal(await executions((l) => l.args.text === 'carried one'), 1);
    assert.equal(await executions((l) => l.args.text === 'carried changed'), 0);
    await turn.end();
  });

  test('a batch turn answers with every outcome', async () => {
    const sessionId = `api-batch-${Date.now()}`;
    const res = await post(`/api/v1/sessions/${sessionId}/turns`, {
      workspace: dir,
      servers: { inlineSpecs: [spec()] },
      calls: [
        [
          { id: 'b1', name: 'mcp__fixture__echo', arguments: { text: 'batch one' } },
          { id: 'b2', name: 'mcp__fixture__echo', arguments: { text: 'batch two' } },
        ],
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.endedBy, 'batch');
    assert.deepEqual(res.body.calls.map((c: Json) => c.outcome.content[0].text).sort(), ['batch one', 'batch two']);
  });

  test('a client that disconnects mid-call and retries gets the recorded outcome; the tool ran once', async () => {
    const sessionId = `api-disconnect-${Date.now()}`;
    const started = await startTurn(sessionId);
    const request = { id: 'toolu_disconnect', name: 'mcp__fixture__slow', arguments: { ms: 1500, tag: 'disconnect' } };
    const gone = new AbortController();
    const first = fetch(`${api.url}${started.links.calls}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify(request),
      signal: gone.signal,
    });
    await waitUntil(
      'the slow call to start',
      async () => (await executions((l) => l.args.tag === 'disconnect')) === 1,
      10_000,
    );
    gone.abort();
    await assert.rejects(first, /abort/i);
    const retry = await within(15_000, 'the retried call', post(started.links.calls, request));
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.deepEqual(retry.body.outcome.content, [{ type: 'text', text: 'slept 1500 ms' }]);
    assert.equal(await executions((l) => l.args.tag === 'disconnect'), 1, 'the slow tool ran once');
    await post(started.links.end, {});
  });

  test('a long call answers 202 with where to poll, shows its progress, and the poll gets the outcome', async () => {
    const sessionId = `api-long-${Date.now()}`;
    const started = await startTurn(sessionId);
    const request = { id: 'toolu_long', name: 'mcp__fixture__progress', arguments: { steps: 6, intervalMs: 400 } };
    const accepted = await post(`${started.links.calls}?wait=800`, request);
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal(accepted.body.state, 'running');
    assert.equal(accepted.headers.get('location'), accepted.body.poll);
    let outcome: Json | undefined;
    let progressSeen: Json | undefined;
    await waitUntil(
      'the polled outcome',
      async () => {
        const res = await get(accepted.body.poll);
        if (res.status === 202) progressSeen ??= res.body.progress;
        if (res.status === 200) outcome = res.body.outcome;
        return res.status === 200;
      },
      20_000,
    );
    assert.deepEqual(outcome?.content, [{ type: 'text', text: 'done after 6 steps' }]);
    progressSeen ??= accepted.body.progress;
    assert.ok(
      progressSeen && typeof progressSeen.progress === 'number',
      `a 202 carried the server's progress (got ${JSON.stringify(progressSeen)})`,
    );
    assert.equal(await executions((l) => l.tool === 'progress'), 1);
    // wait=0 still answers only once the call is accepted: the poll finds it at once.
    const now = await post(`${started.links.calls}?wait=0`, {
      id: 'toolu_now',
      name: 'mcp__fixture__slow',
      arguments: { ms: 500, tag: 'now' },
    });
    assert.equal(now.status, 202, JSON.stringify(now.body));
    const polled = await get(now.body.poll);
    assert.ok(polled.status === 202 || polled.status === 200, `the poll finds the call (${polled.status})`);
    await post(started.links.end, {});
  });

  /** The events of a session's stream as they arrive, until `stop` aborts. */
  const streamEvents = async (base: string, sessionId: string, stop: AbortController) => {
    const res = await fetch(`${base}/api/v1/sessions/${sessionId}/events`, { signal: stop.signal, headers: AUTH });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const events: { event: string; id: string; data: Json }[] = [];
    const reading = (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const raw = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const field = (name: string) =>
            raw
              .split('\n')
              .find((l) => l.startsWith(`${name}:`))
              ?.slice(name.length + 1)
              .trim();
          if (field('event'))
            events.push({
              event: field('event')!,
              id: field('id') ?? '',
              data: JSON.parse(field('data') ?? '{}') as Json,
            });
        }
      }
    })().catch(() => undefined);
    return { events, reading };
  };

  test('the event stream delivers mcp.status with the right servers, then the calls', async () => {
    const sessionId = `api-events-${Date.now()}`;
    const stop = new AbortController();
    const { events, reading } = await streamEvents(api.url, sessionId, stop);
    const started = await startTurn(sessionId, [spec(), `broken:${process.execPath} -e process.exit(3)`]);
    await post(started.links.calls, { id: 'toolu_evt', name: 'mcp__fixture__echo', arguments: { text: 'evented' } });
    await waitUntil('call.finished on the stream', async () => events.some((e) => e.event === 'call.finished'), 15_000);
    stop.abort();
    await reading;
    const status = events.find((e) => e.event === 'mcp.status');
    assert.ok(status, `an mcp.status event (got ${events.map((e) => e.event).join(', ')})`);
    assert.equal(status.data.turnId, started.turnId);
    const servers = Object.fromEntries((status.data.status.servers as Json[]).map((s) => [s.name, s.state]));
    assert.deepEqual(servers, { fixture: 'ready', broken: 'failed' });
    assert.deepEqual(
      events.map((e) => e.event),
      ['mcp.status', 'call.started', 'call.finished'],
    );
    assert.equal(events[2]!.data.id, 'toolu_evt');
    assert.equal(events[2]!.data.status, 'ok');
    await post(started.links.end, {});
  });

  test('an event stream reads each history event once as the turn goes on, not the whole history every poll', async () => {
    // Every history read of this API goes through this connection, and is counted in events.
    const connection = await Connection.connect({ address: temporalAddress() });
    const service = connection.workflowService;
    let eventsRead = 0;
    // The SDK adds an abort listener to a request's signal and never removes it: a signal shared by
    // every read of a long stream would hold one per read.
    let mostListeners = 0;
    const callContext = (
      connection as unknown as { callContextStorage: AsyncLocalStorage<{ abortSignal?: AbortSignal }> }
    ).callContextStorage;
    const counted = new Proxy(service, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (
          (prop !== 'getWorkflowExecutionHistory' && prop !== 'getWorkflowExecutionHistoryReverse') ||
          typeof value !== 'function'
        )
          return value;
        return async (...args: unknown[]) => {
          const signal = callContext.getStore()?.abortSignal;
          if (signal) mostListeners = Math.max(mostListeners, getEventListeners(signal, 'abort').length);
          const res = await (
            value as (...a: unknown[]) => Promise<{ history?: { events?: unknown[] | null } | null }>
          ).apply(target, args);
          eventsRead += res.history?.events?.length ?? 0;
          return res;
        };
      },
    });
    Object.defineProperty(connection, 'workflowService', { value: counted });
    const own = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'silent' }),
      turns: new TurnClient({ client: new Client({ connection }), taskQueue: h.taskQueue }),
      tokens: parseTokens(`${hashToken(TOKEN)} *`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: true, allowedConfigDirs: [], workspaceRoots: [dir] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 20_000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
      eventsPollMs: 100,
    });
    const stop = new AbortController();
    try {
      const sessionId = `api-follow-${Date.now()}`;
      const started = await startTurn(sessionId);
      const call = (i: number) =>
        post(started.links.calls, {
          id: `toolu_follow_${i}`,
          name: 'mcp__fixture__echo',
          arguments: { text: `follow ${i}` },
        });
      for (let i = 0; i < 6; i++) assert.equal((await call(i)).status, 200);
      const { events, reading } = await streamEvents(own.url, sessionId, stop);
      const finished = () => events.filter((e) => e.event === 'call.finished').length;
      await waitUntil('the six calls on the stream', async () => finished() === 6, 15_000);
      // Twenty polls with nothing new, then one more call: it arrives, read once.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      assert.equal((await call(6)).status, 200);
      await waitUntil('the seventh call on the stream', async () => finished() === 7, 15_000);
      stop.abort();
      await reading;
      const length = (await turns.client.workflow.getHandle(started.turnId).fetchHistory()).events?.length ?? 0;
      assert.deepEqual(
        events.map((e) => e.id),
        [...new Set(events.map((e) => e.id))],
        'no event is sent twice',
      );
      assert.ok(eventsRead <= length, `the stream read ${eventsRead} history events of a history of ${length}`);
      assert.ok(
        mostListeners <= 1,
        `a history read found ${mostListeners} abort listeners on its signal: the stream's reads leak them`,
      );
      await post(started.links.end, {});
    } finally {
      stop.abort();
      await own.close();
      await connection.close();
    }
  });

  test('an event stream follows a turn across continue-as-new, and one opened after it still starts from the status', async () => {
    const sessionId = `api-follow-continued-${Date.now()}`;
    const turn = await turns.startTurn({
      sessionId,
      workspace: dir,
      servers: { inlineSpecs: [spec()] },
      limits: { continueAsNewAfterCalls: 2 },
    });
    const stops = [new AbortController(), new AbortController()];
    try {
      const before = await streamEvents(api.url, sessionId, stops[0]!);
      const calls = `/api/v1/sessions/${sessionId}/turns/turn-1/calls`;
      const call = (n: number) =>
        post(calls, { id: `toolu_fc${n}`, name: 'mcp__fixture__echo', arguments: { text: `continued ${n}` } });
      for (const n of [1, 2, 3]) assert.equal((await call(n)).status, 200);
      await waitUntil(
        'the turn to continue as new',
        async () => {
          let runs = 0;
          for await (const w of h.client.client.workflow.list({ query: `WorkflowId = '${turn.turnId}'` }))
            runs += w.runId ? 1 : 0;
          return runs > 1;
        },
        15_000,
      );
      const afterwards = await streamEvents(api.url, sessionId, stops[1]!);
      assert.equal((await call(4)).status, 200);
      await turn.end();
      const expected = ['mcp.status', ...[1, 2, 3, 4].flatMap(() => ['call.started', 'call.finished']), 'turn.ended'];
      for (const [name, stream] of [
        ['opened before', before],
        ['opened after continue-as-new', afterwards],
      ] as const) {
        await waitUntil(
          `turn.ended on the stream ${name}`,
          async () => stream.events.some((e) => e.event === 'turn.ended'),
          15_000,
        );
        assert.deepEqual(
          stream.events.map((e) => e.event),
          expected,
          name,
        );
        assert.deepEqual(
          stream.events.filter((e) => e.event === 'call.finished').map((e) => e.data.id),
          ['toolu_fc1', 'toolu_fc2', 'toolu_fc3', 'toolu_fc4'],
          name,
        );
      }
    } finally {
      for (const stop of stops) stop.abort();
    }
  });

  test('a transcript with an image comes back with a working link to the bytes', async () => {
    const sessionId = `api-image-${Date.now()}`;
    const started = await startTurn(sessionId, [`everything:${process.execPath} ${everythingServer} stdio`]);
    const call = await post(started.links.calls, {
      id: 'toolu_img',
      name: 'mcp__everything__get-tiny-image',
      arguments: {},
    });
    assert.equal(call.status, 200, JSON.stringify(call.body).slice(0, 500));
    await post(started.links.end, {});
    const transcript = await get(started.links.transcript);
    assert.equal(transcript.status, 200);
    const recorded = transcript.body.calls.find((c: Json) => c.id === 'toolu_img');
    const image = recorded.outcome.content.find((b: Json) => b.type === 'image');
    assert.ok(image, 'the image block is in the transcript');
    assert.equal(image.data, undefined, 'no base64 in the transcript');
    assert.ok(image.bytes > 0);
    const bytes = await fetch(`${api.url}${image.href}`, { headers: AUTH });
    assert.equal(bytes.status, 200);
    assert.equal(bytes.headers.get('content-type'), 'image/png');
    const body = Buffer.from(await bytes.arrayBuffer());
    assert.equal(body.length, image.bytes);
    assert.deepEqual([...body.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG bytes');
    const original = call.body.outcome.content.find((b: Json) => b.type === 'image');
    assert.equal(body.toString('base64'), original.data);
    assert.equal(
      (
        await fetch(`${api.url}${started.links.transcript.replace(/transcript$/, 'calls/toolu_img/content/99')}`, {
          headers: AUTH,
        })
      ).status,
      404,
    );
  });

  test('bad bodies get 400 naming the field; references and secrets the API does not allow are refused', async () => {
    const sessionId = `api-bad-${Date.now()}`;
    const started = await startTurn(sessionId);
    const calls = started.links.calls as string;
    const cases: [unknown, string][] = [
      [{ id: 'x', arguments: {} }, 'body.name'],
      [{ id: 'x', name: 'mcp__fixture__echo', arguments: 'text' }, 'body.arguments'],
      [{ id: '', name: 'mcp__fixture__echo' }, 'body.id'],
      [{ id: 'endTurn', name: 'mcp__fixture__echo' }, 'body.id'],
      [{ id: 'x', name: 'mcp__fixture__echo', extra: 1 }, 'body.extra'],
    ];
    for (const [body, field] of cases) {
      const res = await post(calls, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'bad_request');
      assert.equal(res.body.error.field, field, `${JSON.stringify(body)}: ${res.body.error.message}`);
      assert.ok(res.body.error.message.startsWith(field), res.body.error.message);
      assert.ok(res.body.error.requestId);
    }
    const malformed = await fetch(`${api.url}${calls}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: '{"id": "x",',
    });
    assert.equal(malformed.status, 400);
    assert.equal(((await malformed.json()) as Json).error.field, 'body');
    const plain = await fetch(`${api.url}${calls}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', ...AUTH },
      body: '{"id":"x","name":"y"}',
    });
    assert.equal(plain.status, 415);
    assert.equal(((await plain.json()) as Json).error.code, 'unsupported_media_type');
    const big = await post(calls, {
      id: 'big',
      name: 'mcp__fixture__echo',
      arguments: { text: 'x'.repeat(70 * 1024) },
    });
    assert.equal(big.status, 413);
    assert.equal(big.body.error.code, 'payload_too_large');
    const badSession = await get('/api/v1/sessions/bad%20id/turns');
    assert.equal(badSession.status, 400);
    assert.equal(badSession.body.error.field, 'path.sessionId');

    const outside = await post(`/api/v1/sessions/${sessionId}-2/turns`, {
      workspace: '/',
      servers: { inlineSpecs: [spec()] },
    });
    assert.equal(outside.status, 403);
    assert.equal(outside.body.error.field, 'body.workspace');
    const file = await post(`/api/v1/sessions/${sessionId}-2/turns`, {
      workspace: dir,
      servers: { mcpConfigFiles: [join(dir, 'mcp.json')] },
    });
    assert.equal(file.status, 403);
    assert.equal(file.body.error.field, 'body.servers.mcpConfigFiles[0]');

    const secret = await post(calls, {
      id: 'leak',
      name: 'mcp__fixture__echo',
      arguments: { text: `token ${SECRET}` },
    });
    assert.equal(secret.status, 422);
    assert.equal(secret.body.error.code, 'secret_in_input');
    assert.match(secret.body.error.message, /API_TEST_TOKEN/);
    assert.ok(!JSON.stringify(secret.body).includes(SECRET));
    assert.equal(await executions((l) => JSON.stringify(l).includes(SECRET)), 0);
    const transcript = await get(started.links.transcript);
    assert.ok(!JSON.stringify(transcript.body).includes(SECRET), 'the refused call never reached history');
    await post(started.links.end, {});
  });

  test('bearer tokens: hashed, limited to session prefixes; refusals are 401/403 and tokens are never logged', async () => {
    const token = 'api-test-token-abcdef';
    const logs: string[] = [];
    const secured = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) }),
      turns,
      tokens: parseTokens(`${hashToken(token)} team-a-,shared-`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: true, allowedConfigDirs: [], workspaceRoots: [dir] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 5000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
    });
    try {
      const at = (path: string, auth?: string) =>
        fetch(`${secured.url}${path}`, auth ? { headers: { authorization: auth } } : {});
      const none = await at('/api/v1/sessions/team-a-1/turns');
      assert.equal(none.status, 401);
      assert.equal(none.headers.get('www-authenticate'), 'Bearer');
      assert.equal(((await none.json()) as Json).error.code, 'unauthorized');
      assert.equal((await at('/api/v1/sessions/team-a-1/turns', 'Bearer wrong-token')).status, 401);
      assert.equal((await at('/api/v1/sessions/team-a-1/turns', `Basic ${token}`)).status, 401);
      const elsewhere = await at('/api/v1/sessions/team-b-1/turns', `Bearer ${token}`);
      assert.equal(elsewhere.status, 403);
      assert.equal(((await elsewhere.json()) as Json).error.code, 'forbidden');
      const allowed = await at('/api/v1/sessions/team-a-1/turns', `Bearer ${token}`);
      assert.equal(allowed.status, 200);
      assert.deepEqual(((await allowed.json()) as Json).turns, []);
      assert.equal(
        (await at('/api/v1/sessions/shared-x/mcp', `Bearer ${token}`)).status,
        404,
        'allowed, and no turns yet',
      );
      assert.equal((await at('/healthz')).status, 200, 'health needs no token');
      assert.equal((await at('/api/v1/openapi.json')).status, 200, 'the document needs no token');
    } finally {
      await secured.close();
    }
    assert.ok(logs.length >= 6, 'requests were logged');
    assert.ok(
      logs.every((l) => !l.includes(token) && !l.includes('wrong-token')),
      'no token in the logs',
    );
    assert.ok(logs.some((l) => /"requestId":"[^"]+"/.test(l) && /"status":403/.test(l)));
  });

  test('healthz, readyz, the OpenAPI 3.1 document and its rendered page', async () => {
    assert.deepEqual((await get('/healthz')).body, { ok: true });
    const ready = await get('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.temporal, 'reachable');
    const doc = await get('/api/v1/openapi.json');
    assert.equal(doc.body.openapi, '3.1.0');
    for (const path of [
      '/api/v1/sessions/{sessionId}/turns',
      '/api/v1/sessions/{sessionId}/turns/{turn}/calls',
      '/api/v1/sessions/{sessionId}/mcp',
      '/api/v1/sessions/{sessionId}/events',
    ]) {
      assert.ok(doc.body.paths[path], `${path} is documented`);
    }
    assert.deepEqual(doc.body.components.schemas.CallRequest.required.sort(), ['id', 'name']);
    const page = await fetch(`${api.url}/api/v1/docs`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const html = await page.text();
    for (const asset of ['swagger-ui.css', 'swagger-ui-bundle.js', 'init.js']) {
      assert.ok(html.includes(`/api/v1/docs/${asset}`), `the page loads ${asset}`);
      const served = await fetch(`${api.url}/api/v1/docs/${asset}`);
      assert.equal(served.status, 200, asset);
      const body = await served.text();
      if (asset === 'init.js') assert.match(body, /SwaggerUIBundle\(.*"url":"\/api\/v1\/openapi\.json"/);
      else assert.ok(body.length > 50_000, `${asset} is the package's file (${body.length} bytes)`);
    }
    const noAsset = await get('/api/v1/docs/..%2Fpackage.json');
    assert.equal(noAsset.status, 404);
    assert.equal(noAsset.body.error.code, 'not_found');
    const unknown = await get('/api/v1/nothing-here');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'not_found');
  });

  test('the `api` command: serves on the port it prints, refuses a plaintext token, stops on SIGTERM', async () => {
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      DMCP_DATA_DIR: join(dir, 'cli-data'),
      TEMPORAL_ADDRESS: temporalAddress(),
      DMCP_LOG_LEVEL: 'warn',
    };
    const refused = spawnSync(process.execPath, [cliMain, 'api', '--port', '0'], {
      env: { ...env, DMCP_API_TOKENS: 'plain-token team-a-' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /DMCP_API_TOKENS entry 1: entries hold the SHA-256 of a token, not the token/);
    assert.ok(!refused.stderr.includes('plain-token'));
    const child = spawn(process.execPath, [cliMain, 'api', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await waitUntil(
        'the api command to listen',
        async () => /listening on http:\/\/127\.0\.0\.1:\d+/.test(out),
        20_000,
      );
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
      const file = join(dir, 'cli-data', 'api.token');
      await waitUntil(
        'the api command to print its token file',
        async () => out.includes(`token:     ${file} (0600;`),
        5000,
      );
      const ready = await fetch(`${url}/readyz`);
      assert.equal(ready.status, 200);
      assert.equal((await fetch(`${url}/api/v1/shelf`)).status, 401, 'without DMCP_API_TOKENS the API is not open');
      const token = (await readFile(file, 'utf8')).trim();
      assert.ok(!out.includes(token), 'the token itself is not printed');
      const bearer = { authorization: `Bearer ${token}` };
      assert.equal((await fetch(`${url}/api/v1/sessions/api-cli-1/turns`, { headers: bearer })).status, 200);
      assert.equal(
        (await fetch(`${url}/api/v1/shelf`, { method: 'PATCH', headers: bearer })).status,
        405,
        "past the shelf scope: the data dir's token has it",
      );
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      assert.equal(await within(10_000, 'the api command to stop', exited), 143);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test('graceful shutdown: a request in flight finishes, event streams end, new connections are refused', async () => {
    const own = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      logger: pino({ level: 'silent' }),
      turns,
      tokens: parseTokens(`${hashToken(TOKEN)} *`, 'DMCP_API_TOKENS'),
      boundary: { allowInline: true, allowedConfigDirs: [], workspaceRoots: [dir] },
      maxBodyBytes: 64 * 1024,
      callWaitMs: 20_000,
      shapeLimits: DEFAULT_SHAPE_LIMITS,
    });
    const sessionId = `api-shutdown-${Date.now()}`;
    const start = await fetch(`${own.url}/api/v1/sessions/${sessionId}/turns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify({ workspace: dir, servers: { inlineSpecs: [spec()] } }),
    });
    const started = (await start.json()) as Json;
    const inFlight = fetch(`${own.url}${started.links.calls}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close', ...AUTH },
      body: JSON.stringify({
        id: 'toolu_shutdown',
        name: 'mcp__fixture__slow',
        arguments: { ms: 1200, tag: 'shutdown' },
      }),
    });
    await waitUntil(
      'the slow call to start',
      async () => (await executions((l) => l.args.tag === 'shutdown')) === 1,
      10_000,
    );
    const stream = await fetch(`${own.url}/api/v1/sessions/${sessionId}/events`, { headers: AUTH });
    const streamEnded = (async () => {
      for await (const chunk of stream.body as unknown as AsyncIterable<Uint8Array>) void chunk;
      return 'ended';
    })();
    const closed = own.close();
    const res = await inFlight;
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as Json).outcome.content[0].text, 'slept 1200 ms');
    await within(5000, 'the server to close', closed);
    assert.equal(
      await within(5000, 'the event stream to end', streamEnded),
      'ended',
      'an open event stream does not hold the shutdown',
    );
    await assert.rejects(fetch(`${own.url}/healthz`), /fetch failed/);
    await turns.endTurn(started.turnId);
  });
});
