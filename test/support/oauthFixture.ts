import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TurnStatus } from '../../contract/index.js';
import { within } from './harness.js';

const oauthFixture = fileURLToPath(new URL('../fixtures/oauthServer.js', import.meta.url));

/** A running OAuth fixture server (test/fixtures/oauthServer.ts) and the counters it keeps. */
export interface OAuthFixture<Stats> {
  url: string;
  issuer: string;
  /** Everything the fixture printed when it listened (its addresses). */
  printed: Record<string, string>;
  child: ChildProcess;
  stats(): Promise<Stats>;
}

/** Starts the OAuth fixture with `env` over this process's environment; waits (20 s at most) for the line naming its addresses. */
export async function startOAuthFixture<Stats>(env: NodeJS.ProcessEnv = {}): Promise<OAuthFixture<Stats>> {
  const child = spawn(process.execPath, [oauthFixture], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buffer = '';
  const printed = await within(
    20_000,
    'the OAuth fixture to listen',
    new Promise<Record<string, string>>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        buffer += String(d);
        const l = buffer.split('\n').find((x) => x.startsWith('{') && x.includes('"url"'));
        if (l) resolve(JSON.parse(l) as Record<string, string>);
      });
      child.once('exit', (code) => reject(new Error(`OAuth fixture exited (${code})`)));
    }),
  );
  return {
    url: printed.url!,
    issuer: printed.issuer!,
    printed,
    child,
    stats: async () => (await (await fetch(printed.stats!)).json()) as Stats,
  };
}

/** The status entry of server `name`; fails naming the servers there are. */
export function serverIn(status: TurnStatus, name: string) {
  const s = status.servers.find((x) => x.name === name);
  assert.ok(s, `no server "${name}" in ${JSON.stringify(status.servers.map((x) => x.name))}`);
  return s;
}

/** Every `data` field of history's JSON form, base64-decoded (payloads are plain JSON in this harness). */
export function decodedData(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) decodedData(item, out);
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'data' && typeof value === 'string') out.push(Buffer.from(value, 'base64').toString('utf8'));
      else decodedData(value, out);
    }
  }
  return out;
}
