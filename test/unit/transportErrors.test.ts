import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SseError,
} from '@modelcontextprotocol/client';
import type { ServerEntry } from '../../config/types.js';
import {
  classifyPingFailure,
  describeRemoteError,
  lostOnWire,
  redact,
  remoteSecrets,
  summarizeBody,
} from '../../mcp/httpTransport.js';

function refused(port: number): TypeError {
  const cause = Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:${port}`), { code: 'ECONNREFUSED' });
  return new TypeError('fetch failed', { cause });
}

function entry(url: string): ServerEntry {
  return {
    name: 'web',
    layer: 'explicit',
    source: 'test',
    trusted: true,
    type: 'http',
    args: [],
    env: {},
    envFrom: {},
    headers: {},
    url,
    enabled: true,
  };
}

/** What the Streamable HTTP transport throws for a POST the server refused. */
function refusedPost(status: number, text: string): SdkHttpError {
  return new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${text}`, {
    status,
    text,
  });
}

describe('describeRemoteError: the cause a failed remote server shows in the status', () => {
  const cases: Array<[string, unknown, Parameters<typeof describeRemoteError>[1], string]> = [
    [
      'Streamable HTTP 401 with the body the tracker saw',
      refusedPost(401, 'unauthorized'),
      { kind: 'http', status: 401, text: 'unauthorized' },
      'HTTP 401: unauthorized',
    ],
    [
      'Streamable HTTP 403 without tracker detail',
      refusedPost(403, 'forbidden'),
      undefined,
      'HTTP 403: Error POSTing to endpoint: forbidden',
    ],
    [
      'SSE stream refused with 401',
      new SseError(401, 'Non-200 status code (401)', {} as never),
      { kind: 'http', status: 401, text: 'unauthorized' },
      'HTTP 401: unauthorized',
    ],
    [
      'SSE POST failure text',
      new Error('Error POSTing to endpoint (HTTP 404): session not found'),
      { kind: 'http', status: 404, text: 'session not found' },
      'HTTP 404: session not found',
    ],
    [
      'refused connection (fetch cause chain)',
      refused(4000),
      undefined,
      'connection refused: connect ECONNREFUSED 127.0.0.1:4000',
    ],
    [
      'refused connection flattened into an SSE message',
      new Error('SSE error: TypeError: fetch failed: connect ECONNREFUSED 127.0.0.1:9'),
      undefined,
      'connection refused: SSE error: TypeError: fetch failed: connect ECONNREFUSED 127.0.0.1:9',
    ],
    [
      'generic message, tracker knows better',
      new Error('fetch failed'),
      { kind: 'network', text: 'connection reset: read ECONNRESET' },
      'connection reset: read ECONNRESET',
    ],
    [
      'a deadline keeps its own words',
      new Error('timed out after 10s during handshake'),
      { kind: 'network', text: 'x' },
      'timed out after 10s during handshake',
    ],
  ];
  for (const [name, err, last, expected] of cases) {
    test(name, () => assert.equal(describeRemoteError(err, last), expected));
  }
});

describe('classifyPingFailure', () => {
  const cases: Array<[string, unknown, ReturnType<typeof classifyPingFailure>]> = [
    ['ping timed out: maybe busy', new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'), 'slow'],
    ['connection closed', new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'), 'lost'],
    [
      'the server answered with a JSON-RPC error',
      new ProtocolError(ProtocolErrorCode.MethodNotFound, 'no ping'),
      'alive',
    ],
    ['session gone', refusedPost(404, 'session not found'), 'lost'],
    ['token no longer accepted', refusedPost(401, 'unauthorized'), 'lost'],
    ['gateway trouble', refusedPost(503, 'unavailable'), 'slow'],
    ['refused', refused(1), 'lost'],
    [
      'modern era: ping refused locally, never sent',
      new SdkError(SdkErrorCode.MethodNotSupportedByProtocolVersion, 'ping is not part of 2026-07-28'),
      'alive',
    ],
  ];
  for (const [name, err, expected] of cases) {
    test(name, () => assert.equal(classifyPingFailure(err), expected));
  }
});

describe('remote secrets never leave in errors', () => {
  test('header values, bearer tokens, URL user-info and query values are redacted', () => {
    const secrets = remoteSecrets(entry('https://alice:pa55word@example.com/mcp?key=query-secret&x=1'), {
      'X-Api-Key': 'header-secret-value',
      Authorization: 'Bearer token-value-123',
    });
    const text = 'failed with header-secret-value, token-value-123, pa55word, alice and query-secret (x=1)';
    assert.equal(
      redact(text, secrets),
      'failed with [redacted], [redacted], [redacted], [redacted] and [redacted] (x=1)',
    );
  });
});

describe('summarizeBody', () => {
  test('a JSON-RPC error body gives its message', () => {
    assert.equal(
      summarizeBody('{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID"},"id":null}'),
      'Bad Request: No valid session ID',
    );
  });
  test('text keeps its first non-empty line, capped', () => {
    assert.equal(summarizeBody('\n  unauthorized\nmore'), 'unauthorized');
    assert.equal(summarizeBody('x'.repeat(500)).length, 203);
    assert.equal(summarizeBody(undefined), '');
  });
});

test('lostOnWire: a call whose request failed on the wire gets the loss error; an answer or an HTTP status does not', () => {
  const reset = new TypeError('fetch failed', {
    cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
  });
  const rows: [string, unknown, string | undefined][] = [
    ['a bare fetch failure', new TypeError('fetch failed'), 'connection to MCP server "web" lost: fetch failed'],
    ['a reset connection', reset, 'connection to MCP server "web" lost: connection reset: read ECONNRESET'],
    [
      'a refused connection',
      refused(4000),
      'connection to MCP server "web" lost: connection refused: connect ECONNREFUSED 127.0.0.1:4000',
    ],
    ['an HTTP status', refusedPost(500, 'boom'), undefined],
    ['an answer from the server', new ProtocolError(ProtocolErrorCode.InvalidParams, 'bad'), undefined],
    ['any other error', new Error('the tool threw'), undefined],
  ];
  for (const [what, err, expected] of rows) {
    const lost = lostOnWire(err, 'web', undefined, (t) => t.replaceAll('4000', '****'));
    assert.equal(lost?.message, expected?.replaceAll('4000', '****'), what);
  }
});
