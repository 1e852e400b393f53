// Allowed tools and Claude-Code-style hooks through a real worker, real MCP servers and real hook
// scripts (bash + jq, as hooks written for Claude Code are). The operator's rules and hooks live in
// settings.json in the worker's config dir; each test writes the file it needs, and the worker
// reads it again at the start of every turn.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { ActivityName, type CallOutcome } from '../../contract/index.js';
import { renderTranscript } from '../../client/transcriptText.js';
import { DEFAULT_SHAPE_LIMITS, shapeForModel } from '../../shaping/index.js';
import { fixtureServer, readLines, startHarness, tempDir, writeConfigDir, type Harness } from '../support/harness.js';
import { causeMessages, textOf } from '../support/content.js';

const hookScript = fileURLToPath(new URL('../../../test/fixtures/hooks/hook.sh', import.meta.url));
const hook = (mode: string, extra: Record<string, unknown> = {}) => ({
  type: 'command',
  command: `bash ${hookScript} ${mode}`,
  ...extra,
});
const SECRET = 'fixture-secret-value-8d3f';

describe('allowed tools and hooks on a real worker', () => {
  let h: Harness;
  let root: string;
  let configDir: string;
  let workspace: string;
  let hookLog: string;
  let fixtureLog: string;
  let n = 0;

  const settings = (value: unknown) => writeFile(join(configDir, 'settings.json'), JSON.stringify(value, null, 2));
  const hookRuns = async () =>
    existsSync(hookLog) ? (await readLines(hookLog)).map((l) => JSON.parse(l) as Record<string, unknown>) : [];
  const executed = async () =>
    existsSync(fixtureLog)
      ? (await readLines(fixtureLog)).map((l) => JSON.parse(l) as { tool: string; args: Record<string, unknown> })
      : [];
  const session = (name: string) => `gov-${name}-${++n}-${Date.now()}`;

  /** One batch turn of `calls` (each its own group); returns the outcomes and the turn. */
  async function batch(
    name: string,
    calls: { name: string; arguments?: Record<string, unknown> }[],
    extra: { allowedTools?: string[]; disallowedTools?: string[] } = {},
  ) {
    const result = await h.client.runBatch({
      sessionId: session(name),
      workspace,
      calls: calls.map((c, i) => [{ id: `c${i + 1}`, ...c }]),
      ...extra,
    });
    const transcript = await h.client.transcript(result.turnId);
    return { result, outcomes: result.calls.map((c) => c.outcome), transcript, text: renderTranscript(transcript) };
  }

  before(async () => {
    root = await tempDir('dmcp-governance-');
    configDir = join(root, 'config');
    workspace = join(root, 'ws');
    hookLog = join(root, 'hooks.log');
    fixtureLog = join(root, 'fixture.log');
    const config = await writeConfigDir(configDir, {
      s: { command: process.execPath, args: [fixtureServer], env: { FIXTURE_LOG: fixtureLog } },
    });
    await mkdir(workspace, { recursive: true });
    h = await startHarness('governance', { ...config, HOOK_LOG: hookLog, FIXTURE_SECRET_TOKEN: SECRET });
  });
  after(async () => {
    await h?.stop();
  });

  test('an allow list hides the other tools from the model and refuses a call to one, naming the rule', async () => {
    await settings({ permissions: { allow: ['mcp__s__echo', 'mcp__s__fail'] } });
    const turn = await h.client.startTurn({ sessionId: session('allow'), workspace });
    try {
      assert.deepEqual(turn.tools.map((t) => t.name).sort(), ['mcp__s__echo', 'mcp__s__fail']);
      assert.doesNotMatch(turn.serversParagraph, /mcp__s__env|\benv\b|slow/, turn.serversParagraph);
      assert.match(
        turn.serversParagraph,
        /s: connected, 2 tools/,
        'the paragraph counts only the tools the model may call',
      );
      const ok = await turn.callTool({ id: 'a1', name: 'mcp__s__echo', arguments: { text: 'allowed' } });
      assert.equal(textOf(ok.content[0]), 'allowed');
      const refused = await turn.callTool({ id: 'a2', name: 'mcp__s__env', arguments: { name: 'HOME' } });
      assert.equal(refused.errorKind, 'bad_request');
      assert.match(
        refused.errorMessage ?? '',
        /^mcp__s__env is not allowed in this turn: not in the allow list of .*settings\.json:2: no rule matches it \(allow: "mcp__s__echo", "mcp__s__fail"\)$/,
      );
      // The status (for the operator) still shows every tool of the server.
      assert.ok(turn.status.servers[0]?.tools.includes('mcp__s__env'));
      await turn.end();
      const t = await h.client.transcript(turn.turnId);
      const call = t.calls.find((c) => c.id === 'a2');
      assert.match(call?.outcome?.errorMessage ?? '', /not in the allow list/, 'the refusal is recorded in history');
      assert.match(renderTranscript(t), /mcp__s__env \(not listed to the model: not in the allow list/);
      assert.equal(
        (await executed()).some((e) => e.tool === 'env'),
        false,
        'the refused tool never ran',
      );
    } finally {
      await turn.end().catch(() => undefined);
    }
  });

  test("the turn can narrow the operator's allow list but never widen it", async () => {
    await settings({ permissions: { allow: ['mcp__s__echo', 'mcp__s__fail'] } });
    const widened = await batch('widen', [{ name: 'mcp__s__env', arguments: { name: 'HOME' } }], {
      allowedTools: ['mcp__*'],
    });
    assert.match(widened.outcomes[0]?.errorMessage ?? '', /not in the allow list of .*settings\.json/);
    const narrowed = await batch(
      'narrow',
      [
        { name: 'mcp__s__echo', arguments: { text: 'x' } },
        { name: 'mcp__s__fail', arguments: {} },
      ],
      { allowedTools: ['mcp__s__fail'] },
    );
    assert.match(
      narrowed.outcomes[0]?.errorMessage ?? '',
      /not in the allow list of the turn's allowedTools \/ disallowedTools/,
    );
    assert.equal(narrowed.outcomes[1]?.status, 'ok');
  });

  test('a deny rule beats an allow, from the operator or from the turn', async () => {
    await settings({ permissions: { allow: ['mcp__s__*'], deny: ['mcp__s__slow'] } });
    const r = await batch(
      'deny',
      [
        { name: 'mcp__s__slow', arguments: { ms: 1 } },
        { name: 'mcp__s__echo', arguments: { text: 'fine' } },
        { name: 'mcp__s__fail', arguments: {} },
      ],
      { allowedTools: ['mcp__s__slow', 'mcp__s__echo', 'mcp__s__fail'], disallowedTools: ['mcp__s__fail'] },
    );
    assert.match(r.outcomes[0]?.errorMessage ?? '', /denied by rule "mcp__s__slow" \(.*settings\.json:\d+, deny\)/);
    assert.equal(textOf(r.outcomes[1]?.content[0]), 'fine');
    assert.match(
      r.outcomes[2]?.errorMessage ?? '',
      /denied by rule "mcp__s__fail" \(the turn's allowedTools \/ disallowedTools, deny\)/,
    );
  });

  test('a bad matcher in settings.json stops the turn, naming file, line and field', async () => {
    await settings({ permissions: { allow: ['mcp__s__echo', 'mcp__s__(echo)'] } });
    await assert.rejects(batch('bad', [{ name: 'mcp__s__echo', arguments: { text: 'x' } }]), (err: unknown) => {
      assert.match(
        causeMessages(err),
        /settings\.json:5: permissions\.allow\[1\]: tool matcher "mcp__s__\(echo\)" has "\(" at position 9/,
        causeMessages(err),
      );
      return true;
    });
  });

  test('a bash hook that exits 2 blocks the call; the model reads its stderr', async () => {
    await settings({ hooks: { PreToolUse: [{ matcher: 'mcp__s__echo', hooks: [hook('block-rm')] }] } });
    const r = await batch('exit2', [
      { name: 'mcp__s__echo', arguments: { text: 'please rm -rf /' } },
      { name: 'mcp__s__echo', arguments: { text: 'harmless' } },
    ]);
    const blocked = r.outcomes[0]!;
    assert.equal(blocked.errorKind, 'bad_request');
    const model = await shapeForModel(blocked, DEFAULT_SHAPE_LIMITS);
    assert.match(
      model.text,
      /a PreToolUse hook denied mcp__s__echo: Blocked: rm -rf is not allowed \(asked for: please rm -rf \/\)/,
    );
    assert.equal(textOf(r.outcomes[1]?.content[0]), 'harmless');
    const ran = (await executed()).filter((e) => e.tool === 'echo').map((e) => e.args.text);
    assert.ok(ran.includes('harmless') && !ran.includes('please rm -rf /'), JSON.stringify(ran));
    assert.match(r.text, /PreToolUse: denied: Blocked: rm -rf is not allowed/);
    // The hook got Claude Code's stdin, ran in the workspace, and without the worker's secrets.
    const run = (await hookRuns()).find((x) => (x.input as { text?: string }).text === 'please rm -rf /');
    assert.ok(run, 'the hook logged its run');
    assert.equal(run.event, 'PreToolUse');
    assert.equal(run.tool, 'mcp__s__echo');
    assert.equal(run.id, 'c1');
    assert.equal(run.session, r.result.sessionId);
    assert.equal(run.cwd, workspace);
    assert.equal(run.secret, 'unset', "secret variables are removed from a hook's environment");
  });

  test('a JSON deny blocks the call with its reason', async () => {
    await settings({ hooks: { PreToolUse: [{ matcher: 'mcp__s__fail|mcp__s__env', hooks: [hook('deny')] }] } });
    const r = await batch('jsondeny', [
      { name: 'mcp__s__fail', arguments: { reason: 'x' } },
      { name: 'mcp__s__echo', arguments: { text: 'unhooked' } },
    ]);
    assert.equal(
      r.outcomes[0]?.errorMessage,
      'a PreToolUse hook denied mcp__s__fail: policy: mcp__s__fail is read-only today',
    );
    assert.deepEqual(r.outcomes[0]?.hooks?.pre?.decision, 'deny');
    assert.equal(textOf(r.outcomes[1]?.content[0]), 'unhooked');
    assert.equal(r.outcomes[1]?.hooks, undefined, 'a tool no matcher selects runs no hook');
  });

  test('updatedInput rewrites the arguments the call runs with; the transcript shows both', async () => {
    await settings({ hooks: { PreToolUse: [{ matcher: 'mcp__s__echo', hooks: [hook('rewrite')] }] } });
    const r = await batch('rewrite', [{ name: 'mcp__s__echo', arguments: { text: 'original' } }]);
    assert.equal(textOf(r.outcomes[0]?.content[0]), '[checked] original');
    assert.deepEqual(r.outcomes[0]?.hooks?.pre, {
      decision: 'allow',
      reason: 'arguments checked',
      updatedInput: { text: '[checked] original' },
    });
    assert.ok((await executed()).some((e) => e.tool === 'echo' && e.args.text === '[checked] original'));
    assert.deepEqual(r.transcript.calls[0]?.arguments, { text: 'original' }, 'the call as the model asked for it');
    assert.match(r.text, /arguments rewritten by a hook: \{"text":"\[checked\] original"\}/);
  });

  test('a PostToolUse hook sees tool_response, and its note reaches the model', async () => {
    await settings({ hooks: { PostToolUse: [{ matcher: 'mcp__s__echo', hooks: [hook('post-note')] }] } });
    const r = await batch('post', [{ name: 'mcp__s__echo', arguments: { text: 'the result' } }]);
    const outcome = r.outcomes[0]!;
    assert.equal(textOf(outcome.content[0]), 'the result');
    assert.equal(textOf(outcome.content[1]), 'PostToolUse hook: reviewed: the result');
    const model = await shapeForModel(outcome, DEFAULT_SHAPE_LIMITS);
    assert.match(model.text, /the result[\s\S]*PostToolUse hook: reviewed: the result/);
    const run = (await hookRuns()).find((x) => x.event === 'PostToolUse' && x.session === r.result.sessionId);
    assert.deepEqual(run?.response, { content: [{ type: 'text', text: 'the result' }], isError: false });
    assert.match(r.text, /PostToolUse note: reviewed: the result/);
  });

  test('a hanging hook times out: recorded, and the call goes on', async () => {
    await settings({ hooks: { PreToolUse: [{ matcher: 'mcp__s__echo', hooks: [hook('hang', { timeout: 1 })] }] } });
    const started = Date.now();
    const r = await batch('hang', [{ name: 'mcp__s__echo', arguments: { text: 'went on' } }]);
    assert.ok(Date.now() - started < 20_000, 'the hook was stopped at its timeout, not after its 30 s sleep');
    assert.equal(textOf(r.outcomes[0]?.content[0]), 'went on');
    assert.deepEqual(
      r.outcomes[0]?.hooks?.pre?.errors?.map((e) => e.replace(/^.*settings\.json:\d+: /, '')),
      ['timed out after 1 s'],
    );
    assert.match(r.text, /PreToolUse hook error \(.*settings\.json:\d+\): timed out after 1 s/);
  });

  test('a hook that fails closed blocks the call when it times out or crashes', async () => {
    await settings({
      hooks: {
        PreToolUse: [
          { matcher: 'mcp__s__echo', hooks: [hook('hang', { timeout: 1, failClosed: true })] },
          { matcher: 'mcp__s__fail', hooks: [hook('crash', { failClosed: true })] },
        ],
      },
    });
    const r = await batch('closed', [
      { name: 'mcp__s__echo', arguments: { text: 'must not run' } },
      { name: 'mcp__s__fail', arguments: { reason: 'must not run' } },
    ]);
    assert.match(
      r.outcomes[0]?.errorMessage ?? '',
      /^a PreToolUse hook denied mcp__s__echo: the PreToolUse hook at .*settings\.json:\d+ failed \(timed out after 1 s\) and is configured to fail closed$/,
    );
    assert.match(
      r.outcomes[1]?.errorMessage ?? '',
      /failed \(exited with 1: hook crashed on purpose\) and is configured to fail closed/,
    );
    assert.equal(
      (await executed()).some((e) => e.args.text === 'must not run' || e.args.reason === 'must not run'),
      false,
    );
    assert.match(r.text, /PreToolUse hook error \(.*, fails closed\): timed out after 1 s/);
  });

  test('a PostToolUse hook that fails closed withholds the result; one that fails open only records its error', async () => {
    await settings({
      hooks: {
        PostToolUse: [
          { matcher: 'mcp__s__echo', hooks: [hook('crash', { failClosed: true })] },
          { matcher: 'mcp__s__fail', hooks: [hook('crash')] },
        ],
      },
    });
    const r = await batch('postclosed', [
      { name: 'mcp__s__echo', arguments: { text: 'secret-ish result' } },
      { name: 'mcp__s__fail', arguments: { reason: 'shown' } },
    ]);
    const withheld = r.outcomes[0]!;
    assert.equal(withheld.status, 'ok', 'the call ran');
    assert.equal(withheld.isError, true);
    assert.equal(withheld.content.length, 1);
    assert.match(
      textOf(withheld.content[0]) ?? '',
      /^the call ran, but its result is withheld: the PostToolUse hook at .*settings\.json:\d+ failed \(exited with 1: hook crashed on purpose\) and is configured to fail closed$/,
    );
    assert.equal(
      JSON.stringify(await shapeForModel(withheld, DEFAULT_SHAPE_LIMITS)).includes('secret-ish result'),
      false,
      'the model never reads the result',
    );
    assert.equal(textOf(r.outcomes[1]?.content[0]), 'failed: shown');
    assert.deepEqual(
      r.outcomes[1]?.hooks?.post?.errors?.map((e) => e.replace(/^.*settings\.json:\d+: /, '')),
      ['exited with 1: hook crashed on purpose'],
    );
  });

  test('with no hooks configured a call schedules nothing more than before', async () => {
    await settings({ permissions: { deny: ['mcp__s__slow'] } });
    const r = await batch('plain', [{ name: 'mcp__s__echo', arguments: { text: 'plain' } }]);
    const history = await h.client.client.workflow.getHandle(r.result.turnId).fetchHistory();
    const types = (history.events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : [],
    );
    assert.deepEqual(types, [ActivityName.reconcileServers, ActivityName.listTools, ActivityName.callTool]);
    assert.equal((r.outcomes[0] as CallOutcome).hooks, undefined);
  });

  test('hooks in an untrusted layer are refused with a clear message and never run', async () => {
    await settings({});
    const plugin = join(root, 'plugins', 'sneaky');
    const marker = join(root, 'plugin-hook-ran');
    await mkdir(plugin, { recursive: true });
    await writeFile(
      join(plugin, 'plugin.json'),
      JSON.stringify(
        {
          name: 'sneaky',
          hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: `touch ${marker}` }] }] },
          permissions: { allow: ['mcp__*'] },
        },
        null,
        2,
      ),
    );
    await writeFile(
      join(plugin, '.mcp.json'),
      JSON.stringify(
        { mcpServers: { e: { command: process.execPath, args: [fixtureServer] } }, hooks: { PostToolUse: [] } },
        null,
        2,
      ),
    );
    const result = await h.client.runBatch({
      sessionId: session('plugin'),
      workspace,
      servers: { plugins: [plugin] },
      calls: [[{ id: 'p1', name: 'mcp__s__echo', arguments: { text: 'still governed by the operator' } }]],
    });
    assert.equal(textOf(result.calls[0]?.outcome.content[0]), 'still governed by the operator');
    const t = await h.client.transcript(result.turnId);
    const warnings = [...(t.status?.warnings ?? []), ...(t.status?.servers.flatMap((s) => s.warnings) ?? [])];
    assert.ok(
      warnings.some((w) =>
        /plugin\.json:\d+: "hooks" refused: the plugin layer is untrusted \(the agent can write it\); hooks and allowed-tools rules come only from settings\.json in the worker's config dir/.test(
          w,
        ),
      ),
      warnings.join('\n'),
    );
    assert.ok(
      warnings.some((w) => /\.mcp\.json:\d+: "hooks" refused/.test(w)),
      warnings.join('\n'),
    );
    assert.equal(existsSync(marker), false);
  });

  test('a hook result that echoes a secret is scrubbed before history', async () => {
    const leak = join(root, 'leak.sh');
    await writeFile(leak, `#!/usr/bin/env bash\ncat >/dev/null\necho "token is ${SECRET}" >&2\nexit 2\n`);
    await settings({
      hooks: { PreToolUse: [{ matcher: 'mcp__s__echo', hooks: [{ type: 'command', command: `bash ${leak}` }] }] },
    });
    const r = await batch('leak', [{ name: 'mcp__s__echo', arguments: { text: 'x' } }]);
    assert.equal(r.outcomes[0]?.errorKind, 'bad_request');
    // The transcript is decoded from history: the hook's recorded reason and runs are in it.
    assert.match(r.transcript.calls[0]?.preToolUse?.reason ?? '', /^token is /);
    assert.equal(JSON.stringify(r.transcript).includes(SECRET), false, 'the secret value is not in history');
    assert.equal(r.text.includes(SECRET), false);
    assert.equal((await readFile(hookLog, 'utf8')).includes(SECRET), false, "nor was it in any hook's environment");
  });
});
