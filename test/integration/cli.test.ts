import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { everythingServer, fixtureServer, runCli, tempDir } from '../support/harness.js';

/** ESC, BEL or the 8-bit CSI: any of them in printed output could drive a terminal. */
const hasTerminalControl = (s: string) => /[\u001b\u0007\u009b]/.test(s); // eslint-disable-line no-control-regex

describe('the durable-mcp CLI on the embedded default (no TEMPORAL_ADDRESS, no dev running)', () => {
  let dataDir: string;
  const run = async (args: string[]) => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DMCP_DATA_DIR: dataDir,
      DMCP_NO_USER_CONFIG: '1',
    };
    return runCli(args, env);
  };

  before(async () => {
    dataDir = await tempDir('dmcp-cli-');
  });

  test('run --json, then transcript in a separate command reads the same call from history', async () => {
    const ran = await run([
      'run',
      '--mcp',
      `everything:${process.execPath} ${everythingServer} stdio`,
      '--call',
      'mcp__everything__echo {"message":"extension check"}',
      '--call',
      'mcp__everything__get-tiny-image {}',
      '--json',
    ]);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(
      ran.stderr,
      /^no durable-mcp dev is running on the data dir \S+ and TEMPORAL_ADDRESS is unset: starting a Temporal dev server for this command alone/m,
      'it says it starts a server of its own',
    );
    const out = JSON.parse(ran.stdout) as {
      turnId: string;
      calls: { name: string; arguments: unknown; outcome: { content: { text?: string }[] } }[];
    };
    assert.match(out.turnId, /^run-.+\/turn-1$/);
    assert.equal(out.calls[0]!.name, 'mcp__everything__echo');
    assert.deepEqual(out.calls[0]!.arguments, { message: 'extension check' });
    assert.match(String(out.calls[0]!.outcome.content[0]?.text), /extension check/);

    const images = join(dataDir, 'images');
    const shown = await run(['transcript', out.turnId, '--save-images', images]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /everything \[ready\] stdio/);
    assert.match(shown.stdout, /mcp__everything__echo \{"message":"extension check"\}/);
    assert.match(shown.stdout, /Echo: extension check/);
    assert.deepEqual(await readdir(images), ['call-2-1.png']);

    const again = await run(['transcript', out.turnId, '--save-images', images]);
    assert.equal(again.code, 1, 'saving into a folder that has the file already fails');
    assert.match(again.stderr, /call-2-1\.png already exists; not overwritten/);

    const sessionId = out.turnId.split('/')[0]!;
    const turns = await run(['turn', 'list', sessionId, '--json']);
    assert.equal(turns.code, 0, turns.stderr);
    const listed = JSON.parse(turns.stdout) as { turnId: string; status: string }[];
    assert.deepEqual(
      listed.map((t) => [t.turnId, t.status]),
      [[out.turnId, 'completed']],
    );
    const sessions = await run(['session', 'list']);
    assert.equal(sessions.code, 0, sessions.stderr);
    assert.ok(
      sessions.stdout.split('\n').some((l) => l.startsWith(`${sessionId}  1 turn(s)  latest ${out.turnId} completed`)),
      sessions.stdout,
    );
  });

  test('server text cannot drive the terminal: run and transcript strip control sequences', async () => {
    const evil = '\u001b]0;pwned\u0007\u001b[2J\u001b[31mred text';
    const ran = await run([
      'run',
      '--mcp',
      `fixture:${process.execPath} ${fixtureServer}`,
      '--call',
      `mcp__fixture__echo ${JSON.stringify({ text: evil })}`,
    ]);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /mcp__fixture__echo: red text/);
    assert.ok(!hasTerminalControl(ran.stdout), ran.stdout);
    const turnId = /turn (\S+) \(see it again/.exec(ran.stderr)?.[1];
    assert.ok(turnId, ran.stderr);
    const shown = await run(['transcript', turnId]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /red text/);
    assert.ok(!hasTerminalControl(shown.stdout), shown.stdout);
  });

  test('bad input: one clear line on stderr and a non-zero exit, no stack trace', async () => {
    const badJson = await run([
      'run',
      '--mcp',
      `fixture:${process.execPath} ${fixtureServer}`,
      '--call',
      'mcp__fixture__echo {"text":',
    ]);
    assert.equal(badJson.code, 2);
    assert.match(badJson.stderr, /^error: --call #1 \(mcp__fixture__echo\): arguments are not valid JSON/m);
    assert.doesNotMatch(badJson.stderr, /\n\s+at /);

    const missing = await run(['run', '--mcp-config', join(dataDir, 'nope.json'), '--call', 'x {}']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nope\.json/);

    const unknown = await run([
      'run',
      '--mcp',
      `fixture:${process.execPath} ${fixtureServer}`,
      '--call',
      'mcp__fixture__nope {}',
    ]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /error: unknown tool "mcp__fixture__nope" \(available: .*mcp__fixture__echo/);

    // A server that failed to start: its failure first, then its tools as unknown because of it.
    const broken = await run([
      'run',
      '--mcp',
      `broken:${join(dataDir, 'no-such-command')}`,
      '--call',
      'mcp__broken__echo {}',
    ]);
    assert.equal(broken.code, 1);
    const serverLine = broken.stderr.search(/^error: server "broken" failed: /m);
    const toolLine = broken.stderr.search(
      /^error: unknown tool "mcp__broken__echo": its server "broken" failed \(above\)$/m,
    );
    assert.ok(serverLine >= 0 && toolLine > serverLine, broken.stderr);

    const noTurn = await run(['transcript', 'no-such-session/turn-1']);
    assert.notEqual(noTurn.code, 0);
    assert.match(
      noTurn.stderr,
      /^error: no turn "no-such-session\/turn-1" on \S+; `durable-mcp turn list no-such-session` lists that session's turns$/m,
    );
    // A session ID where a turn ID belongs: the same words from both commands, with the form to use.
    for (const args of [
      ['transcript', 'no-such-session'],
      ['turn', 'end', 'no-such-session'],
      ['answer', 'no-such-session'],
    ]) {
      const wrong = await run(args);
      assert.notEqual(wrong.code, 0);
      assert.match(
        wrong.stderr,
        /^error: invalid turn ID "no-such-session": expected <sessionId>\/turn-<n>, e\.g\. "no-such-session\/turn-1"; `durable-mcp turn list no-such-session`/m,
        args.join(' '),
      );
    }
  });
});
