/**
 * Fuzz: random tool results (deep JSON, huge strings, quotes, backslashes, JSON syntax, secrets
 * in plain and encoded forms inside text, keys and nested values) go through what a result goes
 * through on its way to the model and the transcript: the activity's scrubbing, the model view and
 * the transcript text. No secret, nor any encoded form of it, may come out, and nothing may throw.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { scrubResult } from '../../activities/index.js';
import { outcomeText } from '../../client/transcriptText.js';
import { secretScrubber } from '../../config/secrets.js';
import type { CallOutcome, ContentBlock } from '../../contract/index.js';
import { DEFAULT_SHAPE_LIMITS, shapeForModel } from '../../shaping/index.js';

/**
 * A secret: random hex around characters that break naive scrubbing (quotes, backslashes, JSON
 * syntax, URL and base64 specials, non-ASCII, a line break). The hex keeps it from turning up by
 * chance in the surrounding text, so anything found is a leak.
 */
const secretArb = fc
  .tuple(
    fc.stringMatching(/^[0-9a-f]{12,24}$/),
    fc.array(
      fc.constantFrom(
        '"',
        '\\',
        '{',
        '}',
        '[',
        ']',
        ':',
        ',',
        '/',
        '+',
        '=',
        '%',
        '&',
        '?',
        ' ',
        'é',
        '\n',
        '\t',
        '<',
        '>',
      ),
      { maxLength: 6 },
    ),
    fc.stringMatching(/^[0-9a-f]{6,12}$/),
  )
  .map(([a, specials, b]) => `${a}${specials.join('')}${b}`);

/** What must not come out: the secret itself and the usual ways of writing it. */
function forbidden(secret: string): string[] {
  return [
    secret,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    Buffer.from(secret).toString('base64'),
    Buffer.from(secret).toString('base64url'),
    Buffer.from(secret).toString('hex'),
    Buffer.from(`user:${secret}`).toString('base64'),
  ];
}

/** The forms a careless server writes a secret in, to embed in results. */
function encodings(secret: string): string[] {
  return [
    ...forbidden(secret),
    `Basic ${Buffer.from(`alice:${secret}`).toString('base64')}`,
    `Bearer ${secret}`,
    `https://h.example/p?token=${encodeURIComponent(secret)}&x=1`,
    JSON.stringify({ key: secret }),
    JSON.stringify(JSON.stringify({ key: secret })),
  ];
}

function textArb(secrets: string[]): fc.Arbitrary<string> {
  const piece = fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: 20 }) },
    { weight: 3, arbitrary: fc.constantFrom(...secrets.flatMap(encodings)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom('"', '\\', '\\"', '{"a":', '"}', ']', '\n', '\u2028', '%22', '[redacted]'),
    },
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 100_000 }).map((n) => 'x'.repeat(n)) },
  );
  return fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(''));
}

function jsonArb(text: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  return fc.letrec((tie) => ({
    leaf: fc.oneof(
      text,
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
    ),
    node: fc.oneof(
      { depthSize: 'small', maxDepth: 6, withCrossShrink: true },
      tie('leaf'),
      fc.array(tie('node'), { maxLength: 4 }),
      fc.dictionary(fc.oneof(text, fc.constantFrom('__proto__', 'constructor', 'text', 'type')), tie('node'), {
        maxKeys: 4,
      }),
    ),
  })).node;
}

function blockArb(text: fc.Arbitrary<string>, json: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 5, arbitrary: fc.record({ type: fc.constant('text'), text }) },
    {
      weight: 1,
      arbitrary: fc.record({
        type: fc.constant('image'),
        data: text.map((t) => Buffer.from(t).toString('base64')),
        mimeType: fc.oneof(fc.constantFrom('image/png', 'image/jpeg'), text),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        type: fc.constant('resource'),
        resource: fc.record({ uri: text, text, mimeType: fc.constant('text/plain') }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ type: fc.constant('resource_link'), uri: text, name: text }) },
    { weight: 1, arbitrary: json },
  );
}

const caseArb = fc.array(secretArb, { minLength: 1, maxLength: 3 }).chain((secrets) => {
  const text = textArb(secrets);
  const json = jsonArb(text);
  return fc.record({
    secrets: fc.constant(secrets),
    result: fc.record(
      {
        content: fc.array(blockArb(text, json), { maxLength: 4 }),
        structuredContent: fc.dictionary(text, json, { maxKeys: 4 }),
        isError: fc.boolean(),
        _meta: json,
      },
      { requiredKeys: ['content'] },
    ),
  });
});

void test('fuzz: no secret, plain or encoded, survives scrubbing, the model view or the transcript; nothing throws', async () => {
  await fc.assert(
    fc.asyncProperty(caseArb, async ({ secrets, result }) => {
      const env: NodeJS.ProcessEnv = { PATH: '/usr/bin' };
      secrets.forEach((s, i) => (env[`FUZZ_${i}_TOKEN`] = s));
      const clean = scrubResult(result, secretScrubber(env));
      const outcome: CallOutcome = {
        status: 'ok',
        content: (clean.content ?? []) as ContentBlock[],
        isError: clean.isError === true,
        ...(clean.structuredContent ? { structuredContent: clean.structuredContent } : {}),
        startedAt: '2025-01-01T00:00:00.000Z',
        durationMs: 1,
        attempts: 1,
      };
      const view = await shapeForModel(outcome, DEFAULT_SHAPE_LIMITS);
      const texts = {
        result: JSON.stringify(clean),
        model: view.text,
        images: JSON.stringify(view.images),
        transcript: outcomeText(outcome),
        both: (await shapeForModel(outcome, { ...DEFAULT_SHAPE_LIMITS, structured: 'both' })).text,
      };
      for (const secret of secrets) {
        for (const form of forbidden(secret)) {
          for (const [place, text] of Object.entries(texts)) {
            assert.ok(
              !text.includes(form),
              `${JSON.stringify(form)} (a form of ${JSON.stringify(secret)}) survived in ${place}`,
            );
          }
        }
      }
    }),
    { numRuns: 100, interruptAfterTimeLimit: 30_000 },
  );
});
