import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { headerDeclarationProblem, invalidToolReason } from '../../mcp/toolListing.js';

const header = (name: unknown, type: unknown = 'string') => ({ type, 'x-mcp-header': name });
const schemaWith = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  ...extra,
});

describe('headerDeclarationProblem (x-mcp-header, 2026-07-28)', () => {
  const valid: [string, unknown][] = [
    ['no declarations', schemaWith({ a: { type: 'string' } })],
    ['a string property', schemaWith({ region: header('Region') })],
    ['integer and boolean properties', schemaWith({ n: header('N', 'integer'), b: header('B', 'boolean') })],
    [
      'a nested property reached through properties',
      schemaWith({ outer: { type: 'object', properties: { inner: header('Inner') } } }),
    ],
    ['not a schema object at all', 'nothing'],
  ];
  for (const [what, schema] of valid) {
    test(`accepts ${what}`, () => assert.equal(headerDeclarationProblem(schema), undefined));
  }

  const invalid: [string, unknown, RegExp][] = [
    ['an empty name', schemaWith({ a: header('') }), /property a: .*non-empty string/],
    ['a name that is not a string', schemaWith({ a: header(7) }), /property a: .*non-empty string/],
    ['a name with a space', schemaWith({ a: header('My Header') }), /property a: .*"My Header" is not an HTTP token/],
    ['an object property', schemaWith({ a: header('A', 'object') }), /property a: .*not "object"/],
    ['an array property', schemaWith({ a: header('A', 'array') }), /not "array"/],
    ['a null property', schemaWith({ a: header('A', 'null') }), /not "null"/],
    ['a number property (not admitted)', schemaWith({ a: header('A', 'number') }), /not "number"/],
    ['a property without a type', schemaWith({ a: { 'x-mcp-header': 'A' } }), /not null/],
    [
      'the same name twice, in another case',
      schemaWith({ a: header('Region'), b: header('region') }),
      /property b: .*declared twice \(also as "Region"\)/,
    ],
    [
      'a declaration under items',
      schemaWith({ list: { type: 'array', items: header('Item') } }),
      /property list\.\(items\): .*only on properties reached/,
    ],
    [
      'a declaration under anyOf',
      schemaWith({}, { anyOf: [schemaWith({ a: header('A') })] }),
      /\(anyOf\)\.a: .*only on properties reached/,
    ],
    [
      'a declaration in $defs',
      schemaWith({}, { $defs: { d: header('D') } }),
      /\(\$defs\): .*only on properties reached/,
    ],
    [
      'a declaration on the root',
      { type: 'object', 'x-mcp-header': 'Root' },
      /the schema root: .*only on properties reached/,
    ],
  ];
  for (const [what, schema, message] of invalid) {
    test(`refuses ${what}`, () => assert.match(headerDeclarationProblem(schema) ?? '(accepted)', message));
  }
});

describe('invalidToolReason', () => {
  const cases: [string, unknown, RegExp | undefined][] = [
    ['a valid tool', { name: 'echo', inputSchema: { type: 'object' } }, undefined],
    ['a tool that is not an object', 'echo', /not an object/],
    ['an empty name', { name: ' ', inputSchema: { type: 'object' } }, /"name" is missing, empty/],
    ['no input schema', { name: 'echo' }, /"inputSchema" is missing/],
    [
      'an output schema that is an array',
      { name: 'echo', inputSchema: {}, outputSchema: [] },
      /"outputSchema" is not a JSON object/,
    ],
  ];
  for (const [what, tool, expected] of cases) {
    test(what, () => {
      const reason = invalidToolReason(tool);
      if (expected) assert.match(reason ?? '(accepted)', expected);
      else assert.equal(reason, undefined);
    });
  }
});
