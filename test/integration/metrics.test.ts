import assert from 'node:assert/strict';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { installRuntime } from '../../worker/runtimeLogger.js';
import { fixtureServer, startHarness, tempDir, waitFor, writeMcpJson, type Harness } from '../support/harness.js';

/** One sample of a Prometheus text exposition: `name{labels} value`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** Inodes of the TCP sockets this process listens on (from /proc; other processes' are not counted). */
function listeningSockets(): Set<string> {
  const own = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) own.add(m[1]!);
    } catch {
      // Closed while we looked.
    }
  }
  const listening = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const row of text.split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      // Column 3 is the state (0A: LISTEN), column 9 the inode.
      if (cols[3] === '0A' && own.has(cols[9]!)) listening.add(cols[9]!);
    }
  }
  return listening;
}

describe('metrics on DMCP_METRICS_PORT', () => {
  let h: Harness;
  let dir: string;
  let spec: string;
  let url: string;
  let socketsBefore: Set<string>;
  let socketsWithMetrics: Set<string>;

  before(async () => {
    // The runtime is per process: installed with its exporter before any harness installs it without.
    await installRuntime({ logger: pino({ level: 'silent' }), metrics: true });
    dir = await tempDir();
    spec = `fixture:${process.execPath} ${fixtureServer}`;
    socketsBefore = listeningSockets();
    h = await startHarness('metrics', { DMCP_METRICS_PORT: '0' });
    socketsWithMetrics = listeningSockets();
    assert.ok(h.worker.metrics, 'the worker serves metrics');
    url = h.worker.metrics.url;
  });
  after(async () => {
    await h?.stop();
  });

  test('a turn with ok, tool-error and bad-request calls is counted per server, tool and outcome; latency and size are histograms', async () => {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, 'loopback by default');
    const sessionId = `metrics-${Date.now()}`;
    const turn = await h.client.startTurn({ sessionId, workspace: dir, servers: { inlineSpecs: [spec] } });
    await turn.callTool({ id: 'c1', name: 'mcp__fixture__echo', arguments: { text: 'hello' } });
    await turn.callTool({ id: 'c2', name: 'mcp__fixture__echo', arguments: { text: 'héllo wörld' } });
    const failed = await turn.callTool({ id: 'c3', name: 'mcp__fixture__fail', arguments: { reason: 'nope' } });
    assert.equal(failed.isError, true);
    const bad = await turn.callTool({ id: 'c4', name: 'mcp__fixture__bad_request', arguments: {} });
    assert.equal(bad.status, 'error');
    await turn.end();

    const text = await scrape(url);
    const echo = { server: 'fixture', tool: 'echo' };
    assert.equal(sample(text, 'dmcp_tool_calls_total', { ...echo, outcome: 'ok' }), 2);
    assert.equal(sample(text, 'dmcp_tool_calls_total', { server: 'fixture', tool: 'fail', outcome: 'tool_error' }), 1);
    assert.equal(
      sample(text, 'dmcp_tool_calls_total', { server: 'fixture', tool: 'bad_request', outcome: 'bad_request' }),
      1,
    );
    assert.equal(
      sample(text, 'dmcp_tool_calls_total', { ...echo, outcome: 'transport' }),
      undefined,
      'no outcome that did not happen',
    );

    assert.equal(sample(text, 'dmcp_tool_call_duration_seconds_count', echo), 2);
    assert.equal(sample(text, 'dmcp_tool_call_duration_seconds_bucket', { ...echo, le: '+Inf' }), 2);
    assert.equal(
      sample(text, 'dmcp_tool_call_duration_seconds_bucket', { ...echo, le: '300' }),
      2,
      'a local echo takes far less than 5 min',
    );
    assert.equal(sample(text, 'dmcp_tool_call_duration_seconds_bucket', { ...echo, le: '0.005' }) !== undefined, true);
    const sum = sample(text, 'dmcp_tool_call_duration_seconds_sum', echo)!;
    assert.ok(sum > 0 && sum < 10, `latency sum ${sum} s`);
    assert.equal(
      sample(text, 'dmcp_tool_call_duration_seconds_count', { server: 'fixture', tool: 'bad_request' }),
      1,
      'failed calls have a latency too',
    );

    // 'hello' is 5 bytes, 'héllo wörld' 13 in UTF-8.
    assert.equal(sample(text, 'dmcp_tool_result_bytes_sum', echo), 18);
    assert.equal(sample(text, 'dmcp_tool_result_bytes_bucket', { ...echo, le: '64' }), 2);
    assert.equal(
      sample(text, 'dmcp_tool_result_bytes_count', { server: 'fixture', tool: 'bad_request' }),
      undefined,
      'a refused call has no result',
    );

    assert.equal(sample(text, 'dmcp_server_starts_total', { server: 'fixture', result: 'ready' }), 1);
    assert.equal(sample(text, 'dmcp_servers', { server: 'fixture', state: 'ready' }), 1);
    assert.ok(!text.includes(sessionId), 'no session ID in any label');

    // The Temporal SDK's own worker metrics are on the same scrape.
    const own = { task_queue: h.worker.workerQueue };
    assert.equal(
      sample(text, 'temporal_worker_task_slots_available', { ...own, worker_type: 'ActivityWorker' }),
      100,
      'SDK task slots of the call poller',
    );
    // The side-effecting calls were dispatched eagerly through the shared queue: listTools is the one sure to use the worker's own.
    assert.ok(
      (sample(text, 'temporal_activity_schedule_to_start_latency_seconds_count', own) ?? 0) >= 1,
      'SDK activity schedule-to-start latency: listTools',
    );
    assert.ok(
      (sample(text, 'temporal_workflow_task_schedule_to_start_latency_seconds_count', { task_queue: h.taskQueue }) ??
        0) >= 1,
      'SDK workflow task schedule-to-start latency',
    );
    assert.ok(sample(text, 'dmcp_nodejs_eventloop_lag_seconds') !== undefined, 'process metrics');
  });

  test('a crashed server restarted by the next turn is counted; servers by state follow', async () => {
    const sessionId = `restart-${Date.now()}`;
    const first = await h.client.startTurn({
      sessionId,
      workspace: dir,
      servers: { inlineSpecs: [spec.replace('fixture:', 'crashy:')] },
    });
    await first.callTool({ id: 'r1', name: 'mcp__crashy__echo', arguments: { text: 'up' } });
    await first.end();
    const pid = h.worker.pool.pids(sessionId).crashy;
    assert.ok(pid, 'the server has a process');
    process.kill(-pid, 'SIGKILL');
    assert.ok(
      await waitFor(
        async () => sample(await scrape(url), 'dmcp_servers', { server: 'crashy', state: 'failed' }) === 1,
        10_000,
      ),
      'the dead server shows as failed',
    );
    const second = await h.client.startTurn({
      sessionId,
      workspace: dir,
      servers: { inlineSpecs: [spec.replace('fixture:', 'crashy:')] },
    });
    await second.callTool({ id: 'r2', name: 'mcp__crashy__echo', arguments: { text: 'again' } });
    await second.end();
    const text = await scrape(url);
    assert.equal(sample(text, 'dmcp_server_restarts_total', { server: 'crashy' }), 1);
    assert.equal(sample(text, 'dmcp_server_starts_total', { server: 'crashy', result: 'ready' }), 2);
    assert.equal(sample(text, 'dmcp_servers', { server: 'crashy', state: 'ready' }), 1);
    assert.equal(
      sample(text, 'dmcp_servers', { server: 'crashy', state: 'failed' }),
      undefined,
      'the old state is gone',
    );
    assert.equal(sample(text, 'dmcp_server_start_duration_seconds_count', { server: 'crashy' }), 2);
  });

  test('retries of a safe call are counted, each attempt with its outcome', async () => {
    const file = join(dir, 'mcp.json');
    // A 2 s tool timeout gives a 1 s MCP request timeout; read_slow is read-only, so it is retried.
    await writeMcpJson(file, { slowpoke: { command: process.execPath, args: [fixtureServer], toolTimeout: 2 } });
    const turn = await h.client.startTurn({
      sessionId: `retry-${Date.now()}`,
      workspace: dir,
      servers: { mcpConfigFiles: [file] },
    });
    const outcome = await turn.callTool({ id: 't1', name: 'mcp__slowpoke__read_slow', arguments: { ms: 5000 } });
    assert.equal(outcome.status, 'error');
    await turn.end();
    const text = await scrape(url);
    const labels = { server: 'slowpoke', tool: 'read_slow' };
    // The first attempt is the fast path's (a local activity); the regular activity has the other two.
    assert.equal(sample(text, 'dmcp_tool_calls_total', { ...labels, outcome: 'timeout' }), 3, 'three attempts');
    assert.equal(sample(text, 'dmcp_tool_call_retries_total', labels), 1, 'one Temporal retry of the regular activity');
  });

  test('every metric the Grafana dashboard queries is on the scrape', async () => {
    const dashboard = JSON.parse(
      readFileSync(fileURLToPath(new URL('../../../deploy/grafana/durable-mcp.json', import.meta.url)), 'utf8'),
    ) as {
      panels: { targets?: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
    const names = new Set(exprs.flatMap((e) => e.match(/\b(?:dmcp|temporal)_[a-z0-9_]+/g) ?? []));
    assert.ok(names.size >= 10, `the dashboard names ${names.size} metrics`);
    const text = await scrape(url);
    const missing = [...names].filter((n) => !new RegExp(`^${n}[{ ]`, 'm').test(text));
    assert.deepEqual(missing, []);
  });

  test('with DMCP_METRICS_PORT unset the worker serves no metrics and opens no port', async () => {
    assert.equal(
      socketsWithMetrics.size,
      socketsBefore.size + 1,
      'the metrics worker opened exactly one listening socket',
    );
    const quietBefore = listeningSockets();
    const quiet = await startHarness('metrics-off', {});
    try {
      assert.equal(quiet.worker.metrics, undefined);
      const after = listeningSockets();
      assert.deepEqual(
        [...after].filter((s) => !quietBefore.has(s)),
        [],
        'no new listening socket',
      );
    } finally {
      await quiet.stop();
    }
  });
});
