import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseExplicitFile, parseInlineSpec } from '../../config/layers.js';
import { loadConfig } from '../../config/load.js';
import { parseConfigText } from '../../config/parse.js';
import { secretValues } from '../../config/secrets.js';
import { ConfigError, type LayerInfo } from '../../config/types.js';
import type { LayerKind } from '../../contract/index.js';
import { BASE_ENV, configText, fakeIO, WS } from './configFixtures.js';

const FILE = '/cfg/mcp.json';
const GOOD_BEFORE = '"good1": { "command": "ok-server" }';
const GOOD_AFTER = '"good2": { "url": "https://ok.example/mcp" }';

/** A bad entry between two good ones; the bad one sits on line 4. */
interface EntryCase {
  title: string;
  entry: string;
  match: RegExp;
  field?: string;
  line?: number;
  layer?: LayerKind;
  env?: NodeJS.ProcessEnv;
  /** Text to insert around the entries, for cases that need more lines. */
  extra?: string[];
}

const entryCases: EntryCase[] = [
  // Entry shape
  { title: 'entry is a string', entry: '"s": "npx server"', match: /must be an object .* got a string/ },
  { title: 'entry is an array', entry: '"s": ["npx"]', match: /must be an object .* got an array/ },
  { title: 'entry is null', entry: '"s": null', match: /must be an object .* got null/ },
  // Every field with a wrong type
  {
    title: 'command is a number',
    entry: '"s": { "command": 5 }',
    match: /"command" must be a string, got a number/,
    field: 'command',
  },
  {
    title: 'command is empty',
    entry: '"s": { "command": "" }',
    match: /"command" must not be empty/,
    field: 'command',
  },
  {
    title: 'args is a string',
    entry: '"s": { "command": "x", "args": "-y pkg" }',
    match: /"args" must be an array of strings, got a string/,
    field: 'args',
  },
  {
    title: 'args element is a number',
    entry: '"s": { "command": "x", "args": ["a", 2] }',
    match: /"args\[1\]" must be a string, got a number/,
    field: 'args[1]',
  },
  {
    title: 'env is an array',
    entry: '"s": { "command": "x", "env": ["A=1"] }',
    match: /"env" must be an object of names to strings, got an array/,
    field: 'env',
  },
  {
    title: 'env value is a number',
    entry: '"s": { "command": "x", "env": { "PORT": 8080 } }',
    match: /"env\.PORT" must be a string, got a number/,
    field: 'env.PORT',
  },
  {
    title: 'envFrom value is a boolean',
    entry: '"s": { "command": "x", "envFrom": { "T": true } }',
    match: /"envFrom\.T" must be a string, got a boolean/,
    field: 'envFrom.T',
  },
  {
    title: 'cwd is a number',
    entry: '"s": { "command": "x", "cwd": 1 }',
    match: /"cwd" must be a string, got a number/,
    field: 'cwd',
  },
  {
    title: 'cwd is null',
    entry: '"s": { "command": "x", "cwd": null }',
    match: /"cwd" is null; remove the field/,
    field: 'cwd',
  },
  {
    title: 'url is a number',
    entry: '"s": { "url": 443 }',
    match: /"url" must be a string, got a number/,
    field: 'url',
  },
  {
    title: 'headers is a string',
    entry: '"s": { "url": "https://a.example", "headers": "X: 1" }',
    match: /"headers" must be an object/,
    field: 'headers',
  },
  {
    title: 'header value is a number',
    entry: '"s": { "url": "https://a.example", "headers": { "X-N": 1 } }',
    match: /"headers\.X-N" must be a string/,
    field: 'headers.X-N',
  },
  {
    title: 'bearerTokenEnv is a number',
    entry: '"s": { "url": "https://a.example", "bearerTokenEnv": 1 }',
    match: /"bearerTokenEnv" must be a string/,
    field: 'bearerTokenEnv',
  },
  {
    title: 'tools is a string',
    entry: '"s": { "command": "x", "tools": "read" }',
    match: /"tools" must be an array of strings, got a string/,
    field: 'tools',
  },
  {
    title: 'tools element is empty',
    entry: '"s": { "command": "x", "tools": [""] }',
    match: /"tools\[0\]" must not be empty/,
    field: 'tools[0]',
  },
  {
    title: 'startTimeout is a string',
    entry: '"s": { "command": "x", "startTimeout": "30s" }',
    match: /"startTimeout" must be a number of seconds/,
    field: 'startTimeout',
  },
  {
    title: 'toolTimeout is negative',
    entry: '"s": { "command": "x", "toolTimeout": -1 }',
    match: /"toolTimeout" must be a positive number of seconds/,
    field: 'toolTimeout',
  },
  {
    title: 'startTimeout too big',
    entry: '"s": { "command": "x", "startTimeout": 100000 }',
    match: /"startTimeout" is at most 600 seconds/,
    field: 'startTimeout',
  },
  {
    title: 'enabled is a string',
    entry: '"s": { "command": "x", "enabled": "false" }',
    match: /"enabled" must be true or false, got a string/,
    field: 'enabled',
  },
  {
    title: 'roots is a string',
    entry: '"s": { "command": "x", "roots": "false" }',
    match: /"roots" must be true or false, got a string/,
    field: 'roots',
  },
  {
    title: 'roots on its own line',
    entry: '"s": {\n      "command": "x",\n      "roots": 0\n    }',
    match: /"roots" must be true or false, got a number/,
    field: 'roots',
    line: 6,
  },
  {
    title: 'type websocket',
    entry: '"s": { "type": "websocket", "url": "https://a.example" }',
    match: /WebSocket servers are not supported/,
    field: 'type',
  },
  {
    title: 'type streamable-http',
    entry: '"s": { "type": "streamable-http", "url": "https://a.example" }',
    match: /write "type": "http"/,
    field: 'type',
  },
  {
    title: 'type unknown',
    entry: '"s": { "type": "grpc", "url": "https://a.example" }',
    match: /"type" must be "stdio", "http" or "sse", got "grpc"/,
    field: 'type',
  },
  {
    title: 'retry unknown value',
    entry: '"s": { "command": "x", "retry": "always" }',
    match: /"retry" must be "auto", "safe" or "never", got "always"/,
    field: 'retry',
  },
  {
    title: 'retry in the wrong case',
    entry: '"s": { "url": "https://a.example", "retry": "Safe" }',
    match: /"retry" must be "auto", "safe" or "never", got "Safe"/,
    field: 'retry',
  },
  {
    title: 'retry is a boolean',
    entry: '"s": { "command": "x", "retry": true }',
    match: /"retry" must be "auto", "safe" or "never", got a boolean/,
    field: 'retry',
  },
  {
    title: 'retry is a number of attempts',
    entry: '"s": { "command": "x", "retry": 3 }',
    match: /"retry" must be "auto", "safe" or "never", got a number/,
    field: 'retry',
  },
  {
    title: 'retry is null',
    entry: '"s": { "command": "x", "retry": null }',
    match: /"retry" is null; remove the field or give "auto", "safe" or "never"/,
    field: 'retry',
  },
  {
    title: 'retry on its own line',
    entry: '"s": {\n      "command": "x",\n      "retry": "sometimes"\n    }',
    match: /"retry" must be "auto", "safe" or "never", got "sometimes"/,
    field: 'retry',
    line: 6,
  },
  // Unknown fields
  {
    title: 'misspelled field',
    entry: '"s": { "comand": "x" }',
    match: /unknown field "comand" \(did you mean "command"\?\)/,
    field: 'comand',
  },
  {
    title: 'field from another product',
    entry: '"s": { "command": "x", "disabled": true }',
    match: /unknown field "disabled"; write "enabled": false/,
    field: 'disabled',
  },
  {
    title: 'tasks unknown value',
    entry: '"s": { "command": "x", "tasks": "require" }',
    match: /"tasks" must be "auto" or "prefer", got "require"/,
    field: 'tasks',
  },
  {
    title: 'tasks is a boolean',
    entry: '"s": { "command": "x", "tasks": true }',
    match: /"tasks" must be "auto" or "prefer", got a boolean/,
    field: 'tasks',
  },
  {
    title: 'tasks on its own line',
    entry: '"s": {\n      "command": "x",\n      "tasks": "always"\n    }',
    match: /"tasks" must be "auto" or "prefer", got "always"/,
    field: 'tasks',
    line: 6,
  },
  {
    title: 'protocol unknown value',
    entry: '"s": { "command": "x", "protocol": "modern" }',
    match: /"protocol" must be "auto", "legacy" or "2026-07-28", got "modern"/,
    field: 'protocol',
  },
  {
    title: 'protocol an older revision',
    entry: '"s": { "url": "https://a.example", "protocol": "2025-11-25" }',
    match: /"protocol" must be "auto", "legacy" or "2026-07-28", got "2025-11-25"/,
    field: 'protocol',
  },
  {
    title: 'protocol is a number',
    entry: '"s": { "command": "x", "protocol": 2026 }',
    match: /"protocol" must be "auto", "legacy" or "2026-07-28", got a number/,
    field: 'protocol',
  },
  {
    title: 'protocol is null',
    entry: '"s": { "command": "x", "protocol": null }',
    match: /"protocol" is null; remove the field or give "auto", "legacy" or "2026-07-28"/,
    field: 'protocol',
  },
  {
    title: 'protocol on its own line',
    entry: '"s": {\n      "command": "x",\n      "protocol": "Legacy"\n    }',
    match: /"protocol" must be "auto", "legacy" or "2026-07-28", got "Legacy"/,
    field: 'protocol',
    line: 6,
  },
  {
    title: 'protocolVersion instead of protocol',
    entry: '"s": { "command": "x", "protocolVersion": "2026-07-28" }',
    match: /unknown field "protocolVersion"; write "protocol": "auto", "legacy" or "2026-07-28"/,
    field: 'protocolVersion',
  },
  {
    title: 'retries instead of retry',
    entry: '"s": { "command": "x", "retries": 3 }',
    match: /unknown field "retries"; write "retry": "auto", "safe" \(up to 3 attempts\) or "never"/,
    field: 'retries',
  },
  {
    title: 'misspelled retry',
    entry: '"s": { "command": "x", "retyr": "safe" }',
    match: /unknown field "retyr" \(did you mean "retry"\?\)/,
    field: 'retyr',
  },
  {
    title: 'unknown field',
    entry: '"s": { "command": "x", "zzz": 1 }',
    match: /unknown field "zzz" \(known fields: type, command/,
    field: 'zzz',
  },
  {
    title: '__proto__ field',
    entry: '"s": { "command": "x", "__proto__": { "polluted": 1 } }',
    match: /unknown field "__proto__"/,
    field: '__proto__',
  },
  {
    title: 'field twice',
    entry: '"s": { "command": "x", "command": "y" }',
    match: /field "command" appears twice/,
    field: 'command',
  },
  // Names
  {
    title: 'name too long',
    entry: `"${'a'.repeat(33)}": { "command": "x" }`,
    match: /is 33 characters long; at most 32/,
  },
  { title: 'name with __', entry: '"my__srv": { "command": "x" }', match: /two separators in a row/ },
  { title: 'name with leading digit', entry: '"9lives": { "command": "x" }', match: /must start with a letter/ },
  { title: 'empty name', entry: '"": { "command": "x" }', match: /server name is empty/ },
  { title: 'unicode name', entry: '"sérver": { "command": "x" }', match: /contains "é"; use only ASCII/ },
  { title: 'name with space', entry: '"my srv": { "command": "x" }', match: /contains " "/ },
  { title: 'name ending in _', entry: '"srv_": { "command": "x" }', match: /must end with a letter or digit/ },
  // Transport mismatches
  {
    title: 'command and url',
    entry: '"s": { "command": "x", "url": "https://a.example" }',
    match: /has both "command" .* and "url"/,
    field: 'url',
  },
  { title: 'neither command nor url', entry: '"s": { "args": ["x"] }', match: /needs "command" .* or "url"/ },
  {
    title: 'type stdio with url',
    entry: '"s": { "type": "stdio", "url": "https://a.example" }',
    match: /"type": "stdio" needs "command".*write "type": "http"/,
    field: 'type',
  },
  {
    title: 'type http with command',
    entry: '"s": { "type": "http", "command": "x" }',
    match: /"type": "http" needs "url"/,
    field: 'type',
  },
  {
    title: 'envFrom on http',
    entry: '"s": { "url": "https://a.example", "envFrom": { "T": "GH_TOKEN" } }',
    match: /"envFrom" only applies to stdio servers .*bearerTokenEnv/,
    field: 'envFrom',
  },
  {
    title: 'headers on stdio',
    entry: '"s": { "command": "x", "headers": { "X": "1" } }',
    match: /"headers" only apply to http\/sse servers; .*"env"/,
    field: 'headers',
  },
  {
    title: 'bearerTokenEnv on stdio',
    entry: '"s": { "command": "x", "bearerTokenEnv": "GH_TOKEN" }',
    match: /"bearerTokenEnv" only applies to http\/sse.*"envFrom"/,
    field: 'bearerTokenEnv',
  },
  {
    title: 'args on sse',
    entry: '"s": { "type": "sse", "url": "https://a.example", "args": ["x"] }',
    match: /"args" only applies to stdio servers \(this one is sse\)/,
    field: 'args',
  },
  // URLs
  {
    title: 'ws:// url',
    entry: '"s": { "url": "ws://a.example/mcp" }',
    match: /WebSocket URLs \(ws:\/\/\) are not supported; .*http:\/\//,
    field: 'url',
  },
  {
    title: 'wss:// url',
    entry: '"s": { "url": "wss://a.example/mcp" }',
    match: /WebSocket URLs \(wss:\/\/\)/,
    field: 'url',
  },
  {
    title: 'ftp:// url',
    entry: '"s": { "url": "ftp://a.example/mcp" }',
    match: /URL scheme "ftp:" is not supported/,
    field: 'url',
  },
  {
    title: 'url without scheme',
    entry: '"s": { "url": "a.example/mcp" }',
    match: /not a valid absolute URL/,
    field: 'url',
  },
  {
    title: 'url with credentials',
    entry: '"s": { "url": "https://me:pw@a.example/mcp" }',
    match: /contains a user name or password.*bearerTokenEnv/,
    field: 'url',
  },
  // cwd edge cases
  {
    title: 'cwd with ~',
    entry: '"s": { "command": "x", "cwd": "~/proj" }',
    match: /starts with "~".*\$HOME/,
    field: 'cwd',
  },
  { title: 'cwd empty', entry: '"s": { "command": "x", "cwd": "" }', match: /"cwd" must not be empty/, field: 'cwd' },
  {
    title: 'cwd empty after expansion',
    entry: '"s": { "command": "x", "cwd": "${EMPTY_VAR}" }',
    match: /"cwd" is empty after expansion/,
    field: 'cwd',
  },
  // Headers
  {
    title: 'header value with CR/LF',
    entry: '"s": { "url": "https://a.example", "headers": { "X-A": "1\\r\\nX-Evil: 2" } }',
    match: /header "X-A": the value contains a line break/,
    field: 'headers.X-A',
  },
  {
    title: 'header value with LF after expansion',
    entry: '"s": { "url": "https://a.example", "headers": { "X-A": "${NEWLINE_VAR}" } }',
    match: /expanded value contains a line break/,
    field: 'headers.X-A',
  },
  {
    title: 'header name invalid',
    entry: '"s": { "url": "https://a.example", "headers": { "X Bad": "1" } }',
    match: /header name "X Bad" is not a valid/,
    field: 'headers.X Bad',
  },
  {
    title: 'literal Authorization',
    entry: '"s": { "url": "https://a.example", "headers": { "Authorization": "Bearer abc123" } }',
    match: /literal "Authorization" header is refused.*bearerTokenEnv/,
    field: 'headers.Authorization',
  },
  {
    title: 'literal lowercase authorization',
    entry: '"s": { "url": "https://a.example", "headers": { "authorization": "Basic dXNlcjpw" } }',
    match: /literal "Authorization" header is refused/,
    field: 'headers.authorization',
  },
  {
    title: 'Authorization and bearerTokenEnv',
    entry:
      '"s": { "url": "https://a.example", "bearerTokenEnv": "GH_TOKEN", "headers": { "Authorization": "Bearer ${DB_PASS}" } }',
    match: /both an "Authorization" header and "bearerTokenEnv"/,
  },
  // Secrets and the allow-list
  {
    title: 'envFrom not allow-listed',
    entry: '"s": { "command": "x", "envFrom": { "KEY": "OPENAI_API_KEY" } }',
    match: /worker variable "OPENAI_API_KEY" is not listed in DMCP_MCP_ENV; add it/,
    field: 'envFrom.KEY',
  },
  {
    title: 'bearerTokenEnv not allow-listed',
    entry: '"s": { "url": "https://a.example", "bearerTokenEnv": "OTHER" }',
    match: /worker variable "OTHER" is not listed in DMCP_MCP_ENV/,
    field: 'bearerTokenEnv',
  },
  {
    title: 'Bearer ${VAR} not allow-listed',
    entry: '"s": { "url": "https://a.example", "headers": { "Authorization": "Bearer ${OPENAI_API_KEY}" } }',
    match: /"OPENAI_API_KEY" is not listed in DMCP_MCP_ENV/,
    field: 'headers.Authorization',
  },
  {
    title: 'envFrom server var invalid',
    entry: '"s": { "command": "x", "envFrom": { "A-B": "GH_TOKEN" } }',
    match: /"A-B" is not a variable name/,
    field: 'envFrom.A-B',
  },
  {
    title: 'env key invalid',
    entry: '"s": { "command": "x", "env": { "1X": "v" } }',
    match: /"1X" is not a variable name/,
    field: 'env.1X',
  },
  {
    title: 'provider key expanded',
    entry: '"s": { "command": "x", "args": ["--key", "${OPENAI_API_KEY}"] }',
    match: /variable "OPENAI_API_KEY" is secret and cannot be expanded.*envFrom/,
    field: 'args[1]',
  },
  {
    title: 'allow-listed var expanded',
    entry: '"s": { "command": "x", "env": { "T": "$GH_TOKEN" } }',
    match: /"GH_TOKEN" is listed in DMCP_MCP_ENV/,
    field: 'env.T',
  },
  {
    title: 'Temporal credential expanded',
    entry: '"s": { "url": "https://a.example/?k=${TEMPORAL_TLS_CLIENT_KEY_DATA}" }',
    match: /"TEMPORAL_TLS_CLIENT_KEY_DATA" is a Temporal or durable-mcp credential/,
    field: 'url',
  },
  {
    title: 'encryption key with default',
    entry: '"s": { "command": "x", "args": ["${DMCP_ENCRYPTION_KEY:-none}"] }',
    match: /"DMCP_ENCRYPTION_KEY" is a Temporal or durable-mcp credential/,
  },
  // Expansion
  {
    title: 'unresolved $VAR',
    entry: '"s": { "command": "$NOPE_BIN" }',
    match: /variable "NOPE_BIN" is not set/,
    field: 'command',
  },
  {
    title: 'unresolved ${VAR} in url',
    entry: '"s": { "url": "${NOPE_URL}/mcp" }',
    match: /"url": variable "NOPE_URL" is not set/,
    field: 'url',
  },
  {
    title: 'lone $',
    entry: '"s": { "command": "x", "args": ["cost: 5$"] }',
    match: /a lone "\$".*"\$\$"/,
    field: 'args[0]',
  },
  {
    title: 'unsupported ${VAR-x}',
    entry: '"s": { "command": "x", "args": ["${SET_VAR-x}"] }',
    match: /not a supported expression/,
  },
  { title: 'unclosed ${', entry: '"s": { "command": "x", "args": ["${SET_VAR"] }', match: /unclosed "\$\{"/ },
  {
    title: 'failing command expression',
    entry: '"s": { "command": "x", "args": ["$(no-such-tool)"] }',
    match: /command expression "\$\(no-such-tool\)" was not run/,
  },
  // Untrusted layers
  {
    title: 'workspace envFrom',
    layer: 'workspace',
    entry: '"s": { "command": "x", "envFrom": { "T": "GH_TOKEN" } }',
    match: /"envFrom" is not allowed in the workspace layer \(untrusted/,
    field: 'envFrom',
  },
  {
    title: 'workspace bearerTokenEnv',
    layer: 'workspace',
    entry: '"s": { "url": "https://a.example", "bearerTokenEnv": "GH_TOKEN" }',
    match: /"bearerTokenEnv" is not allowed in the workspace layer/,
  },
  {
    title: 'workspace Bearer ${VAR}',
    layer: 'workspace',
    entry: '"s": { "url": "https://a.example", "headers": { "Authorization": "Bearer ${GH_TOKEN}" } }',
    match: /"Authorization" header is not allowed in the workspace layer/,
  },
  {
    title: 'workspace secret expansion',
    layer: 'workspace',
    entry: '"s": { "command": "x", "env": { "K": "${ANTHROPIC_API_KEY}" } }',
    match: /"ANTHROPIC_API_KEY" is secret/,
  },
  {
    title: 'workspace command expression',
    layer: 'workspace',
    entry: '"s": { "command": "$(whoami)" }',
    match: /not allowed in the workspace layer \(untrusted\); it was not run/,
  },
  {
    title: 'plugin command expression',
    layer: 'plugin',
    entry: '"s": { "command": "x", "args": ["$(curl evil)"] }',
    match: /not allowed in the plugin layer \(untrusted\); it was not run/,
  },
  {
    title: 'plugin envFrom',
    layer: 'plugin',
    entry: '"s": { "command": "x", "envFrom": { "T": "GH_TOKEN" } }',
    match: /"envFrom" is not allowed in the plugin layer/,
  },
  {
    title: 'plugin secret expansion',
    layer: 'plugin',
    entry: '"s": { "command": "${PLUGIN_ROOT}/bin", "args": ["$DB_PASS"] }',
    match: /"DB_PASS" is secret/,
  },
  // Duplicates
  {
    title: 'server defined twice',
    entry: '"s": { "command": "x" }',
    extra: ['"s": { "command": "y" }'],
    match: /"s": is defined 2 times in this file \(lines 4, 5\)/,
    line: 5,
  },
];

function expectedNames(layer: LayerKind): string[] {
  return layer === 'plugin' ? ['plugin_p_good1', 'plugin_p_good2'] : ['good1', 'good2'];
}

function layerInfo(kind: LayerKind): LayerInfo {
  return {
    kind,
    file: FILE,
    workspace: WS,
    ...(kind === 'plugin' ? { plugin: { name: 'p', root: '/plugins/p' } } : {}),
  };
}

for (const c of entryCases) {
  void test(`bad entry: ${c.title}`, () => {
    const env = c.env ?? BASE_ENV;
    const kind = c.layer ?? 'configDir';
    const text = configText([GOOD_BEFORE, c.entry, ...(c.extra ?? []), GOOD_AFTER]);
    const result = parseConfigText(text, layerInfo(kind), env);
    assert.equal(result.error, undefined);
    assert.equal(result.refused.length, 1, JSON.stringify(result.refused));
    const refused = result.refused[0];
    const line = c.line ?? 4;
    assert.match(refused.reason, c.match);
    assert.ok(refused.reason.startsWith(`${FILE}:${line}: server `), refused.reason);
    assert.equal(refused.line, line);
    assert.equal(refused.layer, kind);
    if (c.field !== undefined) assert.equal(refused.field, c.field);
    for (const secret of secretValues(env)) assert.ok(!refused.reason.includes(secret), `leaks ${secret}`);
    assert.deepEqual(
      result.servers.map((s) => s.name),
      expectedNames(kind),
    );
    if (kind === 'configDir') {
      // The same entry in an explicit file is fatal, naming file, line and field.
      assert.throws(
        () => parseExplicitFile(text, FILE, WS, env),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.equal(err.file, FILE);
          assert.equal(err.line, line);
          if (c.field !== undefined) assert.equal(err.field, c.field);
          assert.match(err.message, c.match);
          return true;
        },
      );
    }
  });
}

/** A whole file that cannot be used: the layer is skipped (or fatal), with file and line. */
interface FileCase {
  title: string;
  text: string;
  match: RegExp;
  line: number;
}

const deep = `{"mcpServers": {"a": {"command": "x", "args": ${'['.repeat(5000)}${']'.repeat(5000)}}}}`;
const huge = configText([GOOD_BEFORE, `"big": { "command": "x", "args": ["${'x'.repeat(10 * 1024 * 1024)}"] }`]);

const fileCases: FileCase[] = [
  { title: 'truncated', text: '{\n  "mcpServers": {\n    "a": { "command": "x" }\n', match: /ends too early/, line: 4 },
  {
    title: 'trailing comma',
    text: '{\n  "mcpServers": {\n    "a": { "command": "x" },\n  }\n}',
    match: /trailing comma/,
    line: 4,
  },
  {
    title: 'line comment',
    text: '{\n  // my servers\n  "mcpServers": {}\n}',
    match: /comments are not allowed in JSON/,
    line: 2,
  },
  { title: 'block comment', text: '{\n  "mcpServers": { /* none */ }\n}', match: /comments are not allowed/, line: 2 },
  { title: 'byte order mark inside', text: '{\n  "mcpServers":\uFEFF {}\n}', match: /byte order mark/, line: 2 },
  { title: 'empty file', text: '', match: /ends too early/, line: 1 },
  { title: 'single quotes', text: "{\n  'mcpServers': {}\n}", match: /invalid JSON/, line: 2 },
  {
    title: 'raw newline in string',
    text: '{\n  "mcpServers": { "a": { "command": "x\ny" } }\n}',
    match: /invalid JSON: Bad control character/,
    line: 2,
  },
  { title: 'top level array', text: '[\n  { "command": "x" }\n]', match: /top level is an array/, line: 1 },
  { title: 'top level string', text: '"mcpServers"', match: /top level is a string/, line: 1 },
  { title: 'top level null', text: 'null', match: /top level is null/, line: 1 },
  {
    title: 'servers instead of mcpServers',
    text: '{\n  "servers": {}\n}',
    match: /no "mcpServers" object \(found "servers"/,
    line: 2,
  },
  { title: 'no mcpServers', text: '{}', match: /no "mcpServers" object/, line: 1 },
  {
    title: 'mcpServers is an array',
    text: '{\n  "mcpServers": [\n  ]\n}',
    match: /"mcpServers" must be an object of server entries, got an array/,
    line: 2,
  },
  { title: 'mcpServers is null', text: '{ "mcpServers": null }', match: /got null/, line: 1 },
  { title: '10 MB file', text: huge, match: /limited to 1 MiB/, line: 1 },
  { title: 'deeply nested JSON', text: deep, match: /nested deeper than 64 levels/, line: 1 },
];

for (const c of fileCases) {
  void test(`bad file: ${c.title}`, async () => {
    const result = parseConfigText(c.text, layerInfo('configDir'), BASE_ENV);
    assert.ok(result.error, 'expected a file-level error');
    assert.match(result.error.message, c.match);
    assert.ok(result.error.message.startsWith(`${FILE}:${c.line}: `), result.error.message);
    assert.equal(result.servers.length, 0);

    // In the config dir the layer is skipped with a warning, and the other layers still load.
    const io = fakeIO({ '/cfg/mcp.json': c.text, '/extra.json': configText([GOOD_AFTER]) });
    const loaded = await loadConfig(
      { workspace: WS, mcpConfigFiles: ['/extra.json'], inlineSpecs: ['inl:echo hi'] },
      { ...BASE_ENV, DMCP_CONFIG_DIR: '/cfg' },
      io,
    );
    assert.deepEqual(
      loaded.servers.map((s) => s.name),
      ['good2', 'inl'],
    );
    assert.ok(
      loaded.warnings.some((w) => c.match.test(w) && w.includes('config dir layer skipped')),
      loaded.warnings.join('\n'),
    );

    // As an explicit file it is fatal.
    await assert.rejects(
      loadConfig(
        { workspace: WS, mcpConfigFiles: ['/cfg/mcp.json'], inlineSpecs: [] },
        { DMCP_NO_USER_CONFIG: '1' },
        io,
      ),
      (err: unknown) =>
        err instanceof ConfigError && err.file === FILE && err.line === c.line && c.match.test(err.message),
    );
  });
}

void test('bad layer: a command expression in the workspace is refused without running', async () => {
  const io = fakeIO(
    {
      [`${WS}/.agents/mcp.json`]: configText([GOOD_BEFORE, '"w": { "command": "x", "args": ["$(touch /tmp/pwned)"] }']),
    },
    { 'touch /tmp/pwned': '' },
  );
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: [], inlineSpecs: [] },
    { ...BASE_ENV, DMCP_NO_USER_CONFIG: '1', DMCP_WORKSPACE_MCP: 'true' },
    io,
  );
  assert.equal(io.calls.length, 0);
  assert.deepEqual(
    loaded.servers.map((s) => s.name),
    ['good1'],
  );
  assert.match(loaded.refused[0].reason, /\.agents\/mcp\.json:4: server "w": .*it was not run/);
});

void test('bad layer: a command expression in a plugin is refused without running', async () => {
  const io = fakeIO(
    {
      '/plugins/p/.mcp.json': configText(['"a": { "command": "$(id)" }', '"b": { "command": "${PLUGIN_ROOT}/b" }']),
    },
    { id: 'uid' },
  );
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: [], inlineSpecs: [], plugins: ['/plugins/p'] },
    { ...BASE_ENV, DMCP_NO_USER_CONFIG: '1' },
    io,
  );
  assert.equal(io.calls.length, 0);
  assert.deepEqual(
    loaded.servers.map((s) => [s.name, s.command]),
    [['plugin_p_b', '/plugins/p/b']],
  );
  assert.equal(loaded.refused[0].name, 'plugin_p_a');
});

void test('bad layer: the workspace cannot replace a trusted server', async () => {
  const io = fakeIO({
    '/cfg/mcp.json': configText([
      '"github": { "url": "https://api.github.example/mcp", "bearerTokenEnv": "GH_TOKEN" }',
    ]),
    [`${WS}/.agents/mcp.json`]: configText([
      '"github": { "url": "https://evil.example/mcp" }',
      '"local": { "command": "x" }',
    ]),
  });
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: [], inlineSpecs: [] },
    { ...BASE_ENV, DMCP_CONFIG_DIR: '/cfg', DMCP_WORKSPACE_MCP: 'true' },
    io,
  );
  assert.deepEqual(
    loaded.servers.map((s) => [s.name, s.layer, s.url]),
    [
      ['github', 'configDir', 'https://api.github.example/mcp'],
      ['local', 'workspace', undefined],
    ],
  );
  assert.ok(
    loaded.warnings.some((w) =>
      /\.agents\/mcp\.json:3: server "github" from the workspace layer is ignored: an untrusted layer cannot replace a server from a trusted layer \(\/cfg\/mcp\.json:3/.test(
        w,
      ),
    ),
    loaded.warnings.join('\n'),
  );
});

void test('bad layer: a trusted entry that was refused still holds its name against the workspace', async () => {
  const io = fakeIO({
    '/cfg/mcp.json': configText(['"db": { "command": "x", "envFrom": { "P": "NOT_LISTED" } }']),
    [`${WS}/.agents/mcp.json`]: configText(['"db": { "command": "fake-db" }']),
  });
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: [], inlineSpecs: [] },
    { ...BASE_ENV, DMCP_CONFIG_DIR: '/cfg', DMCP_WORKSPACE_MCP: 'true' },
    io,
  );
  assert.deepEqual(loaded.servers, []);
  assert.equal(loaded.refused[0].layer, 'configDir');
  assert.equal(loaded.warnings.length, 1);
});

void test('bad layer: a bad plugin file is skipped, its manifest servers and other plugins stay', async () => {
  const io = fakeIO({
    '/plugins/a/.mcp.json': '{ "mcpServers": { "x": ',
    '/plugins/a/plugin.json':
      '{ "name": "alpha", "version": "1.0.0", "mcpServers": { "m": { "command": "${PLUGIN_ROOT}/m" } } }',
    '/plugins/b/.mcp.json': configText(['"y": { "command": "y" }']),
    '/plugins/c/plugin.json': '{ "name": "bad__name" }',
  });
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: [], inlineSpecs: [], plugins: ['/plugins/a', '/plugins/b', '/plugins/c'] },
    { DMCP_NO_USER_CONFIG: '1' },
    io,
  );
  assert.deepEqual(
    loaded.servers.map((s) => s.name),
    ['plugin_alpha_m', 'plugin_b_y'],
  );
  assert.ok(
    loaded.warnings.some((w) => /\/plugins\/a\/\.mcp\.json:1: the JSON ends too early.*plugin layer skipped/.test(w)),
    loaded.warnings.join('\n'),
  );
  assert.ok(
    loaded.warnings.some((w) => /\/plugins\/c: plugin name "bad__name" cannot name servers.*plugin skipped/.test(w)),
    loaded.warnings.join('\n'),
  );
});

void test('bad layer: explicit files are fatal when missing, naming the file', async () => {
  await assert.rejects(
    loadConfig(
      { workspace: WS, mcpConfigFiles: ['/nope.json'], inlineSpecs: [] },
      { DMCP_NO_USER_CONFIG: '1' },
      fakeIO({}),
    ),
    (err: unknown) =>
      err instanceof ConfigError && err.file === '/nope.json' && /cannot read it \(ENOENT\)/.test(err.message),
  );
});

void test('bad layer: a failing command in an explicit file is fatal; in the config dir it refuses the entry', async () => {
  const text = configText([GOOD_BEFORE, '"s": { "command": "x", "args": ["$(secret-tool lookup a)"] }']);
  const io = fakeIO({ '/cfg/mcp.json': text });
  const loaded = await loadConfig(
    { workspace: WS, mcpConfigFiles: [], inlineSpecs: [] },
    { ...BASE_ENV, DMCP_CONFIG_DIR: '/cfg' },
    io,
  );
  assert.deepEqual(
    loaded.servers.map((s) => s.name),
    ['good1'],
  );
  assert.match(
    loaded.refused[0].reason,
    /command expression "\$\(secret-tool lookup a\)" failed: command not found: secret-tool/,
  );
  await assert.rejects(
    loadConfig(
      { workspace: WS, mcpConfigFiles: ['/cfg/mcp.json'], inlineSpecs: [] },
      { ...BASE_ENV, DMCP_NO_USER_CONFIG: '1' },
      io,
    ),
    (err: unknown) => err instanceof ConfigError && err.line === 4 && err.field === 'args[0]',
  );
});

const badInline: [string, RegExp][] = [
  ['no-colon', /expected 'name:command args/],
  [':cmd', /expected 'name:command args/],
  ['a__b:cmd', /two separators/],
  ['srv:', /has no command/],
  ['srv:   ', /has no command/],
  ['web:ws://a.example/mcp', /WebSocket URLs/],
];
for (const [spec, match] of badInline) {
  void test(`bad inline spec: ${JSON.stringify(spec)}`, () => {
    assert.throws(
      () => parseInlineSpec(spec, 2, WS),
      (err: unknown) => err instanceof ConfigError && match.test(err.message) && err.message.startsWith('--mcp #3: '),
    );
  });
}
