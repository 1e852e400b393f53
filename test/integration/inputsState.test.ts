/**
 * A 2026-07-28 server's `requestState` is recorded as it came or not at all: the next attempt must
 * send it back byte for byte, so one that holds a secret the server was given (plain or encoded),
 * and one past the size bound, end the call instead of reaching history. Real Temporal, the 2026
 * fixture over stdio, given the secret with `envFrom`.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { encodedForms } from '../../config/secrets.js';
import { MAX_REQUEST_STATE_BYTES } from '../../contract/index.js';
import { historyTexts, text } from '../support/inputs.js';
import { startHarness, tempDir, type Harness } from '../support/harness.js';

const modernFixture = fileURLToPath(new URL('../fixtures/modernServer.js', import.meta.url));

describe('the request state of a 2026-07-28 server', { timeout: 120_000 }, () => {
  const secret = `state-${randomBytes(32).toString('hex')}`;
  let h: Harness;
  let dir: string;
  let config: string;

  before(async () => {
    dir = await tempDir('dmcp-inputs-state-');
    h = await startHarness('inputs-state', { DMCP_MCP_ENV: 'STATE_SECRET', STATE_SECRET: secret });
    config = join(dir, 'mcp.json');
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: {
          modern: {
            command: process.execPath,
            args: [modernFixture, 'stdio', '--legacy', 'reject'],
            envFrom: { MY_SECRET: 'STATE_SECRET' },
          },
        },
      }),
    );
  });
  after(async () => {
    await h?.stop();
  });

  // A short input limit: a state that was wrongly kept asks a question nobody answers, and the call then goes on.
  const startTurn = (name: string) =>
    h.client.startTurn({
      sessionId: `${name}-${randomBytes(4).toString('hex')}`,
      workspace: dir,
      servers: { mcpConfigFiles: [config] },
      limits: { inputTimeoutMs: 2000 },
    });

  test("a request state holding a secret the server was given is refused, plain or base64-encoded, and the turn's history holds no trace of it", async () => {
    const turn = await startTurn('state-secret');
    assert.equal(turn.status.servers[0]?.state, 'ready', turn.status.servers[0]?.error);
    for (const encoding of ['plain', 'base64']) {
      const outcome = await turn.callTool({
        id: `stash-${encoding}`,
        name: 'mcp__modern__stash_env',
        arguments: { name: 'MY_SECRET', encoding },
      });
      assert.equal(outcome.status, 'error', `${encoding}: the call went on (${text(outcome)})`);
      assert.equal(outcome.errorKind, 'bad_request', outcome.errorMessage);
      assert.match(
        outcome.errorMessage ?? '',
        /mcp__modern__stash_env: the server put a credential it was given into its request state .*it was not recorded, and the call ends here/,
      );
    }
    assert.deepEqual(await turn.pendingInputs(), [], 'nobody was asked');
    await turn.end();

    const { raw, payloads } = await historyTexts(h.client, turn.turnId);
    // The search must see the calls, or finding nothing proves nothing.
    assert.ok(
      payloads.some((t) => t.includes('put a credential it was given into its request state')),
      'decoded payloads hold the outcomes',
    );
    assert.ok(
      payloads.some((t) => t.includes('"encoding":"base64"')),
      'decoded payloads hold the call inputs',
    );
    for (const form of [secret, ...encodedForms(secret)]) {
      assert.ok(
        !raw.includes(form) && !payloads.some((t) => t.includes(form)),
        `the secret (as ${form.slice(0, 12)}...) is in history`,
      );
    }
  });

  test(`a request state past ${MAX_REQUEST_STATE_BYTES} bytes is refused naming the bound; one at the bound is kept and sent back whole`, async () => {
    const turn = await startTurn('state-size');
    const confirm = { inputPollMs: 200, onInput: () => ({ action: 'accept' as const, content: { confirm: true } }) };
    const atBound = await turn.callTool(
      { id: 'at-bound', name: 'mcp__modern__big_state', arguments: { bytes: MAX_REQUEST_STATE_BYTES } },
      confirm,
    );
    assert.equal(atBound.status, 'ok', atBound.errorMessage);
    assert.equal(text(atBound), `state of ${MAX_REQUEST_STATE_BYTES} bytes came back`);

    const over = await turn.callTool(
      { id: 'over', name: 'mcp__modern__big_state', arguments: { bytes: MAX_REQUEST_STATE_BYTES + 1 } },
      confirm,
    );
    assert.equal(over.status, 'error', `the call went on (${text(over)})`);
    assert.equal(over.errorKind, 'bad_request', over.errorMessage);
    assert.match(
      over.errorMessage ?? '',
      new RegExp(
        `request state is ${MAX_REQUEST_STATE_BYTES + 1} bytes, past the ${MAX_REQUEST_STATE_BYTES} bytes \\(64 KiB\\) a call may record`,
      ),
    );
    assert.deepEqual(await turn.pendingInputs(), [], 'nobody was asked');
    await turn.end();
  });
});
