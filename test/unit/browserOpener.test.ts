/**
 * How `mcp login` opens the authorization address: one program and an argument vector per
 * platform, never a shell. The address comes from the authorization server, so characters a shell
 * reads (`&`, `^`, `|`, `"`, spaces) must reach the opener as one argument, untouched.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { browserOpener } from '../../cli/login.js';

const urls = [
  'https://auth.example.com/authorize?client_id=c1&state=S1&redirect_uri=http%3A%2F%2F127.0.0.1%3A8788%2Fcallback',
  'https://auth.example.com/authorize?a=1&calc.exe&b=^x|whoami',
  'https://auth.example.com/authorize?q="quoted" value&x=1 2',
];

/** Programs that read their arguments as shell commands: none may be the opener. */
const SHELLS = /^(cmd|cmd\.exe|powershell|pwsh|sh|bash|start)$/i;

const expected: [NodeJS.Platform, (url: string) => { command: string; args: string[] } | undefined][] = [
  ['win32', (url) => ({ command: 'rundll32', args: ['url.dll,FileProtocolHandler', url] })],
  ['darwin', (url) => ({ command: 'open', args: [url] })],
  ['linux', (url) => ({ command: 'xdg-open', args: [url] })],
  ['freebsd', (url) => ({ command: 'xdg-open', args: [url] })],
];

for (const [platform, want] of expected) {
  for (const url of urls) {
    test(`${platform}: ${url}`, () => {
      const opener = browserOpener(platform, url);
      assert.deepEqual(opener, want(url));
      assert.ok(opener);
      assert.doesNotMatch(opener.command, SHELLS);
      // The address is the last argument, whole; nothing before it is a shell switch.
      assert.equal(opener.args.at(-1), url);
      assert.ok(!opener.args.some((a) => /^\/c$|^-c$/i.test(a)), JSON.stringify(opener.args));
    });
  }
}

test('anything but an http(s) address is not opened: the openers also start files and programs', () => {
  for (const platform of ['win32', 'darwin', 'linux'] as const) {
    for (const url of [
      'file:///etc/passwd',
      'C:\\Windows\\System32\\calc.exe',
      '/usr/bin/xterm',
      'javascript:alert(1)',
      '-a Terminal',
      '',
    ]) {
      assert.equal(browserOpener(platform, url), undefined, `${platform} ${url}`);
    }
  }
});
