/**
 * The API reference page in a real browser (Debian's Chromium, through playwright-core): Swagger UI
 * from the package, under the page's own Content-Security-Policy, lists every operation by tag and
 * shows an example body drawn from the schema. Nothing is fetched from another origin.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { hashToken, parseTokens } from '../../api/auth.js';
import { startApiServer, type RunningApi } from '../../api/server.js';
import { DEFAULT_SHAPE_LIMITS } from '../../shaping/index.js';
import { startHarness, type Harness } from '../support/harness.js';

const CHROMIUM = process.env.DMCP_CHROMIUM ?? '/usr/bin/chromium';

let h: Harness;
let api: RunningApi;
let browser: Browser;

before(async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium, or set DMCP_CHROMIUM)`,
  );
  h = await startHarness('api-reference');
  api = await startApiServer({
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    turns: h.client,
    tokens: parseTokens(`${hashToken('reference-page-token-0123456789')} *`, 'DMCP_API_TOKENS'),
    boundary: { allowInline: false, allowedConfigDirs: [], workspaceRoots: [] },
    maxBodyBytes: 64 * 1024,
    callWaitMs: 20_000,
    shapeLimits: DEFAULT_SHAPE_LIMITS,
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
});

after(async () => {
  await browser?.close();
  await api?.close();
  await h?.stop();
});

test(
  'the reference page lists every operation by tag and shows example bodies, with nothing from another origin',
  { timeout: 120_000 },
  async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    const origins = new Set<string>();
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('request', (r) => origins.add(new URL(r.url()).origin));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(`${api.url}/api/v1/docs`);
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    const document = (await (await fetch(`${api.url}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const operations = Object.values(document.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    assert.equal(await page.locator('.opblock').count(), operations, 'one block per operation of the document');
    const tags = await page.locator('.opblock-tag').allTextContents();
    assert.ok(
      tags.some((t) => /turns/i.test(t)),
      `tags: ${tags.join(', ')}`,
    );
    const call = page.locator('.opblock-post', { hasText: '/api/v1/sessions/{sessionId}/turns/{turn}/calls' }).first();
    await call.locator('.opblock-summary').click();
    const example = await call
      .locator('.body-param__example, .highlight-code')
      .first()
      .textContent({ timeout: 10_000 });
    assert.match(example ?? '', /"id"[\s\S]*"name"/, 'the call body example shows its fields');
    assert.deepEqual([...origins], [api.url], 'every request goes to the API itself');
    assert.deepEqual(problems, [], 'no console error (a CSP refusal would be one)');
  },
);
