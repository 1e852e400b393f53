import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import pino from 'pino';
import { FailureType } from '../../contract/index.js';
import {
  createWorkerMetrics,
  outcomeOfFailure,
  outcomeOfResult,
  resultBytes,
  startMetricsServer,
  type CallOutcomeKind,
} from '../../worker/metrics.js';

const failures: [string, unknown, CallOutcomeKind][] = [
  [
    'bad request',
    ApplicationFailure.create({ type: FailureType.BadRequest, message: 'x', nonRetryable: true }),
    'bad_request',
  ],
  ['tool timeout', ApplicationFailure.create({ type: FailureType.ToolTimeout, message: 'x' }), 'timeout'],
  ['transport', ApplicationFailure.create({ type: FailureType.Transport, message: 'x' }), 'transport'],
  [
    'server unavailable',
    ApplicationFailure.create({ type: FailureType.ServerUnavailable, message: 'x', nonRetryable: true }),
    'transport',
  ],
  ['cancelled', new CancelledFailure('cancelled'), 'cancelled'],
  ['another failure type', ApplicationFailure.create({ type: 'Whatever', message: 'x' }), 'unknown'],
  ['a plain error', new Error('boom'), 'unknown'],
  ['not an error', 'string', 'unknown'],
];
for (const [what, err, kind] of failures) {
  void test(`a call that threw ${what} counts as ${kind}`, () => assert.equal(outcomeOfFailure(err), kind));
}

void test('a call that returned counts as ok or tool_error', () => {
  assert.equal(outcomeOfResult({ status: 'ok', content: [], isError: false }), 'ok');
  assert.equal(outcomeOfResult({ status: 'ok', content: [], isError: true }), 'tool_error');
  assert.equal(outcomeOfResult(undefined), 'ok');
});

const sizes: [string, unknown, number][] = [
  ['UTF-8 text', { content: [{ type: 'text', text: 'héllo' }] }, 6],
  [
    'base64 image data, decoded',
    { content: [{ type: 'image', data: Buffer.from('12345').toString('base64'), mimeType: 'image/png' }] },
    5,
  ],
  [
    'base64 with one pad',
    { content: [{ type: 'audio', data: Buffer.from('1234').toString('base64'), mimeType: 'audio/wav' }] },
    4,
  ],
  ['embedded text resource', { content: [{ type: 'resource', resource: { uri: 'x:', text: 'abc' } }] }, 3],
  [
    'embedded blob',
    { content: [{ type: 'resource', resource: { uri: 'x:', blob: Buffer.from('abcdef').toString('base64') } }] },
    6,
  ],
  [
    'a resource link, as JSON',
    { content: [{ type: 'resource_link', uri: 'x:', name: 'n' }] },
    JSON.stringify({ type: 'resource_link', uri: 'x:', name: 'n' }).length,
  ],
  ['structured content, as JSON', { content: [], structuredContent: { a: 1 } }, 7],
  ['nothing', { content: [] }, 0],
  ['no result', undefined, 0],
];
for (const [what, result, bytes] of sizes) {
  void test(`result bytes of ${what}: ${bytes}`, () => assert.equal(resultBytes(result), bytes));
}

void test('pool events and states reach the registry', async () => {
  const m = createWorkerMetrics({ defaultMetrics: false });
  m.observer.serverStarted?.('docs', 'ready', 250);
  m.observer.serverStarted?.('docs', 'failed', 10_000);
  m.observer.serverRestarted?.('docs');
  let states = [{ server: 'docs', state: 'ready' as const, count: 2 }];
  m.watchPool({ serverStates: () => states });
  let text = await m.registry.metrics();
  assert.match(text, /^dmcp_server_starts_total\{server="docs",result="ready"\} 1$/m);
  assert.match(text, /^dmcp_server_starts_total\{server="docs",result="failed"\} 1$/m);
  assert.match(text, /^dmcp_server_restarts_total\{server="docs"\} 1$/m);
  assert.match(text, /^dmcp_server_start_duration_seconds_bucket\{le="0\.25",server="docs"\} 1$/m);
  assert.match(text, /^dmcp_servers\{server="docs",state="ready"\} 2$/m);
  states = [];
  text = await m.registry.metrics();
  assert.doesNotMatch(text, /^dmcp_servers\{/m, 'a state no server is in is gone');
});

void test('the interceptor counts callTool attempts and ignores other activities', async () => {
  const m = createWorkerMetrics({ defaultMetrics: false });
  const ctx = (activityType: string, attempt: number) => ({ info: { activityType, attempt } }) as never;
  const input = { args: [{ server: 's', tool: 't' }], headers: {} };
  await m.interceptor(ctx('callTool', 1)).inbound!.execute!(input, async () => ({
    status: 'ok',
    content: [{ type: 'text', text: 'abc' }],
    isError: false,
  }));
  await assert.rejects(
    m.interceptor(ctx('callTool', 2)).inbound!.execute!(input, async () => {
      throw ApplicationFailure.create({ type: FailureType.ToolTimeout, message: 'slow' });
    }),
  );
  await m.interceptor(ctx('reconcileServers', 1)).inbound!.execute!(
    { args: [{ server: 'other', tool: 'x' }], headers: {} },
    async () => ({}),
  );
  const text = await m.registry.metrics();
  assert.match(text, /^dmcp_tool_calls_total\{server="s",tool="t",outcome="ok"\} 1$/m);
  assert.match(text, /^dmcp_tool_calls_total\{server="s",tool="t",outcome="timeout"\} 1$/m);
  assert.match(text, /^dmcp_tool_call_retries_total\{server="s",tool="t"\} 1$/m);
  assert.match(text, /^dmcp_tool_result_bytes_sum\{server="s",tool="t"\} 3$/m);
  assert.match(text, /^dmcp_tool_call_duration_seconds_count\{server="s",tool="t"\} 2$/m);
  assert.doesNotMatch(text, /server="other"/);
});

void test('the metrics server: /metrics only, GET only, and it still answers when the runtime endpoint is down', async () => {
  const m = createWorkerMetrics({ defaultMetrics: false });
  m.observer.serverRestarted?.('x');
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => void lines.push(l) });
  // Port 9 on loopback: nothing listens there.
  const server = await startMetricsServer({
    registry: m.registry,
    host: '127.0.0.1',
    port: 0,
    runtimeUrl: 'http://127.0.0.1:9/metrics',
    logger,
  });
  try {
    const ok = await fetch(server.url);
    assert.equal(ok.status, 200);
    const body = await ok.text();
    assert.match(body, /^dmcp_server_restarts_total\{server="x"\} 1$/m);
    assert.match(body, /^# the Temporal runtime metrics could not be read$/m);
    assert.equal(lines.length, 1, 'the failure is logged once');
    await fetch(server.url);
    assert.equal(lines.length, 1, 'not on every scrape');
    assert.equal((await fetch(server.url.replace('/metrics', '/'))).status, 404);
    assert.equal((await fetch(server.url, { method: 'POST' })).status, 405);
  } finally {
    await server.close();
  }
  await assert.rejects(
    startMetricsServer({ registry: m.registry, host: '256.0.0.1', port: 0, logger }),
    /DMCP_METRICS_PORT: cannot serve metrics on 256\.0\.0\.1:0/,
  );
});
