import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loginFetch, type LoginCredentials, type LoginProblem } from '../../mcp/login.js';

/** Credentials over a token the test sets; what was noted of refused scopes. */
function setup(answers: Response[]) {
  let token = 't1';
  const noted: [string, string, string, string | undefined][] = [];
  const credentials: LoginCredentials = {
    accessToken: async () => ({ token, loginId: 'l' }),
    afterUnauthorized: async () => ({ token, loginId: 'l' }),
    insufficientScope: async (server, url, denied, scope) => {
      noted.push([server, url, denied, scope]);
      return {
        kind: 'insufficient_scope',
        message: `wants more access (scope ${scope}): durable-mcp mcp login ${server}`,
      };
    },
  };
  const events: string[] = [];
  const problems: LoginProblem[] = [];
  const sent: (string | null)[] = [];
  const f = loginFetch(
    async (_url, init) => {
      sent.push(new Headers(init?.headers).get('authorization'));
      return answers.shift()!;
    },
    'docs',
    'https://d.example/mcp',
    credentials,
    {
      onToken: () => undefined,
      onProblem: (p) => {
        events.push('problem');
        problems.push(p);
      },
      onAuthorized: () => events.push('authorized'),
    },
  );
  return { f, noted, events, problems, sent, setToken: (t: string) => (token = t) };
}

const forbidden = (wwwAuthenticate?: string) =>
  new Response('{}', { status: 403, headers: wwwAuthenticate ? { 'www-authenticate': wwwAuthenticate } : {} });

test('a 403 insufficient_scope is noted with the token it refused, once; a plain 403 is not a login problem', async () => {
  const s = setup([
    forbidden(
      'Bearer error="insufficient_scope", scope="a b", resource_metadata="https://d.example/.well-known/oauth-protected-resource/mcp"',
    ),
    forbidden(),
  ]);
  assert.equal((await s.f('https://d.example/mcp', {})).status, 403);
  assert.deepEqual(s.noted, [['docs', 'https://d.example/mcp', 't1', 'a b']]);
  assert.deepEqual(s.problems, [
    { kind: 'insufficient_scope', message: 'wants more access (scope a b): durable-mcp mcp login docs' },
  ]);
  assert.equal((await s.f('https://d.example/mcp', {})).status, 403);
  assert.deepEqual(s.events, ['problem']);
  assert.deepEqual(s.sent, ['Bearer t1', 'Bearer t1'], 'each request was sent once');
});

test("requests the refused token still passes do not clear the mark; a new login's token does", async () => {
  const ok = () => new Response('{}', { status: 200 });
  const s = setup([ok(), forbidden('Bearer error="insufficient_scope", scope="w"'), ok(), ok()]);
  await s.f('https://d.example/mcp', {});
  await s.f('https://d.example/mcp', {});
  await s.f('https://d.example/mcp', {});
  assert.deepEqual(s.events, ['authorized', 'problem']);
  s.setToken('t2');
  await s.f('https://d.example/mcp', {});
  assert.deepEqual(s.events, ['authorized', 'problem', 'authorized']);
});
