/**
 * Schemathesis (PyPI) fuzzes the API from its own OpenAPI document, against a real worker and a
 * real Temporal dev server, with every check (`--checks all`: auth that is missing or wrong must be
 * refused, schema-valid input accepted and invalid input refused, every answer as documented, the
 * event stream's events included) and every phase, the stateful one too, with a token configured
 * as DMCP_API_TOKENS. Then a short run with the data dir's own token, as `dev` serves: the same
 * server but for where its token comes from, so it needs only to show that token accepted and
 * others refused.
 * Runs on a Temporal server of its own (a few seconds to start), so it never meets other tests' turns.
 * Installed by .ci/run into .tools/schemathesis (a virtualenv).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type RunningApi } from '../../api/server.js';
import { resolveApiAuth } from '../../cli/api.js';
import { startDevServer, type DevServer } from '../../dev/devServer.js';
import { loadSettings } from '../../settings/index.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { startHarness, tempDir, type Harness } from '../support/harness.js';

const schemathesis =
  process.env.DMCP_SCHEMATHESIS ??
  fileURLToPath(new URL('../../../.tools/schemathesis/bin/schemathesis', import.meta.url));

/**
 * What the checks are told beyond the document. An event stream never ends, so each read of one
 * stops after a few quiet seconds. A shelf entry the schema admits can still be refused for what it
 * says (a literal credential, a `${VAR}` the workers cannot resolve): 422, which counts as accepting
 * well-formed input. A body over DMCP_API_MAX_BODY is refused with 413 before it is parsed.
 */
const CONFIG = `
[[operations]]
include-path-regex = "/events$"
request-timeout = 3

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "401", "403", "404", "409", "422", "429"]

[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]
`;

describe('fuzzing the API from its OpenAPI document (Schemathesis, every check)', { timeout: 1_500_000 }, () => {
  let h: Harness;
  let server: DevServer;
  before(async () => {
    // Its own Temporal server: generated session IDs ("0", the document's "agent-7") would otherwise
    // meet turns of earlier runs whose workers are gone, which rightly answer 503.
    server = await startDevServer({ headless: true });
    h = await startHarness('api-fuzz', {}, { address: server.address });
  });
  after(async () => {
    await h?.stop();
    await server?.stop();
  });

  /** `full`: every phase at DMCP_FUZZ_EXAMPLES examples; `short`: the documented examples and a few generated ones. */
  const fuzz = async (mode: 'configured' | 'dataDir', run: 'full' | 'short') => {
    assert.ok(
      existsSync(schemathesis),
      `Schemathesis is not installed at ${schemathesis}: python3 -m venv .tools/schemathesis && .tools/schemathesis/bin/pip install 'schemathesis==4.32.5' (.ci/run does this)`,
    );
    const dir = await tempDir(`dmcp-api-fuzz-${mode}-`);
    const logs: string[] = [];
    let token: string;
    let tokens;
    if (mode === 'configured') {
      token = randomBytes(24).toString('hex');
      tokens = parseTokens(`${hashToken(token)} * shelf`, 'DMCP_API_TOKENS');
    } else {
      const auth = await resolveApiAuth(loadSettings({ DMCP_DATA_DIR: join(dir, 'data') }));
      tokens = auth.tokens;
      token = (await readFile(auth.tokenFile!, 'utf8')).trim();
    }
    let api: RunningApi | undefined;
    try {
      api = await startApiServer({
        host: '127.0.0.1',
        port: 0,
        logger: pino({ level: 'info' }, { write: (l: string) => void logs.push(l) }),
        turns: h.client,
        tokens,
        tokenSource: mode,
        // Generated turns name random commands and files: none of them may run.
        boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
        maxBodyBytes: 64 * 1024,
        callWaitMs: 2000,
        shapeLimits: DEFAULT_SHAPE_LIMITS,
        // Shelf changes are signed (and so accepted); no turn may name an agent outside the roots, so none runs them.
        shelf: { turnKey: randomBytes(32), env: {}, timeoutMs: 10_000 },
      });
      await writeFile(join(dir, 'schemathesis.toml'), CONFIG);
      const result = await new Promise<{ code: number; out: string }>((resolve) => {
        execFile(
          schemathesis,
          [
            'run',
            `${api!.url}/api/v1/openapi.json`,
            '--checks',
            'all',
            '-H',
            `Authorization: Bearer ${token}`,
            '--max-examples',
            run === 'full' ? (process.env.DMCP_FUZZ_EXAMPLES ?? '25') : '3',
            ...(run === 'full' ? [] : ['--phases', 'examples,fuzzing']),
            '--request-timeout',
            '30',
            '--seed',
            '1',
            '--generation-database',
            'none',
            '--report',
            'junit',
            '--report-dir',
            join(dir, 'report'),
            '--no-color',
          ],
          { timeout: 700_000, maxBuffer: 64 * 1024 * 1024, cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir } },
          (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
        );
      });
      // A failure's reproduction can hold a body of many kilobytes: show the summary and the failures' headings.
      const summary = result.out.slice(result.out.indexOf('SUMMARY'));
      const headings = result.out
        .split('\n')
        .filter((l) => /^(_{3,} |- ST\d+|\s+Expected|\s+Invalid component|\[\d{3}\])/.test(l))
        .join('\n');
      assert.equal(result.code, 0, `${headings.slice(0, 8000)}\n${summary.slice(0, 4000)}`);
      if (run === 'full') assert.match(result.out, /Stateful/, 'the stateful phase ran');
      const answered = logs
        .map((l) => JSON.parse(l) as { msg: string; status?: number })
        .filter((l) => l.msg === 'request');
      assert.ok(answered.length > 50, `Schemathesis sent requests (${answered.length} answered)`);
      assert.ok(
        answered.some((l) => (l.status ?? 0) >= 200 && (l.status ?? 0) < 300),
        'requests with the token were accepted',
      );
      assert.equal(answered.filter((l) => (l.status ?? 0) >= 500).length, 0);
      assert.ok(
        answered.some((l) => l.status === 401),
        'requests without the token were sent, and refused',
      );
      assert.ok(
        logs.every((l) => !l.includes(token)),
        'the token is never logged',
      );
    } finally {
      await api?.close();
    }
  };

  test('with a token configured in DMCP_API_TOKENS', { timeout: 750_000 }, () => fuzz('configured', 'full'));
  test("with the data dir's token (as dev serves): accepted, and others refused", { timeout: 750_000 }, () =>
    fuzz('dataDir', 'short'),
  );
});
