import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { expandString } from '../../config/expand.js';
import { parseExplicitFile, parseInlineSpec } from '../../config/layers.js';
import { parseConfigText } from '../../config/parse.js';
import { ConfigError, type LayerInfo, type ParseResult } from '../../config/types.js';
import { BASE_ENV, WS } from './configFixtures.js';

const layers: LayerInfo[] = [
  { kind: 'configDir', file: '/cfg/mcp.json', workspace: WS },
  { kind: 'workspace', file: `${WS}/.agents/mcp.json`, workspace: WS },
  { kind: 'plugin', file: '/p/.mcp.json', workspace: WS, plugin: { name: 'p', root: '/p' } },
  { kind: 'plugin', file: '/p/plugin.json', workspace: WS, plugin: { name: 'p', root: '/p' }, manifest: true },
];

/** Strings that hit the expander, the URL and header rules and the name rules. */
const spicy = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '$',
    '$$',
    '${',
    '${A:-',
    '$(',
    '$(x)',
    '${GH_TOKEN}',
    '$SET_VAR',
    'ws://a',
    'https://u:p@a',
    'Bearer ${GH_TOKEN}',
    '\r\n',
    '~',
    '',
    '__proto__',
    'constructor',
  ),
  fc.stringMatching(/^[a-z$_{}():\-/.~ ]{0,12}$/),
);
const fieldName = fc.oneof(
  fc.constantFrom(
    'type',
    'command',
    'args',
    'env',
    'envFrom',
    'cwd',
    'url',
    'headers',
    'bearerTokenEnv',
    'tools',
    'startTimeout',
    'toolTimeout',
    'enabled',
    'retry',
    'Authorization',
  ),
  fc.string({ maxLength: 8 }),
);
const value = fc.letrec((tie) => ({
  leaf: fc.oneof(
    spicy,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom('stdio', 'http', 'sse', 'auto', 'safe', 'never'),
  ),
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('leaf'),
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(fieldName, tie('node'), { maxKeys: 5 }),
  ),
})).node;
const entry = fc.dictionary(fieldName, value, { maxKeys: 6 });
const document = fc.oneof(
  fc.record({
    mcpServers: fc.dictionary(
      fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('a', 'srv', 'a__b', '9')),
      fc.oneof(entry, value),
      { maxKeys: 5 },
    ),
  }),
  value,
);

function checkResult(result: ParseResult): void {
  assert.ok(Array.isArray(result.servers) && Array.isArray(result.refused) && Array.isArray(result.warnings));
  for (const r of result.refused) {
    assert.equal(typeof r.reason, 'string');
    assert.ok(!r.reason.includes('internal error'), r.reason);
    assert.ok(!r.reason.includes('ghp_supersecretvalue'), r.reason);
  }
  if (result.error) assert.equal(result.servers.length + result.refused.length, 0);
}

function onlyConfigErrors(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
  }
}

void test('fuzz: random JSON documents never make the parser throw', () => {
  fc.assert(
    fc.property(document, fc.constantFrom(...layers), fc.boolean(), (doc, layer, pretty) => {
      const text = JSON.stringify(doc, null, pretty ? 2 : 0) ?? 'null';
      checkResult(parseConfigText(text, layer, BASE_ENV));
      onlyConfigErrors(() => parseExplicitFile(text, '/e.json', WS, BASE_ENV));
    }),
    { numRuns: 1500 },
  );
});

void test('fuzz: random text never makes the parser throw', () => {
  const text = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.json().map((j) => j.slice(0, Math.max(0, j.length - 1))),
    fc.json().map((j) => `{"mcpServers": {"a": ${j}}}`),
  );
  fc.assert(
    fc.property(text, fc.constantFrom(...layers), (t, layer) => {
      checkResult(parseConfigText(t, layer, BASE_ENV));
      onlyConfigErrors(() => parseInlineSpec(t, 0, WS));
    }),
    { numRuns: 1500 },
  );
});

void test('fuzz: the expander never throws and never returns a secret value', () => {
  fc.assert(
    fc.property(spicy, fc.boolean(), fc.boolean(), (s, allowCommands, checkOnly) => {
      const r = expandString(s, { env: BASE_ENV, allowCommands, layerLabel: 'x', checkOnly });
      const out = r.ok ? r.value : r.problem;
      assert.ok(!out.includes('ghp_supersecretvalue'));
    }),
    { numRuns: 2000 },
  );
});
