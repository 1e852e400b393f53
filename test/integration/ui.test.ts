/**
 * The Temporal Web UI: a finished turn opened in a real browser shows each
 * `callTool` activity labelled with its tool name (the activity summary) and, through the project's
 * codec server, the decoded tool results. Payloads are encrypted with a test key, so the result
 * text (and the summaries) can only appear on the page if the UI decoded them through our codec
 * server. Its User Metadata tab shows the turn's summary and the current details of its calls.
 *
 * Needs Debian's `chromium` at /usr/bin/chromium (DMCP_CHROMIUM overrides); `.ci/run` installs it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import proto, { type temporal } from '@temporalio/proto';
import { chromium, type Browser, type Page } from 'playwright-core';
import { TurnClient } from '../../client/turnClient.js';
import { startDevServer, type DevServer } from '../../dev/devServer.js';
import { startCodecServer, type CodecServer } from '../../payloads/codecServer.js';
import { createDataConverter } from '../../payloads/dataConverter.js';
import { fixtureServer, startHarness, tempDir } from '../support/harness.js';
import { textOf } from '../support/content.js';

const CHROMIUM = process.env.DMCP_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const TOOL = 'mcp__fixture__echo';
const SHOT = (name: string) => join(tmpdir(), `dmcp-ui-${name}.png`);

/** Event IDs of each callTool activity: when it was scheduled and when it completed. */
function callToolEvents(history: temporal.api.history.v1.IHistory): { scheduled: string; completed: string }[] {
  const events = history.events ?? [];
  const scheduled = events
    .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callTool')
    .map((e) => String(e.eventId));
  return scheduled.map((id) => {
    const done = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === id);
    assert.ok(done, `callTool scheduled at event ${id} completed`);
    return { scheduled: id, completed: String(done.eventId) };
  });
}

describe('Temporal UI: a finished turn with tool-name summaries and decoded results', { timeout: 90_000 }, () => {
  const stops: (() => Promise<unknown>)[] = [];
  let dev: DevServer;
  let codec: CodecServer;
  let client: TurnClient;
  let browser: Browser | undefined;
  let workspace: string;

  before(async () => {
    if (!existsSync(CHROMIUM)) return; // the test fails with the install hint
    workspace = await tempDir('dmcp-ui-');
    stops.push(() => rm(workspace, { recursive: true, force: true }));
    const dataConverter = createDataConverter({
      payloadDir: join(workspace, 'payloads'),
      encryptionKey: randomBytes(32).toString('base64'),
    });
    // Started first: the UI learns the codec endpoint when the dev server starts.
    codec = await startCodecServer({
      codecs: dataConverter.payloadCodecs ?? [],
      externalStorage: dataConverter.externalStorage,
    });
    stops.push(() => codec.close());
    dev = await startDevServer({ codecEndpoint: codec.url, headless: false });
    stops.push(() => dev.stop());

    const harness = await startHarness('ui', {}, { address: dev.address, dataConverter });
    stops.push(() => harness.stop());
    client = harness.client;
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });

  test('each callTool activity shows mcp__fixture__echo and a decoded result', async () => {
    assert.ok(
      existsSync(CHROMIUM),
      `Chromium is not installed at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (Debian; as root), or set DMCP_CHROMIUM to a Chromium binary`,
    );
    const marker = randomBytes(4).toString('hex');
    const texts = [`ui-first-${marker}`, `ui-second-${marker}`];
    const sessionId = `ui-${Date.now()}`;
    const result = await client.runBatch({
      sessionId,
      workspace,
      servers: { inlineSpecs: [`fixture:${process.execPath} ${fixtureServer}`] },
      calls: texts.map((text, i) => [{ id: `call-${i + 1}`, name: TOOL, arguments: { text } }]),
    });
    assert.deepEqual(
      result.calls.map((c) => textOf(c.outcome.content[0])),
      texts,
    );
    const handle = client.client.workflow.getHandle(result.turnId);
    const { runId } = await handle.describe();
    const raw = await handle.fetchHistory();
    const calls = callToolEvents(raw);
    assert.equal(calls.length, 2, 'two callTool activities in history');
    // The control: without the codec server nothing in history shows the text.
    const rawBytes = Buffer.from(proto.temporal.api.history.v1.History.encode(raw).finish());
    for (const text of texts) assert.ok(!rawBytes.includes(text), `the raw history holds "${text}" in plaintext`);
    // Summaries are payloads too, so they are encrypted: the UI can only show them through the codec server.
    for (const e of raw.events ?? []) {
      const summary = e.activityTaskScheduledEventAttributes ? e.userMetadata?.summary : undefined;
      if (summary)
        assert.equal(Buffer.from(summary.metadata?.encoding ?? new Uint8Array()).toString(), 'binary/dmcp-aes256gcm');
    }
    assert.ok(!rawBytes.includes(TOOL), 'the raw history holds the summaries in plaintext');

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    const page: Page = await (await browser.newContext({ viewport: { width: 1600, height: 1200 } })).newPage();
    let decodeRequests = 0;
    page.on('request', (req) => {
      if (req.method() === 'POST' && req.url().startsWith(`${codec.url}/decode`)) decodeRequests += 1;
    });
    const url = `${dev.uiAddress}/namespaces/default/workflows/${encodeURIComponent(result.turnId)}/${runId}/history`;
    const row = (eventId: string) => page.locator(`tr[data-testid="event-summary-row"][data-eventid="${eventId}"]`);
    try {
      await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 30_000 });

      // The event list: each callTool's Activity Task Scheduled row carries the summary.
      for (const call of calls) {
        // The summary appears once the UI has decoded it; wait for that, not just for the row.
        await row(call.scheduled).filter({ hasText: TOOL }).waitFor({ timeout: 30_000 });
        const text = await row(call.scheduled).innerText();
        assert.match(text, /Activity Task Scheduled/, `event ${call.scheduled}: ${text}`);
        assert.match(text, /callTool/, `event ${call.scheduled}: ${text}`);
        assert.match(text, new RegExp(`Summary\\s+${TOOL}`), `event ${call.scheduled} shows the summary: ${text}`);
      }
      // The timeline labels each activity "<type> • <summary>".
      const labels = page.locator('svg text', { hasText: `callTool • ${TOOL}` });
      await labels.first().waitFor({ timeout: 10_000 });
      assert.equal(await labels.count(), 2, 'two callTool activities in the timeline, each with its summary');

      // Expanding the first call's Activity Task Completed row shows its decoded result in full.
      await row(calls[0]!.completed).click();
      const expanded = row(calls[0]!.completed).locator(
        'xpath=following-sibling::tr[1][@data-testid="event-summary-row-expanded"]',
      );
      // The expanded group also shows the call's input (the same text as arguments): read the result's own block.
      const resultBlock = expanded.locator('.cm-content', { hasText: '"status"' });
      await resultBlock.filter({ hasText: texts[0]! }).waitFor({ timeout: 15_000 });
      const shown = await resultBlock.innerText();
      assert.match(shown, /"status":\s*"ok"/, shown);
      assert.ok(shown.includes(`"text": "${texts[0]}"`), `the decoded result is shown: ${shown}`);
      assert.ok(decodeRequests > 0, 'the UI decoded the payloads through the codec server');
      await page.screenshot({ path: SHOT('history'), fullPage: true });

      // The turn's user metadata: its summary (decoded through the codec server too) and the current
      // details the workflow keeps, rendered as Markdown: a list with one row per call.
      await page.getByText('User Metadata', { exact: true }).click();
      const rendered = page.locator('iframe[title="output"]');
      await rendered
        .first()
        .contentFrame()
        .getByText(`session ${sessionId} · servers fixture`)
        .waitFor({ timeout: 15_000 });
      const callRows = rendered.last().contentFrame().locator('li', { hasText: TOOL });
      await callRows.first().waitFor({ timeout: 15_000 });
      assert.equal(await callRows.count(), 2, 'the current details list both calls');
      assert.match(await callRows.first().innerText(), new RegExp(`call-2 ${TOOL} ok`));
      await page.screenshot({ path: SHOT('metadata'), fullPage: true });
    } catch (err) {
      await page.screenshot({ path: SHOT('failure'), fullPage: true }).catch(() => undefined);
      throw new Error(`${(err as Error).message}\n(page ${url}; screenshot ${SHOT('failure')})`, { cause: err });
    }
  });
});
