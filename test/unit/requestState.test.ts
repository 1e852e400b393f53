/** Whether a server's `requestState` may be recorded: as it came, or not at all. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scrubberFor } from '../../config/secrets.js';
import { MAX_REQUEST_STATE_BYTES } from '../../contract/index.js';
import { requestStateProblem } from '../../mcp/inputRequests.js';

const secret = 'tok-4f9a1c2e7b3d8e60';
const scrub = scrubberFor([secret]);

test('a state without a secret, up to the bound in UTF-8 bytes, may be recorded', () => {
  assert.equal(requestStateProblem('asked-name', scrub), undefined);
  assert.equal(requestStateProblem('x'.repeat(MAX_REQUEST_STATE_BYTES), scrub), undefined);
  // Two bytes a character: the bound counts bytes, not characters.
  assert.equal(requestStateProblem('é'.repeat(MAX_REQUEST_STATE_BYTES / 2), scrub), undefined);
  assert.match(
    requestStateProblem('é'.repeat(MAX_REQUEST_STATE_BYTES / 2 + 1), scrub) ?? '',
    /is 65538 bytes, past the 65536 bytes \(64 KiB\)/,
  );
  assert.match(
    requestStateProblem('x'.repeat(MAX_REQUEST_STATE_BYTES + 1), scrub) ?? '',
    /is 65537 bytes, past the 65536 bytes \(64 KiB\) a call may record/,
  );
});

test('a state holding a secret, plain or encoded, is refused without quoting it', () => {
  const wrapped = JSON.stringify({ step: 2, token: secret });
  for (const state of [
    `held:${secret}`,
    Buffer.from(wrapped).toString('base64'),
    Buffer.from(wrapped).toString('base64url'),
    encodeURIComponent(wrapped),
    Buffer.from(secret).toString('hex'),
  ]) {
    const problem = requestStateProblem(state, scrub);
    assert.match(problem ?? '', /the server put a credential it was given into its request state/, state);
    assert.ok(!problem!.includes(secret) && !problem!.includes(state), 'the message never quotes the state');
  }
});

test('a state that is not a string is refused', () => {
  assert.match(requestStateProblem({ step: 1 }, scrub) ?? '', /not a string/);
});
