import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError } from '../../config/types.js';
import { parseConfigText } from '../../config/parse.js';
import {
  createGovernance,
  decideTool,
  hookMatches,
  matchesToolRule,
  parseGovernanceText,
  parsePostToolUse,
  parsePreToolUse,
  runHookCommand,
  toolRuleProblem,
  type HookExit,
} from '../../governance/index.js';
import { hooksFor } from '../../governance/index.js';
import type { ToolInfo } from '../../contract/index.js';

describe('tool matchers', () => {
  const cases: [rule: string, name: string, matches: boolean][] = [
    ['mcp__github__*', 'mcp__github__search', true],
    ['mcp__github__*', 'mcp__github__', true],
    ['mcp__github__*', 'mcp__githubx__search', false],
    ['mcp__github__*', 'mcp__gitlab__search', false],
    ['mcp__docs__search', 'mcp__docs__search', true],
    ['mcp__docs__search', 'mcp__docs__search_all', false],
    ['mcp__docs__search', 'mcp__docs__searc', false],
    ['mcp__*', 'mcp__x__y', true],
    ['mcp__*', 'x__y', false],
    ['*', 'anything__at_all', true],
    ['mcp__*__read_*', 'mcp__fs__read_file', true],
    ['mcp__*__read_*', 'mcp__fs__write_file', false],
    // Naming only the server, as Claude Code's permission rules do, covers its tools.
    ['mcp__github', 'mcp__github__search', true],
    ['mcp__github', 'mcp__github', true],
    ['mcp__github', 'mcp__github2__search', false],
    ['mcp__my-server__*', 'mcp__my-server__go', true],
    ['docs__*', 'docs__search', true],
  ];
  for (const [rule, name, want] of cases) {
    test(`${rule} ${want ? 'matches' : 'does not match'} ${name}`, () =>
      assert.equal(matchesToolRule(rule, name), want));
  }

  const problems: [rule: unknown, fragment: RegExp | undefined][] = [
    ['mcp__github__*', undefined],
    ['mcp__a-b__c_d', undefined],
    ['', /must not be empty/],
    [42, /must be a string, got number/],
    [null, /got null/],
    ['mcp__gh__[abc]', /has "\[" at position 10/],
    ['mcp__gh__.*', /has "\." at position 10/],
    ['Bash(npm test)', /rules with arguments such as Bash\(\.\.\.\)/],
    ['mcp__x y', /has " " at position 7/],
    ['x'.repeat(300), /300 characters; at most 256/],
  ];
  for (const [rule, fragment] of problems) {
    test(`matcher ${JSON.stringify(rule).slice(0, 40)} ${fragment ? 'is refused' : 'is valid'}`, () => {
      const problem = toolRuleProblem(rule);
      if (fragment) assert.match(problem ?? '', fragment);
      else assert.equal(problem, undefined);
    });
  }
});

describe('decideTool: deny wins; every allow list must allow', () => {
  const operator = {
    source: 'settings.json:3',
    allow: ['mcp__github__*', 'mcp__docs__search'],
    deny: ['mcp__github__delete_*'],
  };
  const cases: [name: string, sets: Parameters<typeof decideTool>[0], allowed: boolean, reason?: RegExp][] = [
    ['mcp__github__search', [operator], true],
    ['mcp__docs__search', [operator], true],
    [
      'mcp__docs__fetch',
      [operator],
      false,
      /not in the allow list of settings\.json:3: no rule matches it \(allow: "mcp__github__\*", "mcp__docs__search"\)/,
    ],
    [
      'mcp__github__delete_repo',
      [operator],
      false,
      /denied by rule "mcp__github__delete_\*" \(settings\.json:3, deny\)/,
    ],
    // The turn cannot widen: its allow of everything still meets the operator's list.
    ['mcp__docs__fetch', [operator, { source: 'the turn', allow: ['mcp__*'] }], false, /settings\.json:3/],
    // The turn narrows.
    ['mcp__github__search', [operator, { source: 'the turn', allow: ['mcp__docs__*'] }], false, /the turn/],
    // A deny anywhere wins over an allow anywhere.
    [
      'mcp__docs__search',
      [operator, { source: 'the turn', deny: ['mcp__docs'] }],
      false,
      /denied by rule "mcp__docs" \(the turn, deny\)/,
    ],
    [
      'mcp__github__delete_repo',
      [
        { source: 'a', allow: ['mcp__*'] },
        { source: 'b', deny: ['mcp__github__delete_*'], allow: ['mcp__github__delete_repo'] },
      ],
      false,
      /denied/,
    ],
    ['mcp__x__y', [{ source: 'empty', allow: [] }], false, /it allows no tool/],
    ['mcp__x__y', [], true],
    ['mcp__x__y', [{ source: 'deny only', deny: ['mcp__z__*'] }], true],
  ];
  for (const [name, sets, allowed, reason] of cases) {
    test(`${name} under ${sets.map((s) => s.source).join(' + ') || 'no rules'}: ${allowed ? 'allowed' : 'refused'}`, () => {
      const v = decideTool(sets, name);
      assert.equal(v.allowed, allowed);
      if (!v.allowed && reason) assert.match(v.reason, reason);
    });
  }
});

test('decideTool: ask and approveWithEdits name their rules; a deny still wins over both', () => {
  const sets = [
    {
      source: 'settings.json:2',
      ask: ['mcp__db__*'],
      approveWithEdits: ['mcp__db__query'],
      deny: ['mcp__db__drop'],
    },
  ];
  assert.deepEqual(decideTool(sets, 'mcp__db__query'), {
    allowed: true,
    ask: 'rule "mcp__db__*" (settings.json:2, ask)',
    edits: 'rule "mcp__db__query" (settings.json:2, approveWithEdits)',
  });
  assert.deepEqual(decideTool(sets, 'mcp__db__insert'), {
    allowed: true,
    ask: 'rule "mcp__db__*" (settings.json:2, ask)',
  });
  assert.equal(decideTool(sets, 'mcp__db__drop').allowed, false);
  // Edits without an ask rule still apply when a hook asks.
  assert.deepEqual(decideTool([{ source: 's', approveWithEdits: ['mcp__x__*'] }], 'mcp__x__y'), {
    allowed: true,
    edits: 'rule "mcp__x__*" (s, approveWithEdits)',
  });
});

describe('Claude Code hook matchers', () => {
  const cases: [matcher: string | undefined, name: string, want: boolean][] = [
    [undefined, 'mcp__a__b', true],
    ['', 'mcp__a__b', true],
    ['*', 'mcp__a__b', true],
    ['mcp__a__b', 'mcp__a__b', true],
    ['mcp__a__b', 'mcp__a__bc', false],
    ['mcp__a__b|mcp__a__c', 'mcp__a__c', true],
    ['mcp__memory__.*', 'mcp__memory__create', true],
    ['mcp__memory__.*', 'mcp__other__create', false],
    // A regular expression is tested anywhere in the name, as Claude Code does; anchor to match whole names.
    ['write', 'mcp__fs__write_file', false],
    ['write.*', 'mcp__fs__write_file', true],
    ['^mcp__fs__write$', 'mcp__fs__write_file', false],
  ];
  for (const [matcher, name, want] of cases) {
    test(`${JSON.stringify(matcher)} ${want ? 'selects' : 'does not select'} ${name}`, () =>
      assert.equal(hookMatches(matcher, name), want));
  }
});

const exit = (exitCode: number | null, stdout = '', stderr = '', more: Partial<HookExit> = {}): HookExit => ({
  exitCode,
  stdout,
  stderr,
  timedOut: false,
  ...more,
});

describe('parsePreToolUse: what a PreToolUse hook decided', () => {
  const cases: [name: string, e: HookExit, want: Record<string, unknown>][] = [
    ['exit 0, no output', exit(0), { kind: 'continue' }],
    ['exit 0, plain text is ignored', exit(0, 'looks fine to me\n'), { kind: 'continue' }],
    [
      'exit 2: stderr is the reason',
      exit(2, '{"ignored":true}', 'rm is not allowed here\n'),
      { kind: 'deny', reason: 'rm is not allowed here' },
    ],
    [
      'exit 2 with nothing on stderr',
      exit(2),
      { kind: 'deny', reason: 'blocked by a PreToolUse hook (exit 2, nothing on stderr)' },
    ],
    [
      'exit 1 is a non-blocking error',
      exit(1, '', 'jq: command not found'),
      { kind: 'error', message: 'exited with 1: jq: command not found' },
    ],
    ['exit 127', exit(127), { kind: 'error', message: 'exited with 127' }],
    ['timed out', exit(null, '', '', { timedOut: true }), { kind: 'error', message: 'timed out after 5 s' }],
    [
      'could not start',
      exit(null, '', '', { spawnError: 'spawn /bin/sh ENOENT' }),
      { kind: 'error', message: 'could not run: spawn /bin/sh ENOENT' },
    ],
    ['killed', exit(null), { kind: 'error', message: 'was killed by a signal' }],
    [
      'JSON deny with reason',
      exit(
        0,
        JSON.stringify({
          hookSpecificOutput: {
            hookEventName: 'PreToolUse',
            permissionDecision: 'deny',
            permissionDecisionReason: 'no deletes',
          },
        }),
      ),
      { kind: 'deny', reason: 'no deletes' },
    ],
    [
      'JSON deny without reason',
      exit(0, JSON.stringify({ hookSpecificOutput: { permissionDecision: 'deny' } })),
      { kind: 'deny', reason: 'denied by a PreToolUse hook (no reason given)' },
    ],
    [
      'JSON allow',
      exit(
        0,
        JSON.stringify({
          hookSpecificOutput: {
            hookEventName: 'PreToolUse',
            permissionDecision: 'allow',
            permissionDecisionReason: 'ok',
          },
        }),
      ),
      { kind: 'allow', reason: 'ok' },
    ],
    [
      'JSON allow with updatedInput',
      exit(0, JSON.stringify({ hookSpecificOutput: { permissionDecision: 'allow', updatedInput: { text: 'safer' } } })),
      { kind: 'allow', updatedInput: { text: 'safer' } },
    ],
    [
      'updatedInput alone rewrites',
      exit(0, JSON.stringify({ hookSpecificOutput: { updatedInput: { a: 1 } } })),
      { kind: 'allow', updatedInput: { a: 1 } },
    ],
    [
      'ask becomes a refusal with the question',
      exit(0, JSON.stringify({ hookSpecificOutput: { permissionDecision: 'ask', permissionDecisionReason: 'sure?' } })),
      { kind: 'ask', reason: 'sure?' },
    ],
    [
      'defer is no decision',
      exit(0, JSON.stringify({ hookSpecificOutput: { permissionDecision: 'defer' } })),
      { kind: 'continue' },
    ],
    [
      'legacy decision block',
      exit(0, JSON.stringify({ decision: 'block', reason: 'old style' })),
      { kind: 'deny', reason: 'old style' },
    ],
    ['legacy decision approve', exit(0, JSON.stringify({ decision: 'approve' })), { kind: 'allow' }],
    [
      'continue false stops the call',
      exit(0, JSON.stringify({ continue: false, stopReason: 'halt' })),
      { kind: 'deny', reason: 'halt' },
    ],
    [
      'unknown decision',
      exit(0, JSON.stringify({ hookSpecificOutput: { permissionDecision: 'maybe' } })),
      { kind: 'error', message: 'permissionDecision "maybe" is not allow, deny, ask or defer' },
    ],
    ['broken JSON', exit(0, '{"hookSpecificOutput": '), { kind: 'error' }],
    ['JSON array', exit(0, '{}'.replace('{}', '{"a":1}')), { kind: 'continue' }],
    [
      'updatedInput not an object',
      exit(0, JSON.stringify({ hookSpecificOutput: { updatedInput: [1] } })),
      { kind: 'error', message: 'updatedInput must be a JSON object of arguments' },
    ],
    [
      'wrong hookEventName',
      exit(0, JSON.stringify({ hookSpecificOutput: { hookEventName: 'PostToolUse', permissionDecision: 'deny' } })),
      { kind: 'error', message: 'hookSpecificOutput.hookEventName is "PostToolUse", expected "PreToolUse"' },
    ],
  ];
  for (const [name, e, want] of cases) {
    test(name, () => {
      const got = parsePreToolUse(e, 5000) as Record<string, unknown>;
      for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k], v, `${k} of ${JSON.stringify(got)}`);
    });
  }
  test('a long reason is cut, saying how much', () => {
    const got = parsePreToolUse(exit(2, '', 'x'.repeat(5000)), 1000);
    assert.equal(got.kind, 'deny');
    assert.match(got.kind === 'deny' ? got.reason : '', /… \(1000 more characters cut\)$/);
  });
});

describe('parsePostToolUse: what a PostToolUse hook said', () => {
  const cases: [name: string, e: HookExit, want: Record<string, unknown>][] = [
    ['exit 0, nothing', exit(0), { kind: 'continue' }],
    [
      'exit 2: stderr to the model',
      exit(2, '', 'result contains a path\n'),
      { kind: 'note', note: 'result contains a path' },
    ],
    [
      'decision block with reason',
      exit(0, JSON.stringify({ decision: 'block', reason: 'check this' })),
      { kind: 'note', note: 'check this' },
    ],
    [
      'additionalContext',
      exit(0, JSON.stringify({ hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: 'fyi' } })),
      { kind: 'note', note: 'fyi' },
    ],
    [
      'both, in order',
      exit(0, JSON.stringify({ decision: 'block', reason: 'a', hookSpecificOutput: { additionalContext: 'b' } })),
      { kind: 'note', note: 'a\nb' },
    ],
    ['exit 1', exit(1, '', 'boom'), { kind: 'error', message: 'exited with 1: boom' }],
    ['timeout', exit(null, '', '', { timedOut: true }), { kind: 'error', message: 'timed out after 2 s' }],
    [
      'updatedMCPToolOutput is refused',
      exit(0, JSON.stringify({ hookSpecificOutput: { updatedMCPToolOutput: [] } })),
      { kind: 'error' },
    ],
  ];
  for (const [name, e, want] of cases) {
    test(name, () => {
      const got = parsePostToolUse(e, 2000) as Record<string, unknown>;
      for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k], v, `${k} of ${JSON.stringify(got)}`);
    });
  }
});

describe('the governance file (settings.json)', () => {
  const file = '/cfg/settings.json';
  test("reads permissions and hooks in Claude Code's shape", () => {
    const text = JSON.stringify(
      {
        model: 'ignored',
        permissions: { allow: ['mcp__github__*'], deny: ['mcp__github__delete_*'], defaultMode: 'default' },
        hooks: {
          PreToolUse: [
            {
              matcher: 'mcp__github__.*',
              hooks: [{ type: 'command', command: './guard.sh', timeout: 5, failClosed: true }],
            },
          ],
          PostToolUse: [{ hooks: [{ type: 'command', command: 'cat > /dev/null' }] }],
          Stop: [{ hooks: [{ type: 'command', command: 'true' }] }],
        },
      },
      null,
      2,
    );
    const g = parseGovernanceText(text, file);
    assert.deepEqual(g.rules?.allow, ['mcp__github__*']);
    assert.deepEqual(g.rules?.deny, ['mcp__github__delete_*']);
    assert.match(g.rules?.source ?? '', /^\/cfg\/settings\.json:3$/);
    assert.equal(g.hooks.length, 2);
    assert.deepEqual(
      { ...g.hooks[0], source: undefined },
      {
        event: 'PreToolUse',
        matcher: 'mcp__github__.*',
        command: './guard.sh',
        timeoutMs: 5000,
        failClosed: true,
        source: undefined,
      },
    );
    assert.equal(g.hooks[1].timeoutMs, 60_000);
    assert.equal(g.hooks[1].failClosed, false);
    assert.ok(
      g.warnings.some((w) => /hooks\.Stop ignored/.test(w)),
      g.warnings.join('\n'),
    );
    assert.ok(g.warnings.some((w) => /permissions\.defaultMode ignored/.test(w)));
  });

  const bad: [name: string, text: string, line: number, field: string, fragment: RegExp][] = [
    [
      'a bad allow matcher',
      '{\n  "permissions": {\n    "allow": [\n      "mcp__ok__*",\n      "mcp__gh__[x]"\n    ]\n  }\n}',
      5,
      'permissions.allow[1]',
      /has "\[" at position 10/,
    ],
    ['a bad deny matcher', '{\n "permissions": { "deny": [""] }\n}', 2, 'permissions.deny[0]', /must not be empty/],
    ['a bad ask matcher', '{\n "permissions": {\n  "ask": ["mcp__x", 7]\n }\n}', 3, 'permissions.ask[1]', /string/],
    [
      'a bad regex matcher',
      '{\n "hooks": {\n  "PreToolUse": [\n   { "matcher": "mcp__(",\n     "hooks": [] }\n  ]\n }\n}',
      4,
      'hooks.PreToolUse[0].matcher',
      /not a valid regular expression/,
    ],
    [
      'a misspelled hook field',
      '{"hooks": {"PreToolUse": [{"hooks": [\n{"type": "command", "command": "x", "timout": 5}\n]}]}}',
      2,
      'hooks.PreToolUse[0].hooks[0].timout',
      /unknown field "timout"/,
    ],
    [
      'a prompt hook',
      '{"hooks": {"PreToolUse": [{"hooks": [\n{"type": "prompt", "prompt": "x"}\n]}]}}',
      2,
      'hooks.PreToolUse[0].hooks[0].prompt',
      /unknown field "prompt"/,
    ],
    [
      'an http hook',
      '{"hooks": {"PreToolUse": [{"hooks": [\n{"type": "http", "command": "x"}\n]}]}}',
      2,
      'hooks.PreToolUse[0].hooks[0].type',
      /must be "command"/,
    ],
    [
      'a timeout too long',
      '{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "x",\n "timeout": 601}]}]}}',
      2,
      'hooks.PostToolUse[0].hooks[0].timeout',
      /at most 600/,
    ],
    [
      'failClosed not a boolean',
      '{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "x",\n "failClosed": "yes"}]}]}}',
      2,
      'hooks.PostToolUse[0].hooks[0].failClosed',
      /true or false/,
    ],
    [
      'an empty command',
      '{"hooks": {"PostToolUse": [{"hooks": [{"type": "command",\n "command": " "}]}]}}',
      2,
      'hooks.PostToolUse[0].hooks[0].command',
      /non-empty string/,
    ],
    ['hooks not a list', '{"hooks": {\n"PreToolUse": {}}}', 2, 'hooks.PreToolUse', /must be a list/],
    ['broken JSON', '{\n "permissions": {\n}', 3, '', /ends too early/],
  ];
  for (const [name, text, line, field, fragment] of bad) {
    test(`${name} is refused, naming file, line and field`, () => {
      assert.throws(
        () => parseGovernanceText(text, file),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError, String(err));
          assert.equal(err.line, line, err.message);
          if (field) assert.equal(err.field, field, err.message);
          assert.match(err.message, new RegExp(`^/cfg/settings\\.json:${line}: `));
          assert.match(err.message, fragment);
          return true;
        },
      );
    });
  }
});

describe('hooks and rules in an mcp.json layer', () => {
  const text = JSON.stringify(
    { mcpServers: { a: { command: 'x' } }, hooks: { PreToolUse: [] }, permissions: { allow: ['mcp__*'] } },
    null,
    2,
  );
  test("an untrusted layer's hooks are refused, saying where hooks come from", () => {
    const r = parseConfigText(text, { kind: 'workspace', file: '/ws/.agents/mcp.json', workspace: '/ws' }, {});
    assert.ok(
      r.warnings.some((w) =>
        /^\/ws\/\.agents\/mcp\.json:\d+: "hooks" refused: the workspace layer is untrusted \(the agent can write it\); hooks and allowed-tools rules come only from settings\.json in the worker's config dir/.test(
          w,
        ),
      ),
      r.warnings.join('\n'),
    );
    assert.ok(r.warnings.some((w) => /"permissions" refused/.test(w)));
  });
  test("a plugin manifest's hooks are refused too", () => {
    const manifest = JSON.stringify({ name: 'p', hooks: { PreToolUse: [] } });
    const r = parseConfigText(
      manifest,
      { kind: 'plugin', file: '/p/plugin.json', workspace: '/ws', plugin: { name: 'p', root: '/p' }, manifest: true },
      {},
    );
    assert.ok(
      r.warnings.some((w) => /"hooks" refused: the plugin layer is untrusted/.test(w)),
      r.warnings.join('\n'),
    );
  });
  test("a trusted mcp.json's hooks are ignored, pointing at settings.json", () => {
    const r = parseConfigText(text, { kind: 'configDir', file: '/cfg/mcp.json', workspace: '/ws' }, {});
    assert.ok(
      r.warnings.some((w) => /"hooks" ignored: hooks and allowed-tools rules come only from settings\.json/.test(w)),
      r.warnings.join('\n'),
    );
  });
});

describe("govern: the turn's tools under the rules", () => {
  const tool = (name: string): ToolInfo => ({ name, server: 's', tool: name, description: '', inputSchema: {} });
  const tools = [tool('mcp__s__read'), tool('mcp__s__write'), tool('mcp__s__delete')];
  const scrub = (t: string) => t;

  test('with no rules and no hooks the list is the same object: nothing is added', async () => {
    const gov = createGovernance({ env: { DMCP_NO_USER_CONFIG: '1' }, scrub });
    const g = await gov.load();
    assert.equal(gov.govern(tools, g), tools);
  });

  test('refused tools keep their place with the rule; hooks are marked with their longest timeout', async () => {
    const files: Record<string, string> = {
      '/cfg/settings.json': JSON.stringify({
        permissions: { deny: ['mcp__s__delete'] },
        hooks: {
          PreToolUse: [
            {
              matcher: 'mcp__s__write',
              hooks: [
                { type: 'command', command: 'a', timeout: 3 },
                { type: 'command', command: 'b', timeout: 7 },
              ],
            },
          ],
        },
      }),
    };
    const gov = createGovernance({
      env: { DMCP_CONFIG_DIR: '/cfg' },
      allowedTools: ['mcp__s__*'],
      scrub,
      readText: async (p) => {
        if (files[p] === undefined) throw Object.assign(new Error('missing'), { code: 'ENOENT' });
        return files[p];
      },
    });
    const g = await gov.load();
    const out = gov.govern(tools, g, {
      allowedTools: ['mcp__s__read', 'mcp__s__write', 'mcp__s__delete', 'mcp__t__*'],
    });
    assert.deepEqual(
      out.map((t) => [t.name, t.refusedBy ?? null, t.hooks ?? null]),
      [
        ['mcp__s__read', null, null],
        ['mcp__s__write', null, { PreToolUse: 7000 }],
        ['mcp__s__delete', 'denied by rule "mcp__s__delete" (/cfg/settings.json:1, deny)', null],
      ],
    );
    assert.throws(
      () => gov.govern(tools, g, { allowedTools: ['mcp__s__(x)'] }),
      /the turn's allowedTools\[0\]: tool matcher "mcp__s__\(x\)" has "\(" at position 9/,
    );
  });

  test('a bad DMCP_ALLOWED_TOOLS is refused at start, naming the variable', () => {
    assert.throws(
      () => createGovernance({ env: {}, allowedTools: ['mcp__ok', 'mcp__bad.*'], scrub }),
      /DMCP_ALLOWED_TOOLS\[1\]: tool matcher "mcp__bad\.\*"/,
    );
  });

  test('hooksFor takes the longest timeout per event', () => {
    const specs = parseGovernanceText(
      JSON.stringify({
        hooks: {
          PostToolUse: [{ hooks: [{ type: 'command', command: 'x', timeout: 2 }] }],
          PreToolUse: [{ matcher: 'nope', hooks: [{ type: 'command', command: 'y' }] }],
        },
      }),
      'f',
    ).hooks;
    assert.deepEqual(hooksFor(specs, 'mcp__a__b'), { PostToolUse: 2000 });
    assert.equal(
      hooksFor(
        specs.filter((h) => h.event === 'PreToolUse'),
        'mcp__a__b',
      ),
      undefined,
    );
  });
});

describe('runHookCommand: one hook process', () => {
  test('gets its stdin, cwd and environment; exit code and both streams come back', async () => {
    const exitInfo = await runHookCommand({
      command: 'read -r line; echo "in=$line cwd=$(pwd) v=$HOOK_VAR"; echo oops >&2; exit 3',
      stdin: '{"a":1}\n',
      cwd: '/',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOOK_VAR: 'x' },
      timeoutMs: 10_000,
    });
    assert.deepEqual(exitInfo, { exitCode: 3, stdout: 'in={"a":1} cwd=/ v=x\n', stderr: 'oops\n', timedOut: false });
  });

  test('a timeout kills the whole process group, a background child included', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dmcp-hookrunner-'));
    try {
      const pidFile = join(dir, 'child.pid');
      const started = Date.now();
      const exitInfo = await runHookCommand({
        command: `sleep 30 & echo $! > ${pidFile}; wait`,
        stdin: '',
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        timeoutMs: 500,
      });
      assert.equal(exitInfo.timedOut, true);
      assert.equal(exitInfo.exitCode, null);
      assert.ok(Date.now() - started < 10_000);
      const pid = Number((await readFile(pidFile, 'utf8')).trim());
      // Dead, or a zombie waiting for a parent that does not reap (PID 1 in some containers).
      const running = async () => {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
        return stat !== '' && !/^\d+ \(.*\) Z/.test(stat);
      };
      let alive = true;
      for (let i = 0; i < 50 && alive; i++) {
        alive = await running();
        if (alive) await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(alive, false, 'the background sleep was killed with its group');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a command that cannot start is a spawn error, not a crash', async () => {
    const exitInfo = await runHookCommand({
      command: 'true',
      stdin: '',
      cwd: '/no/such/folder/here',
      env: {},
      timeoutMs: 1000,
    });
    assert.equal(exitInfo.exitCode, null);
    assert.match(exitInfo.spawnError ?? '', /ENOENT/);
  });
});
