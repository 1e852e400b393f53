/**
 * Schemathesis (PyPI) fuzzes the API from its own OpenAPI document, against a real worker and a
 * real Temporal dev server: no answer may be a 5xx, and every answer must match the document
 * (status code, content type, headers, body schema). The event stream is left out: it never ends.
 * Runs on a Temporal server of its own (a few seconds to start), so it never meets other tests' turns.
 * Installed by .ci/run into .tools/schemathesis (a virtualenv).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { startApiServer, type RunningApi } from '../../api/server.js';
import { startDevServer, type DevServer } from '../../dev/devServer.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { startHarness, tempDir, type Harness } from '../support/harness.js';

const schemathesis = fileURLToPath(new URL('../../../.tools/schemathesis/bin/schemathesis', import.meta.url));

describe('fuzzing the API from its OpenAPI document (Schemathesis)', () => {
  let h: Harness;
  let api: RunningApi;
  let dir: string;
  const logs: string[] = [];
  let server: DevServer;
  before(async () => {
    dir = await tempDir('dmcp-api-fuzz-');
    // Its own Temporal server: generated session IDs ("0", the document's "agent-7") would otherwise
    // meet turns of earlier runs whose workers are gone, which rightly answer 503.
    server = await startDevServer({ headless: true });
    h = await startHarness('api-fuzz', {}, { address: server.address });
    api = await startApiServer({
      host: '127.0.0.1', port: 0, logger: pino({ level: 'info' }, { write: (l: string) => void logs.push(l) }), turns: h.client, tokens: [],
      // Generated turns name random commands and files: none of them may run.
      boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
      maxBodyBytes: 64 * 1024, callWaitMs: 2000, shapeLimits: DEFAULT_SHAPE_LIMITS,
    });
  });
  after(async () => {
    await api?.close();
    await h?.stop();
    await server?.stop();
  });

  test('no 5xx, and every answer matches its schema', { timeout: 600_000 }, async () => {
    assert.ok(existsSync(schemathesis), `Schemathesis is not installed at ${schemathesis}: python3 -m venv .tools/schemathesis && .tools/schemathesis/bin/pip install 'schemathesis>=4,<5' (.ci/run does this)`);
    const result = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(
        schemathesis,
        [
          'run', `${api.url}/api/v1/openapi.json`,
          '--checks', 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance',
          '--exclude-path-regex', '/events$',
          '--max-examples', process.env.DMCP_FUZZ_EXAMPLES ?? '25',
          '--request-timeout', '30',
          '--seed', '1',
          '--generation-database', 'none',
          '--report', 'junit', '--report-dir', join(dir, 'report'),
          '--no-color',
        ],
        { timeout: 540_000, maxBuffer: 16 * 1024 * 1024, cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir } },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
      );
    });
    assert.equal(result.code, 0, result.out.slice(-6000));
    const answered = logs.map((l) => JSON.parse(l) as { msg: string; status?: number }).filter((l) => l.msg === 'request');
    assert.ok(answered.length > 50, `Schemathesis sent requests (${answered.length} answered)`);
    assert.equal(answered.filter((l) => (l.status ?? 0) >= 500).length, 0);
  });
});
