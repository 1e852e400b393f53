/** The answer check the `answerInput` validator runs, and the answers an unattended caller gives. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sendAnswer } from '../../client/inputs.js';
import {
  INPUT_REQUEST_ID_PATTERN,
  MAX_INPUT_ANSWER_CHARS,
  MAX_INPUT_ANSWER_ITEMS,
  MAX_INPUT_TEXT_CHARS,
  defaultsAnswer,
  inputAnswerProblem,
  unattendedAnswer,
  type InputRequest,
} from '../../contract/index.js';

const form: Pick<InputRequest, 'kind' | 'requestedSchema'> = {
  kind: 'form',
  requestedSchema: {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 2, maxLength: 8 },
      email: { type: 'string', format: 'email' },
      size: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
      tier: { type: 'string', oneOf: [{ const: 'free' }, { const: 'pro' }], default: 'free' },
      tags: { type: 'array', items: { enum: ['a', 'b'] }, maxItems: 1 },
      ok: { type: 'boolean', default: true },
    },
    required: ['name'],
  },
};

test('accepted answers are checked field by field, naming the field', () => {
  const cases: [unknown, string | undefined][] = [
    [{ action: 'accept', content: { name: 'db' } }, undefined],
    [
      { action: 'accept', content: { name: 'db', size: 10, tier: 'pro', tags: ['a'], ok: false, email: 'a@b.c' } },
      undefined,
    ],
    [{ action: 'accept', content: {} }, 'content.name'],
    [{ action: 'accept', content: { name: 'd' } }, 'content.name'],
    [{ action: 'accept', content: { name: 'far-too-long' } }, 'content.name'],
    [{ action: 'accept', content: { name: 'db', size: 2.5 } }, 'content.size'],
    [{ action: 'accept', content: { name: 'db', size: 11 } }, 'content.size'],
    [{ action: 'accept', content: { name: 'db', tier: 'gold' } }, 'content.tier'],
    [{ action: 'accept', content: { name: 'db', tags: ['c'] } }, 'content.tags'],
    [{ action: 'accept', content: { name: 'db', tags: ['a', 'b'] } }, 'content.tags'],
    [{ action: 'accept', content: { name: 'db', ok: 'yes' } }, 'content.ok'],
    [{ action: 'accept', content: { name: 'db', email: 'nope' } }, 'content.email'],
    [{ action: 'accept', content: { name: 'db', other: 1 } }, 'content.other'],
    [{ action: 'accept' }, 'content'],
    [{ action: 'decline' }, undefined],
    [{ action: 'cancel', content: { name: 'db' } }, 'content'],
    [{ action: 'maybe' }, 'action'],
    [{ action: 'decline', note: 'x' }, 'note'],
    ['accept', 'answer'],
  ];
  for (const [answer, field] of cases)
    assert.equal(inputAnswerProblem(form, answer)?.field, field, JSON.stringify(answer));
  assert.equal(inputAnswerProblem({ kind: 'url' }, { action: 'accept' }), undefined);
  assert.equal(inputAnswerProblem({ kind: 'url' }, { action: 'accept', content: {} })?.field, 'content');
});

test('accept-defaults takes every default (SEP-1034) and declines when a required field has none', () => {
  const withName = { kind: 'form' as const, requestedSchema: { ...form.requestedSchema, required: ['size'] } };
  assert.deepEqual(defaultsAnswer(withName), {
    answer: { action: 'accept', content: { size: 3, tier: 'free', ok: true } },
  });
  assert.deepEqual(defaultsAnswer(form), { answer: { action: 'decline' }, missing: 'name' });
  assert.deepEqual(unattendedAnswer('cancel', form), { action: 'cancel' });
  assert.deepEqual(unattendedAnswer('accept-defaults', { kind: 'url' }), { action: 'decline' });
});

test("only the schema's own fields are answered: names of Object.prototype are no fields", () => {
  const long = 'x'.repeat(100_000);
  const cases: [name: string, content: Record<string, unknown>, field: string][] = [
    ['constructor', { name: 'db', constructor: long }, 'content.constructor'],
    ['toString', { name: 'db', toString: 'x' }, 'content.toString'],
    ['valueOf', { name: 'db', valueOf: 1 }, 'content.valueOf'],
    ['hasOwnProperty', { name: 'db', hasOwnProperty: true }, 'content.hasOwnProperty'],
    [
      '__proto__ as sent in JSON',
      JSON.parse('{"name":"db","__proto__":"x"}') as Record<string, unknown>,
      'content.__proto__',
    ],
  ];
  for (const [name, content, field] of cases) {
    const problem = inputAnswerProblem(form, { action: 'accept', content });
    assert.equal(problem?.field, field, name);
    assert.match(problem!.message, /is not a field of the requested schema/, name);
  }
  const wantsToString = {
    kind: 'form' as const,
    requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['toString'] },
  };
  assert.equal(
    inputAnswerProblem(wantsToString, { action: 'accept', content: { name: 'db' } })?.field,
    'content.toString',
    'a required name is given only when the answer has it',
  );
});

test("a schema's own field named like a prototype member is a field like any other", () => {
  const schema = {
    kind: 'form' as const,
    requestedSchema: {
      type: 'object',
      properties: { constructor: { type: 'string', maxLength: 3 } },
      required: ['constructor'],
    },
  };
  assert.equal(inputAnswerProblem(schema, { action: 'accept', content: { constructor: 'abc' } }), undefined);
  assert.equal(
    inputAnswerProblem(schema, { action: 'accept', content: { constructor: 'abcd' } })?.field,
    'content.constructor',
  );
  assert.equal(inputAnswerProblem(schema, { action: 'accept', content: {} })?.field, 'content.constructor');
});

test('every answer is bounded, also where the schema sets no bound', () => {
  const open = {
    kind: 'form' as const,
    requestedSchema: {
      type: 'object',
      properties: { text: { type: 'string' }, list: { type: 'array', items: { type: 'string' } }, odd: true },
    },
  };
  const cases: [name: string, content: Record<string, unknown>, field: string | undefined][] = [
    ['a string at the bound', { text: 'x'.repeat(MAX_INPUT_TEXT_CHARS) }, undefined],
    ['a string past the bound', { text: 'x'.repeat(MAX_INPUT_TEXT_CHARS + 1) }, 'content.text'],
    ['a list item past the bound', { list: ['x'.repeat(MAX_INPUT_TEXT_CHARS + 1)] }, 'content.list'],
    [
      'a list of too many items',
      { list: Array.from({ length: MAX_INPUT_ANSWER_ITEMS + 1 }, () => 'x') },
      'content.list',
    ],
    ['a field the schema names but does not define', { odd: 'x' }, 'content.odd'],
  ];
  for (const [name, content, field] of cases)
    assert.equal(inputAnswerProblem(open, { action: 'accept', content })?.field, field, name);
  const many = {
    kind: 'form' as const,
    requestedSchema: {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, { type: 'string' }])),
    },
  };
  const big = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, 'x'.repeat(MAX_INPUT_TEXT_CHARS)]));
  const problem = inputAnswerProblem(many, { action: 'accept', content: big });
  assert.equal(problem?.field, 'content', 'the answer as a whole is bounded');
  assert.match(problem!.message, new RegExp(`at most ${MAX_INPUT_ANSWER_CHARS}`));
});

test('accept-defaults gives only own fields, even one named __proto__', () => {
  const request = {
    kind: 'form' as const,
    requestedSchema: JSON.parse(
      '{"type":"object","properties":{"__proto__":{"type":"array","items":{"type":"string"},"default":["a"]}}}',
    ) as Record<string, unknown>,
  };
  const { answer } = defaultsAnswer(request);
  assert.ok(Object.hasOwn(answer.content!, '__proto__'), 'an own field, not the prototype');
  assert.equal(Object.getPrototypeOf(answer.content), Object.prototype);
  assert.equal(inputAnswerProblem(request, answer), undefined);
});

test("an answer is never sent under an ID that is not an input request's: it would get the outcome of a call with that ID", async () => {
  const handle = {
    executeUpdate: () => {
      throw new Error('nothing may be sent');
    },
  } as unknown as Parameters<typeof sendAnswer>[0];
  for (const id of ['0', 'toolu_01', 'c1:x:name', ''])
    await assert.rejects(sendAnswer(handle, id, { action: 'cancel' }), /is not an input request ID/, id);
  assert.ok(INPUT_REQUEST_ID_PATTERN.test('toolu_01:1:name'));
  assert.ok(INPUT_REQUEST_ID_PATTERN.test('c1:0:approval-0123456789abcdef'));
});
