import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { parseEncryptionKey } from '../../payloads/dataConverter.js';

const raw = randomBytes(32);
const b64 = raw.toString('base64');
const hex = raw.toString('hex');

// Node's base64 decoder skips characters it does not know and stops at padding, so a mistyped or
// doubled key would otherwise decode to some 32 bytes: a key nobody can reproduce later.
const cases: { name: string; value: string; ok: boolean }[] = [
  { name: 'base64, padded', value: b64, ok: true },
  { name: 'base64 with surrounding whitespace', value: `  ${b64}\n`, ok: true },
  { name: 'base64 without padding', value: b64.replace(/=+$/, ''), ok: true },
  { name: 'base64url', value: raw.toString('base64url'), ok: true },
  { name: 'hex, lower case', value: hex, ok: true },
  { name: 'hex, upper case', value: hex.toUpperCase(), ok: true },
  { name: 'empty', value: '', ok: false },
  { name: '31 bytes', value: randomBytes(31).toString('base64'), ok: false },
  { name: '33 bytes', value: randomBytes(33).toString('base64'), ok: false },
  { name: '16-byte hex', value: randomBytes(16).toString('hex'), ok: false },
  { name: '63 hex digits', value: hex.slice(1), ok: false },
  { name: 'base64 with a space inside', value: `${b64.slice(0, 20)} ${b64.slice(20)}`, ok: false },
  { name: 'base64 with junk in front', value: `!!${b64}`, ok: false },
  { name: 'base64 with data after the padding', value: `${b64}AAAA`, ok: false },
  { name: 'base64 with extra padding', value: `${b64}==`, ok: false },
  { name: 'base64 with a dot inside', value: `${b64.slice(0, 10)}.${b64.slice(10)}`, ok: false },
  { name: 'two keys joined', value: `${b64},${b64}`, ok: false },
  { name: 'a passphrase', value: 'correct horse battery staple correct horse!!', ok: false },
];

for (const c of cases) {
  test(`encryption key: ${c.name} is ${c.ok ? 'accepted' : 'refused'}`, () => {
    if (c.ok) {
      const key = parseEncryptionKey(c.value);
      assert.ok(key.key.equals(raw), 'decodes to the same 32 bytes');
      assert.match(key.id, /^[0-9a-f]{12}$/);
    } else {
      assert.throws(() => parseEncryptionKey(c.value), /DMCP_ENCRYPTION_KEY must be 32 bytes/);
    }
  });
}
