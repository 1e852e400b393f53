/** The answer check the `answerInput` validator runs, and the answers an unattended caller gives. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultsAnswer, inputAnswerProblem, unattendedAnswer, type InputRequest } from '../../contract/index.js';

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
    [{ action: 'accept', content: { name: 'db', size: 10, tier: 'pro', tags: ['a'], ok: false, email: 'a@b.c' } }, undefined],
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
  for (const [answer, field] of cases) assert.equal(inputAnswerProblem(form, answer)?.field, field, JSON.stringify(answer));
  assert.equal(inputAnswerProblem({ kind: 'url' }, { action: 'accept' }), undefined);
  assert.equal(inputAnswerProblem({ kind: 'url' }, { action: 'accept', content: {} })?.field, 'content');
});

test('accept-defaults takes every default (SEP-1034) and declines when a required field has none', () => {
  const withName = { kind: 'form' as const, requestedSchema: { ...form.requestedSchema, required: ['size'] } };
  assert.deepEqual(defaultsAnswer(withName), { answer: { action: 'accept', content: { size: 3, tier: 'free', ok: true } } });
  assert.deepEqual(defaultsAnswer(form), { answer: { action: 'decline' }, missing: 'name' });
  assert.deepEqual(unattendedAnswer('cancel', form), { action: 'cancel' });
  assert.deepEqual(unattendedAnswer('accept-defaults', { kind: 'url' }), { action: 'decline' });
});
