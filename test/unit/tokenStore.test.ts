/**
 * The OAuth token store: encrypted at rest (no token in any file), 0600 files in a 0700 folder,
 * the login ID and a pending login's start readable without the key, key rotation (previous keys
 * read, `rekey` rewrites), tampering refused, the key file, the lock, and the settings behind it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, chmod, readFile, readdir, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { isSecretName } from '../../config/secrets.js';
import { loadSettings } from '../../settings/index.js';
import {
  createTokenStore,
  keyId,
  oauthKeyFile,
  tokenStoreFromSettings,
  TokenStoreError,
  type LoginRecord,
  type PendingLogin,
} from '../../plane/tokenStore.js';
import { readLines, tempDir, waitUntil, within } from '../support/harness.js';

function record(server: string, overrides: Partial<LoginRecord> = {}): LoginRecord {
  return {
    server,
    serverUrl: 'https://mcp.example.com/mcp',
    loginId: `login-${randomBytes(3).toString('hex')}`,
    createdAt: '2026-01-01T00:00:00.000Z',
    discovery: { authorizationServerUrl: 'https://auth.example.com/' },
    client: { client_id: 'client-1' },
    resource: 'https://mcp.example.com/mcp',
    tokens: {
      access_token: `at-${randomBytes(16).toString('hex')}`,
      refresh_token: `rt-${randomBytes(16).toString('hex')}`,
      token_type: 'bearer',
      expires_in: 3600,
      obtainedAt: 1,
      expiresAt: 3_600_001,
    },
    ...overrides,
  };
}

function pending(server: string): PendingLogin {
  return {
    server,
    serverUrl: 'https://mcp.example.com/mcp',
    startedAt: '2026-01-02T03:04:05.000Z',
    state: `state-${randomBytes(8).toString('hex')}`,
    codeVerifier: `verifier-${randomBytes(16).toString('hex')}`,
    redirectUrl: 'http://127.0.0.1:8788/callback',
    authorizationUrl: 'https://auth.example.com/authorize?x=1',
    discovery: { authorizationServerUrl: 'https://auth.example.com/' },
    client: { client_id: 'client-1' },
  };
}

describe('token store files', () => {
  test('a login reads back; its file is 0600 in a 0700 folder and holds no token, verifier or state in clear', async () => {
    const dir = join(await tempDir(), 'oauth');
    const store = createTokenStore({ dir, key: randomBytes(32) });
    const r = record('linear');
    const p = pending('linear');
    await store.write(r);
    await store.writePending(p);
    assert.deepEqual(await store.read('linear'), r);
    assert.deepEqual(await store.readPending('linear'), p);
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    for (const name of await readdir(dir)) {
      assert.equal((await stat(join(dir, name))).mode & 0o777, 0o600, name);
      const raw = await readFile(join(dir, name), 'utf8');
      for (const secret of [r.tokens.access_token, r.tokens.refresh_token!, p.codeVerifier, p.state, 'client-1']) {
        assert.ok(!raw.includes(secret), `${name} holds ${secret.slice(0, 6)}... in clear`);
      }
    }
    assert.deepEqual(await store.servers(), ['linear']);
  });

  test('the login ID and when a pending login started are readable without the key', async () => {
    const dir = await tempDir();
    const r = record('docs');
    await createTokenStore({ dir, key: randomBytes(32) }).write(r);
    await createTokenStore({ dir, key: randomBytes(32) }).writePending(pending('docs'));
    const other = createTokenStore({ dir, key: randomBytes(32) });
    assert.equal(await other.loginId('docs'), r.loginId);
    assert.equal((await other.pendingSince('docs'))?.toISOString(), '2026-01-02T03:04:05.000Z');
    assert.deepEqual(await other.loginState('docs'), {
      loginId: r.loginId,
      pendingSince: new Date('2026-01-02T03:04:05.000Z'),
    });
    await createTokenStore({ dir, key: randomBytes(32) }).write({
      ...r,
      dead: { at: '2026-02-03T00:00:00.000Z', reason: 'invalid_grant' },
    });
    assert.deepEqual(await other.loginState('docs'), {
      loginId: r.loginId,
      expiredAt: new Date('2026-02-03T00:00:00.000Z'),
      pendingSince: new Date('2026-01-02T03:04:05.000Z'),
    });
    assert.deepEqual(await other.loginState('nobody'), {});
    assert.equal(await other.loginId('nobody'), undefined);
    assert.equal(await other.pendingSince('nobody'), undefined);
    await assert.rejects(other.read('docs'), (err: Error) => {
      assert.ok(err instanceof TokenStoreError);
      assert.match(
        err.message,
        /docs\.login\.json: cannot be decrypted with DMCP_OAUTH_KEY .*DMCP_OAUTH_KEYS_PREVIOUS/,
      );
      return true;
    });
  });

  test('a previous key still reads; rekey rewrites every file with the current key', async () => {
    const dir = await tempDir();
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const r = record('a');
    await createTokenStore({ dir, key: oldKey }).write(r);
    await createTokenStore({ dir, key: oldKey }).writePending(pending('b'));
    const rotated = createTokenStore({ dir, key: newKey, previousKeys: [oldKey] });
    assert.deepEqual(await rotated.read('a'), r);
    const { rewritten } = await rotated.rekey();
    assert.deepEqual(rewritten.map((f) => f.slice(dir.length + 1)).sort(), ['a.login.json', 'b.pending.json']);
    const envelope = JSON.parse(await readFile(join(dir, 'a.login.json'), 'utf8')) as { keyId: string };
    assert.equal(envelope.keyId, keyId(newKey));
    const newOnly = createTokenStore({ dir, key: newKey });
    assert.deepEqual(await newOnly.read('a'), r);
    assert.equal((await newOnly.readPending('b'))?.state, (await rotated.readPending('b'))?.state);
    assert.deepEqual((await newOnly.rekey()).rewritten, []);
  });

  test('a changed clear field, a file copied under another name, or a bad name is refused', async () => {
    const dir = await tempDir();
    const store = createTokenStore({ dir, key: randomBytes(32) });
    await store.write(record('one'));
    const file = join(dir, 'one.login.json');
    const envelope = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    await writeFile(file, JSON.stringify({ ...envelope, loginId: 'forged' }));
    await assert.rejects(store.read('one'), /one\.login\.json: cannot be decrypted/);
    await writeFile(join(dir, 'two.login.json'), JSON.stringify(envelope));
    await assert.rejects(store.read('two'), /two\.login\.json: holds server "one", not "two"/);
    await writeFile(join(dir, 'three.login.json'), 'not json');
    await assert.rejects(store.read('three'), /three\.login\.json: not a durable-mcp login file/);
    await assert.rejects(store.read('../etc'), /server name "\.\.\/etc" must start with a letter/);
    await assert.rejects(store.write(record('a__b')), /two separators in a row/);
  });

  test('remove deletes the login and the pending login', async () => {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    await store.write(record('x'));
    await store.writePending(pending('x'));
    assert.equal(await store.remove('x'), true);
    assert.equal(await store.read('x'), undefined);
    assert.equal(await store.pendingSince('x'), undefined);
    assert.equal(await store.remove('x'), false);
  });
});

describe('token store lock', () => {
  test('callers of one process take turns', async () => {
    const store = createTokenStore({ dir: await tempDir(), key: randomBytes(32) });
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 5 }, () =>
        store.withLock('s', async () => {
          inside += 1;
          most = Math.max(most, inside);
          await new Promise((r) => setTimeout(r, 10));
          inside -= 1;
        }),
      ),
    );
    assert.equal(most, 1);
  });

  test('a lock older than the stale limit is taken over; a live holder is waited for, then named', async () => {
    const dir = await tempDir();
    const store = createTokenStore({ dir, key: randomBytes(32), lockStaleMs: 5_000, lockWaitMs: 300 });
    await store.write(record('s'));
    const lock = join(dir, 's.lock');
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: 'elsewhere', at: '' }));
    const old = new Date(Date.now() - 60_000);
    await utimes(lock, old, old);
    assert.equal(await store.withLock('s', async () => 'ran'), 'ran');
    // A fresh lock of a process that is alive (this one, on another host's name) is not taken.
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: 'elsewhere', at: '' }));
    await assert.rejects(
      store.withLock('s', async () => 'ran'),
      /s\.lock: another process has held the login lock for more than 300 ms/,
    );
  });
});

/** Runs `script` (an ES module body) in a separate Node process, with `env` added; resolves with its exit code. */
function runNode(script: string, env: Record<string, string>): Promise<number | null> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, T_MODULE: new URL('../../plane/tokenStore.js', import.meta.url).href, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

/** Lets separate processes start a step at the same moment: waits (a few ms early by timer, then spinning) for epoch ms `at`. */
const untilScript = `
  async function until(at) {
    if (at - Date.now() > 10) await new Promise((r) => setTimeout(r, at - Date.now() - 8));
    while (Date.now() < at);
  }`;

/**
 * A separate process that takes the lock of server `s` in `dir` `rounds` times from epoch ms
 * `startAt`, holding it `holdMs` each time, and appends `enter <tag>` / `leave <tag>` lines to `log`.
 */
function lockTaker(opts: {
  dir: string;
  log: string;
  tag: string;
  lockStaleMs: number;
  holdMs: number;
  rounds: number;
  startAt?: number;
}): Promise<number | null> {
  const script = `${untilScript}
    const { appendFile } = await import('node:fs/promises');
    const { createTokenStore } = await import(process.env.T_MODULE);
    const store = createTokenStore({ dir: process.env.T_DIR, key: Buffer.alloc(32), lockStaleMs: Number(process.env.T_STALE), lockWaitMs: 20000 });
    await until(Number(process.env.T_START));
    for (let i = 0; i < Number(process.env.T_ROUNDS); i++) {
      await store.withLock('s', async () => {
        await appendFile(process.env.T_LOG, 'enter ' + process.env.T_TAG + '\\n');
        await new Promise((r) => setTimeout(r, Number(process.env.T_HOLD)));
        await appendFile(process.env.T_LOG, 'leave ' + process.env.T_TAG + '\\n');
      });
    }`;
  return runNode(script, {
    T_DIR: opts.dir,
    T_LOG: opts.log,
    T_TAG: opts.tag,
    T_STALE: String(opts.lockStaleMs),
    T_HOLD: String(opts.holdMs),
    T_ROUNDS: String(opts.rounds),
    T_START: String(opts.startAt ?? 0),
  });
}

/** The most critical sections open at once in an enter/leave log. */
function mostInside(lines: string[]): number {
  let inside = 0;
  let most = 0;
  for (const line of lines) {
    inside += line.startsWith('enter ') ? 1 : -1;
    most = Math.max(most, inside);
  }
  return most;
}

describe('token store lock across processes', () => {
  test("a holder that outlives the stale limit is not taken over, and its release leaves the next holder's lock alone", async () => {
    const dir = await tempDir();
    const log = join(dir, 'log');
    const holder = lockTaker({ dir, log, tag: 'holder', lockStaleMs: 600, holdMs: 2_000, rounds: 1 });
    await waitUntil('the holder to enter', async () => (await readLines(log)).includes('enter holder'), 10_000);
    const takers = [1, 2].map((n) =>
      lockTaker({ dir, log, tag: `taker${n}`, lockStaleMs: 600, holdMs: 800, rounds: 1 }),
    );
    assert.deepEqual(await within(20_000, 'the lock takers', Promise.all([holder, ...takers])), [0, 0, 0]);
    const lines = await readLines(log);
    assert.equal(lines.length, 6, lines.join(', '));
    assert.deepEqual(lines.slice(0, 2), ['enter holder', 'leave holder']);
    assert.equal(mostInside(lines), 1, lines.join(', '));
    await assert.rejects(access(join(dir, 's.lock')), { code: 'ENOENT' });
  });

  test('of several processes that find one stale lock, one at a time enters', async () => {
    const dir = await tempDir();
    const log = join(dir, 'log');
    const lock = join(dir, 's.lock');
    for (let round = 0; round < 3; round++) {
      await writeFile(lock, JSON.stringify({ pid: 1, host: 'elsewhere', at: '', pad: 'x'.repeat(4_000_000) }));
      const old = new Date(Date.now() - 60_000);
      await utimes(lock, old, old);
      const startAt = Date.now() + 1_500;
      const codes = await within(
        30_000,
        'the lock takers',
        Promise.all(
          [1, 2, 3, 4].map((n) =>
            lockTaker({ dir, log, tag: `p${n}`, lockStaleMs: 5_000, holdMs: 50, rounds: 1, startAt: startAt + n }),
          ),
        ),
      );
      assert.deepEqual(codes, [0, 0, 0, 0]);
    }
    const lines = await readLines(log);
    assert.equal(lines.length, 3 * 4 * 2);
    assert.equal(mostInside(lines), 1, lines.join(', '));
  });
});

describe('token store lock, concurrent callers in one process', () => {
  test('stores that find one stale lock at the same moment never both enter', async () => {
    const dir = await tempDir();
    const lock = join(dir, 's.lock');
    // A long stale lock makes judging it slow, so one taker judges while another has already replaced it.
    const stale = JSON.stringify({ pid: 1, host: 'elsewhere', at: '', pad: 'x'.repeat(4_000_000) });
    let inside = 0;
    let most = 0;
    for (let round = 0; round < 15; round++) {
      await writeFile(lock, stale);
      const old = new Date(Date.now() - 60_000);
      await utimes(lock, old, old);
      await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          await new Promise((r) => setTimeout(r, i * 3));
          const store = createTokenStore({ dir, key: randomBytes(32), lockStaleMs: 10_000, lockWaitMs: 20_000 });
          await store.withLock('s', async () => {
            inside += 1;
            most = Math.max(most, inside);
            await new Promise((r) => setTimeout(r, 20));
            inside -= 1;
          });
        }),
      );
    }
    assert.equal(most, 1);
  });

  test('a holder past the stale limit keeps its lock while it is alive', async () => {
    const dir = await tempDir();
    const a = createTokenStore({ dir, key: randomBytes(32), lockStaleMs: 600, lockWaitMs: 10_000 });
    const b = createTokenStore({ dir, key: randomBytes(32), lockStaleMs: 600, lockWaitMs: 10_000 });
    const events: string[] = [];
    const first = a.withLock('s', async () => {
      events.push('a in');
      await new Promise((r) => setTimeout(r, 2_000));
      events.push('a out');
    });
    await new Promise((r) => setTimeout(r, 50));
    const second = b.withLock('s', async () => {
      events.push('b in');
      await new Promise((r) => setTimeout(r, 50));
      events.push('b out');
    });
    await Promise.all([first, second]);
    assert.deepEqual(events, ['a in', 'a out', 'b in', 'b out']);
  });

  test("a holder whose lock was taken over (it looked stale) does not delete the new holder's lock when it finishes", async () => {
    const dir = await tempDir();
    const lock = join(dir, 's.lock');
    const a = createTokenStore({ dir, key: randomBytes(32), lockStaleMs: 3_000, lockWaitMs: 10_000 });
    const b = createTokenStore({ dir, key: randomBytes(32), lockStaleMs: 3_000, lockWaitMs: 10_000 });
    const c = createTokenStore({ dir, key: randomBytes(32), lockStaleMs: 3_000, lockWaitMs: 300 });
    let bInside = false;
    let releaseB: () => void = () => undefined;
    const bHolding = new Promise<void>((r) => (releaseB = r));
    let bRun: Promise<void> = Promise.resolve();
    await a.withLock('s', async () => {
      // As if this holder had been frozen past the stale limit: its lock looks abandoned.
      const old = new Date(Date.now() - 60_000);
      await utimes(lock, old, old);
      bRun = b.withLock('s', async () => {
        bInside = true;
        await bHolding;
      });
      await waitUntil('the second store to take the lock over', async () => bInside, 5_000);
    });
    // a is done; b still holds the lock, so c waits for it and gives up.
    await assert.rejects(
      c.withLock('s', async () => 'ran'),
      /s\.lock: another process has held the login lock/,
    );
    releaseB();
    await bRun;
    await assert.rejects(access(lock), { code: 'ENOENT' });
    assert.equal(await c.withLock('s', async () => 'ran'), 'ran');
  });
});

describe('OAuth settings and the key', () => {
  test('defaults, and bad values named by variable without echoing a key', () => {
    const s = loadSettings({ DMCP_DATA_DIR: '/srv/dmcp' });
    assert.deepEqual(s.oauth, { dir: '/srv/dmcp/oauth', previousKeys: [], callbackPort: 8788 });
    const key = randomBytes(32).toString('base64');
    const t = loadSettings({
      DMCP_OAUTH_DIR: '/shared/oauth',
      DMCP_OAUTH_KEY: key,
      DMCP_OAUTH_KEYS_PREVIOUS: `${randomBytes(32).toString('hex')}`,
      DMCP_OAUTH_CALLBACK_PORT: '9999',
    });
    assert.equal(t.oauth.dir, '/shared/oauth');
    assert.equal(t.oauth.key, key);
    assert.equal(t.oauth.previousKeys.length, 1);
    assert.equal(t.oauth.callbackPort, 9999);
    const bad = 'not-a-key-but-secretish-text';
    assert.throws(
      () =>
        loadSettings({ DMCP_OAUTH_KEY: bad, DMCP_OAUTH_KEYS_PREVIOUS: `${key},short`, DMCP_OAUTH_CALLBACK_PORT: 'x' }),
      (err: Error) => {
        assert.match(err.message, /DMCP_OAUTH_KEY must be 32 bytes/);
        assert.match(err.message, /DMCP_OAUTH_KEYS_PREVIOUS \(key #2\) must be 32 bytes/);
        assert.match(err.message, /DMCP_OAUTH_CALLBACK_PORT must be a port number/);
        assert.ok(!err.message.includes(bad));
        return true;
      },
    );
  });

  test('the key variables are secret names (never handed to servers, scrubbed)', () => {
    for (const name of ['DMCP_OAUTH_KEY', 'DMCP_OAUTH_KEYS_PREVIOUS']) assert.equal(isSecretName(name, {}), true, name);
  });

  test('without DMCP_OAUTH_KEY the key file is created 0600 once and reused; a readable key file is refused', async () => {
    const dataDir = await tempDir();
    const settings = loadSettings({ DMCP_DATA_DIR: dataDir });
    const first = await tokenStoreFromSettings(settings);
    const r = record('k');
    await first.write(r);
    assert.equal((await stat(oauthKeyFile(settings))).mode & 0o777, 0o600);
    assert.deepEqual(await (await tokenStoreFromSettings(settings)).read('k'), r);
    // Moving to DMCP_OAUTH_KEY: the file's key still reads what it wrote.
    const withVariable = await tokenStoreFromSettings(
      loadSettings({ DMCP_DATA_DIR: dataDir, DMCP_OAUTH_KEY: randomBytes(32).toString('hex') }),
    );
    assert.deepEqual(await withVariable.read('k'), r);
    await chmod(oauthKeyFile(settings), 0o644);
    await assert.rejects(
      tokenStoreFromSettings(settings),
      /oauth\.key: the OAuth key file is readable by other users \(mode 644\); run chmod 600 on it/,
    );
  });

  test('processes that create the key file at the same moment all get the one key that won', async () => {
    const base = await tempDir();
    const rounds = 25;
    const startAt = Date.now() + 2_000;
    // Each process, in each round at the same moment as the others, opens the store of a fresh data dir and writes a login.
    const script = `${untilScript}
      const { tokenStoreFromSettings } = await import(process.env.T_MODULE);
      const { loadSettings } = await import(new URL('../settings/index.js', process.env.T_MODULE).href);
      let failed = 0;
      for (let round = 0; round < Number(process.env.T_ROUNDS); round++) {
        await until(Number(process.env.T_START) + round * 60);
        try {
          const store = await tokenStoreFromSettings(loadSettings({ DMCP_DATA_DIR: process.env.T_BASE + '/' + round }));
          await store.write({ server: 'p' + process.env.T_TAG, serverUrl: 'https://mcp.example.com/mcp', loginId: 'l', createdAt: '', discovery: {}, client: { client_id: 'c' }, tokens: { access_token: 'a', token_type: 'bearer', obtainedAt: 1 } });
        } catch (err) {
          failed += 1;
          console.error('round ' + round + ': ' + err.message);
        }
      }
      process.exit(failed === 0 ? 0 : 1);`;
    const codes = await within(
      60_000,
      'the key file creators',
      Promise.all(
        [1, 2, 3, 4, 5, 6].map((n) =>
          runNode(script, { T_BASE: base, T_TAG: String(n), T_START: String(startAt), T_ROUNDS: String(rounds) }),
        ),
      ),
    );
    assert.deepEqual(codes, [0, 0, 0, 0, 0, 0]);
    for (let round = 0; round < rounds; round++) {
      const settings = loadSettings({ DMCP_DATA_DIR: join(base, String(round)) });
      const store = await tokenStoreFromSettings(settings);
      for (const n of [1, 2, 3, 4, 5, 6]) assert.equal((await store.read(`p${n}`))?.tokens.access_token, 'a');
      assert.equal((await stat(oauthKeyFile(settings))).mode & 0o777, 0o600);
      assert.deepEqual((await readdir(settings.dataDir)).sort(), ['oauth', 'oauth.key']);
    }
  });

  test('after rekey with DMCP_OAUTH_KEY set, rekey names the old key file; once it is deleted it is not read', async () => {
    const dataDir = await tempDir();
    const fileOnly = await tokenStoreFromSettings(loadSettings({ DMCP_DATA_DIR: dataDir }));
    assert.equal((await fileOnly.rekey()).oldKeyFile, undefined);
    const r = record('k');
    await fileOnly.write(r);
    const variable = { DMCP_DATA_DIR: dataDir, DMCP_OAUTH_KEY: randomBytes(32).toString('hex') };
    const rotated = await tokenStoreFromSettings(loadSettings(variable));
    const result = await rotated.rekey();
    assert.deepEqual(result, { rewritten: [join(rotated.dir, 'k.login.json')], oldKeyFile: oauthKeyFile({ dataDir }) });
    // Something written with the file's key after the rekey (a process still without DMCP_OAUTH_KEY).
    await fileOnly.write(record('late'));
    await unlink(oauthKeyFile({ dataDir }));
    const after = await tokenStoreFromSettings(loadSettings(variable));
    assert.deepEqual(await after.read('k'), r);
    await assert.rejects(after.read('late'), /late\.login\.json: cannot be decrypted/);
  });
});
