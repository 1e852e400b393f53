/**
 * The OAuth token store: encrypted at rest (no token in any file), 0600 files in a 0700 folder,
 * the login ID and a pending login's start readable without the key, key rotation (previous keys
 * read, `rekey` rewrites), tampering refused, the key file, the lock, and the settings behind it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmod, readFile, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { isSecretName } from '../../config/secrets.js';
import { loadSettings } from '../../settings/index.js';
import { createTokenStore, keyId, oauthKeyFile, tokenStoreFromSettings, TokenStoreError, type LoginRecord, type PendingLogin } from '../../plane/tokenStore.js';
import { tempDir } from '../support/harness.js';

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
    assert.deepEqual(await other.loginState('docs'), { loginId: r.loginId, pendingSince: new Date('2026-01-02T03:04:05.000Z') });
    await createTokenStore({ dir, key: randomBytes(32) }).write({ ...r, dead: { at: '2026-02-03T00:00:00.000Z', reason: 'invalid_grant' } });
    assert.deepEqual(await other.loginState('docs'), { loginId: r.loginId, expiredAt: new Date('2026-02-03T00:00:00.000Z'), pendingSince: new Date('2026-01-02T03:04:05.000Z') });
    assert.deepEqual(await other.loginState('nobody'), {});
    assert.equal(await other.loginId('nobody'), undefined);
    assert.equal(await other.pendingSince('nobody'), undefined);
    await assert.rejects(other.read('docs'), (err: Error) => {
      assert.ok(err instanceof TokenStoreError);
      assert.match(err.message, /docs\.login\.json: cannot be decrypted with DMCP_OAUTH_KEY .*DMCP_OAUTH_KEYS_PREVIOUS/);
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
    await assert.rejects(store.withLock('s', async () => 'ran'), /s\.lock: another process has held the login lock for more than 300 ms/);
  });
});

describe('OAuth settings and the key', () => {
  test('defaults, and bad values named by variable without echoing a key', () => {
    const s = loadSettings({ DMCP_DATA_DIR: '/srv/dmcp' });
    assert.deepEqual(s.oauth, { dir: '/srv/dmcp/oauth', previousKeys: [], callbackPort: 8788 });
    const key = randomBytes(32).toString('base64');
    const t = loadSettings({ DMCP_OAUTH_DIR: '/shared/oauth', DMCP_OAUTH_KEY: key, DMCP_OAUTH_KEYS_PREVIOUS: `${randomBytes(32).toString('hex')}`, DMCP_OAUTH_CALLBACK_PORT: '9999' });
    assert.equal(t.oauth.dir, '/shared/oauth');
    assert.equal(t.oauth.key, key);
    assert.equal(t.oauth.previousKeys.length, 1);
    assert.equal(t.oauth.callbackPort, 9999);
    const bad = 'not-a-key-but-secretish-text';
    assert.throws(
      () => loadSettings({ DMCP_OAUTH_KEY: bad, DMCP_OAUTH_KEYS_PREVIOUS: `${key},short`, DMCP_OAUTH_CALLBACK_PORT: 'x' }),
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
    const withVariable = await tokenStoreFromSettings(loadSettings({ DMCP_DATA_DIR: dataDir, DMCP_OAUTH_KEY: randomBytes(32).toString('hex') }));
    assert.deepEqual(await withVariable.read('k'), r);
    await chmod(oauthKeyFile(settings), 0o644);
    await assert.rejects(tokenStoreFromSettings(settings), /oauth\.key: the OAuth key file is readable by other users \(mode 644\); run chmod 600 on it/);
  });
});
