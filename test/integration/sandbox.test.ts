import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Turn } from '../../client/turnClient.js';
import { startHarness, tempDir, writeConfigDir } from '../support/harness.js';
import { textOf } from '../support/content.js';

const probeServer = fileURLToPath(new URL('../fixtures/probeServer.js', import.meta.url));
const probe = { command: process.execPath, args: [probeServer] };

/** Files the tests put into (or tried to plant in) the shared data dir; removed when the process exits. */
const dataFiles: string[] = [];
process.once('exit', () => {
  for (const f of dataFiles) rmSync(f, { force: true });
});

interface Probe {
  ok: boolean;
  value?: unknown;
  error?: string;
}

async function ask(turn: Turn, server: string, tool: string, args: Record<string, unknown> = {}): Promise<Probe> {
  const outcome = await turn.callTool({
    id: `${server}-${tool}-${randomBytes(3).toString('hex')}`,
    name: `mcp__${server}__${tool}`,
    arguments: args,
  });
  assert.equal(outcome.status, 'ok', JSON.stringify(outcome));
  return JSON.parse(textOf(outcome.status === 'ok' ? outcome.content[0] : undefined) ?? 'null') as Probe;
}

/**
 * One worker per setting: a trusted server (`trusted`, config dir) and an untrusted one (`wsprobe`,
 * the workspace layer) both run the probe, so every sandbox assertion has a control that shows
 * what the same server can do outside the sandbox.
 */
async function setUp(
  name: string,
  env: NodeJS.ProcessEnv,
  moreWorkspaceServers: Record<string, unknown> = {},
  workspaceAt?: string,
) {
  const root = await tempDir(`dmcp-sandbox-${name}-`);
  const configDir = join(root, 'config');
  // The default data dir (./.data): the client signs the turn's references with the turn key there.
  const dataDir = resolve('.data');
  const secretName = `probe-secret-${randomBytes(4).toString('hex')}.txt`;
  const workspace = workspaceAt ?? join(root, 'ws');
  const config = await writeConfigDir(configDir, { trusted: probe });
  await mkdir(dataDir, { recursive: true });
  await mkdir(join(workspace, '.agents'), { recursive: true });
  await writeFile(join(configDir, 'secret.txt'), 'config-dir-secret\n');
  await writeFile(join(dataDir, secretName), 'data-dir-secret\n');
  dataFiles.push(join(dataDir, secretName));
  await writeFile(
    join(workspace, '.agents', 'mcp.json'),
    JSON.stringify({
      mcpServers: { wsprobe: { ...probe, env: { PLAIN_SETTING: 'from-the-entry' } }, ...moreWorkspaceServers },
    }),
  );
  const marker = `marker-${randomBytes(6).toString('hex')}`;
  const h = await startHarness(`sandbox-${name}`, {
    ...config,
    DMCP_WORKSPACE_MCP: 'true',
    // Not secret by name: an unsandboxed server inherits it (the control), a sandboxed one must not.
    PROBE_WORKER_MARKER: marker,
    ...env,
  });
  return { h, root, configDir, dataDir, workspace, marker, dataSecret: join(dataDir, secretName) };
}

describe('untrusted stdio servers run in a sandbox', () => {
  let s: Awaited<ReturnType<typeof setUp>>;
  const strays: string[] = [];
  // A folder of the host's /tmp itself (not TMPDIR): what the private /tmp must keep hidden.
  let hostTmp: string;
  before(async () => {
    hostTmp = await mkdtemp('/tmp/dmcp-host-secret-');
    strays.push(hostTmp);
    await writeFile(join(hostTmp, 'secret.txt'), 'host-tmp-secret\n');
    s = await setUp(
      'on',
      {},
      {
        // An entry cannot show its sandbox a host folder: not by naming it on its command line...
        wsargs: { ...probe, args: [...probe.args, join(hostTmp, 'secret.txt'), `--data=${hostTmp}`] },
        // ...nor by starting there.
        wscwd: { ...probe, cwd: hostTmp },
      },
    );
  });
  after(async () => {
    await s?.h.stop();
    for (const f of strays) rmSync(f, { force: true, recursive: true });
  });

  test('an entry opens no other host folder: /tmp paths on its command line stay hidden, a cwd outside the workspace is refused', async () => {
    const turn = await s.h.client.startTurn({ sessionId: `sandbox-paths-${Date.now()}`, workspace: s.workspace });
    try {
      const byName = Object.fromEntries(turn.status.servers.map((x) => [x.name, x]));
      const secret = join(hostTmp, 'secret.txt');
      // The control: outside the sandbox the file is there.
      assert.equal((await ask(turn, 'trusted', 'read', { path: secret })).value, 'host-tmp-secret\n');
      assert.equal(byName.wsargs?.state, 'ready', JSON.stringify(byName.wsargs));
      assert.equal(
        (await ask(turn, 'wsargs', 'read', { path: secret })).ok,
        false,
        'a /tmp folder named on the command line is not shown',
      );
      assert.equal((await ask(turn, 'wsprobe', 'read', { path: secret })).ok, false);
      assert.equal(byName.wscwd?.state, 'failed', JSON.stringify(byName.wscwd));
      const source = join(s.workspace, '.agents', 'mcp.json');
      assert.ok(byName.wscwd?.error?.includes(`"cwd" ${JSON.stringify(hostTmp)} in ${source}:`), byName.wscwd?.error);
      assert.ok(byName.wscwd?.error?.includes(`lies outside the workspace ${s.workspace};`), byName.wscwd?.error);
    } finally {
      await turn.end();
    }
  });

  test('the workspace server sees no worker process, variable or secret folder, and writes only the workspace', async () => {
    const turn = await s.h.client.startTurn({ sessionId: `sandbox-on-${Date.now()}`, workspace: s.workspace });
    try {
      const byName = Object.fromEntries(turn.status.servers.map((x) => [x.name, x]));
      assert.equal(byName.trusted?.state, 'ready', JSON.stringify(turn.status));
      assert.equal(byName.wsprobe?.state, 'ready', JSON.stringify(byName.wsprobe));

      // The control: the trusted server runs as before and can see all of this.
      const trustedEnv = (await ask(turn, 'trusted', 'env')).value as Record<string, string>;
      assert.equal(trustedEnv.PROBE_WORKER_MARKER, s.marker);
      const workerEnviron = await ask(turn, 'trusted', 'environ', { pid: process.pid });
      assert.ok(
        workerEnviron.ok && (workerEnviron.value as string[]).some((v) => v.startsWith('TEMPORAL_ADDRESS=')),
        JSON.stringify(workerEnviron).slice(0, 300),
      );
      assert.equal((await ask(turn, 'trusted', 'read', { path: s.dataSecret })).value, 'data-dir-secret\n');
      assert.ok(((await ask(turn, 'trusted', 'pids')).value as number[]).includes(process.pid));

      // The sandboxed server: a cleared environment with only PATH/HOME/LANG and its own `env`.
      const env = (await ask(turn, 'wsprobe', 'env')).value as Record<string, string>;
      assert.equal(env.PROBE_WORKER_MARKER, undefined);
      assert.equal(env.TEMPORAL_ADDRESS, undefined);
      assert.equal(env.PLAIN_SETTING, 'from-the-entry');
      assert.deepEqual(
        Object.keys(env).filter((k) => !['PATH', 'HOME', 'LANG', 'PLAIN_SETTING', 'PWD'].includes(k)),
        [],
        JSON.stringify(env),
      );

      // No other process: the worker's PID is not there, and its parent holds no worker variable.
      const pids = (await ask(turn, 'wsprobe', 'pids')).value as number[];
      assert.ok(
        !pids.includes(process.pid) || process.pid < 10,
        `worker PID ${process.pid} visible: ${JSON.stringify(pids)}`,
      );
      assert.ok(pids.length < 10, `only the sandbox's own processes: ${JSON.stringify(pids)}`);
      const worker = await ask(turn, 'wsprobe', 'environ', { pid: process.pid });
      assert.ok(!JSON.stringify(worker).includes('TEMPORAL_ADDRESS'), JSON.stringify(worker).slice(0, 300));
      const parent = await ask(turn, 'wsprobe', 'environ');
      assert.ok(
        !JSON.stringify(parent).includes('TEMPORAL_ADDRESS') && !JSON.stringify(parent).includes(s.marker),
        JSON.stringify(parent).slice(0, 300),
      );

      // The data dir and the config dir are empty inside.
      assert.equal((await ask(turn, 'wsprobe', 'read', { path: s.dataSecret })).ok, false);
      assert.equal((await ask(turn, 'wsprobe', 'read', { path: join(s.configDir, 'secret.txt') })).ok, false);

      // Writes reach the host only inside the workspace.
      const inside = join(s.workspace, 'made-by-probe.txt');
      assert.deepEqual(await ask(turn, 'wsprobe', 'write', { path: inside }), { ok: true, value: 'written' });
      assert.equal(await readFile(inside, 'utf8'), 'written by the probe server\n');
      const outsideTmp = join(s.root, 'outside.txt');
      await ask(turn, 'wsprobe', 'write', { path: outsideTmp });
      assert.equal(existsSync(outsideTmp), false, 'a write next to the workspace never reaches the host');
      const outsideRoot = join(process.cwd(), `.dmcp-probe-${randomBytes(4).toString('hex')}`);
      strays.push(outsideRoot);
      const denied = await ask(turn, 'wsprobe', 'write', { path: outsideRoot });
      assert.equal(denied.ok, false);
      assert.equal(existsSync(outsideRoot), false);
      const dataWrite = join(s.dataDir, `planted-${randomBytes(4).toString('hex')}.txt`);
      dataFiles.push(dataWrite);
      await ask(turn, 'wsprobe', 'write', { path: dataWrite });
      assert.equal(existsSync(dataWrite), false, 'nothing lands in the data dir');
    } finally {
      await turn.end();
    }
  });
});

describe("the sandbox hides the files the worker's settings name, and its home", () => {
  // Outside the host's /tmp, which the private /tmp hides anyway: under the working directory.
  const base = resolve(`.dmcp-sandbox-secrets-${randomBytes(4).toString('hex')}`);
  const home = join(base, 'home');
  // Most workspaces lie under the user's home.
  const workspace = join(home, 'proj');
  const secrets = {
    tlsKey: join(base, 'tls', 'client.key'),
    tlsCert: join(base, 'tls', 'client.pem'),
    profile: join(base, 'temporal.toml'),
    homeCredentials: join(home, '.aws', 'credentials'),
    otherTurnKey: join(home, 'other-instance', '.data', 'turn.key'),
    // Named by a setting and inside the workspace: still hidden.
    tokensFile: join(workspace, 'api-tokens.txt'),
    extra: join(base, 'extra', 'secret.txt'),
  };
  let s: Awaited<ReturnType<typeof setUp>>;
  before(async () => {
    for (const [name, file] of Object.entries(secrets)) {
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, `${name}-secret\n`);
    }
    await writeFile(join(workspace, 'notes.txt'), 'workspace notes\n');
    await mkdir(join(home, '.agents'), { recursive: true });
    await writeFile(join(home, '.agents', 'mcp.json'), JSON.stringify({ mcpServers: { homeprobe: probe } }));
    s = await setUp(
      'hide',
      {
        HOME: home,
        TEMPORAL_TLS_CLIENT_KEY_PATH: secrets.tlsKey,
        TEMPORAL_TLS_CLIENT_CERT_PATH: secrets.tlsCert,
        TEMPORAL_CONFIG_FILE: secrets.profile,
        DMCP_API_TOKENS_FILE: secrets.tokensFile,
        DMCP_SANDBOX_HIDE: join(base, 'extra'),
      },
      {},
      workspace,
    );
  });
  after(async () => {
    await s?.h.stop();
    rmSync(base, { force: true, recursive: true });
  });

  test('a workspace server reads none of them, and still reads and writes its workspace under the home', async () => {
    const turn = await s.h.client.startTurn({ sessionId: `sandbox-hide-${Date.now()}`, workspace });
    try {
      const byName = Object.fromEntries(turn.status.servers.map((x) => [x.name, x]));
      assert.equal(byName.wsprobe?.state, 'ready', JSON.stringify(byName.wsprobe));
      const readable: string[] = [];
      for (const [name, file] of Object.entries(secrets)) {
        // The control: outside the sandbox each file is there.
        assert.equal((await ask(turn, 'trusted', 'read', { path: file })).value, `${name}-secret\n`, name);
        if ((await ask(turn, 'wsprobe', 'read', { path: file })).ok) readable.push(name);
      }
      assert.deepEqual(readable, [], 'secrets readable in the sandbox');
      assert.equal(
        (await ask(turn, 'wsprobe', 'read', { path: join(workspace, 'notes.txt') })).value,
        'workspace notes\n',
      );
      const made = join(workspace, 'made-by-probe.txt');
      assert.deepEqual(await ask(turn, 'wsprobe', 'write', { path: made }), { ok: true, value: 'written' });
      assert.equal(await readFile(made, 'utf8'), 'written by the probe server\n');
      // The hidden file inside the workspace cannot be replaced either.
      assert.equal((await ask(turn, 'wsprobe', 'write', { path: secrets.tokensFile })).ok, false);
      assert.equal(await readFile(secrets.tokensFile, 'utf8'), 'tokensFile-secret\n');
      const planted = join(home, '.bashrc');
      await ask(turn, 'wsprobe', 'write', { path: planted });
      assert.equal(existsSync(planted), false, 'a write into the home next to the workspace never reaches the host');
    } finally {
      await turn.end();
    }
  });

  test('the home itself as the workspace is refused, saying why', async () => {
    const turn = await s.h.client.startTurn({ sessionId: `sandbox-home-${Date.now()}`, workspace: home });
    try {
      const byName = Object.fromEntries(turn.status.servers.map((x) => [x.name, x]));
      assert.equal(byName.trusted?.state, 'ready', JSON.stringify(turn.status));
      assert.equal(byName.homeprobe?.state, 'failed', JSON.stringify(byName.homeprobe));
      assert.match(byName.homeprobe?.error ?? '', /the workspace .* is the worker's home, which the sandbox hides/);
    } finally {
      await turn.end();
    }
  });
});

for (const [mode, env, reason] of [
  ['refuse', { DMCP_UNTRUSTED_STDIO: 'refuse' }, /DMCP_UNTRUSTED_STDIO=refuse/],
  ['no-bwrap', { DMCP_BWRAP: '/nonexistent/bwrap' }, /no sandbox is available[^]*\/nonexistent\/bwrap/],
] as const) {
  describe(`untrusted stdio servers with ${mode}`, () => {
    let s: Awaited<ReturnType<typeof setUp>>;
    before(async () => {
      s = await setUp(mode, env);
    });
    after(async () => {
      await s?.h.stop();
    });

    test('the workspace server fails with the reason and how to allow it; the trusted one starts', async () => {
      const turn = await s.h.client.startTurn({ sessionId: `sandbox-${mode}-${Date.now()}`, workspace: s.workspace });
      try {
        const byName = Object.fromEntries(turn.status.servers.map((x) => [x.name, x]));
        assert.equal(byName.trusted?.state, 'ready', JSON.stringify(turn.status));
        assert.equal(byName.wsprobe?.state, 'failed');
        assert.match(byName.wsprobe?.error ?? '', reason);
        assert.match(byName.wsprobe?.error ?? '', /DMCP_UNTRUSTED_STDIO=allow/);
        assert.equal((await ask(turn, 'trusted', 'env')).value && true, true);
      } finally {
        await turn.end();
      }
    });
  });
}

describe('untrusted stdio servers with allow', () => {
  let s: Awaited<ReturnType<typeof setUp>>;
  before(async () => {
    s = await setUp('allow', { DMCP_UNTRUSTED_STDIO: 'allow' });
  });
  after(async () => {
    await s?.h.stop();
  });

  test('the workspace server runs unsandboxed, as the operator chose', async () => {
    const turn = await s.h.client.startTurn({ sessionId: `sandbox-allow-${Date.now()}`, workspace: s.workspace });
    try {
      const byName = Object.fromEntries(turn.status.servers.map((x) => [x.name, x]));
      assert.equal(byName.wsprobe?.state, 'ready', JSON.stringify(byName.wsprobe));
      const env = (await ask(turn, 'wsprobe', 'env')).value as Record<string, string>;
      assert.equal(env.PROBE_WORKER_MARKER, s.marker);
    } finally {
      await turn.end();
    }
  });
});
