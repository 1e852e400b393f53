/** What a question looks like once recorded: URLs a person may be shown, and messages that show what they say. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UnservedInputRequestError, elicitationSpec, readInputRequired } from '../../mcp/inputRequests.js';

const urlQuestion = (url: string, message = 'Sign in') =>
  elicitationSpec('page', { mode: 'url', message, url, elicitationId: 'e1' });

test('URL mode: only https, or http to a loopback host, is shown to a person', () => {
  const shown: [url: string, recorded: string][] = [
    ['https://example.com/auth?session=1', 'https://example.com/auth?session=1'],
    ['HTTPS://Example.COM/a b', 'https://example.com/a%20b'],
    ['http://127.0.0.1:8080/cb', 'http://127.0.0.1:8080/cb'],
    ['http://localhost:3000/', 'http://localhost:3000/'],
    ['http://[::1]/x', 'http://[::1]/x'],
    ['https://example.com/\u202egnp.exe', 'https://example.com/%E2%80%AEgnp.exe'],
  ];
  for (const [url, recorded] of shown) assert.equal(urlQuestion(url).url, recorded, url);
  const refused: [url: string, why: RegExp][] = [
    ['javascript:alert(1)', /javascript:/],
    ['file:///etc/passwd', /file:/],
    ['data:text/html,<script>alert(1)</script>', /data:/],
    ['http://example.com/', /http: only to a loopback host/],
    ['http://127.0.0.1.evil.example/', /http: only to a loopback host/],
    ['ftp://example.com/x', /ftp:/],
    ['https://accounts.example.com@evil.example/', /user name or password/],
    ['not a url', /not a URL/],
    ['', /without a usable URL/],
  ];
  for (const [url, why] of refused) {
    assert.throws(
      () => urlQuestion(url),
      (err: unknown) => err instanceof UnservedInputRequestError && why.test(err.message),
      url,
    );
  }
});

test("a question's message is recorded as one line with no control or bidi character", () => {
  const rows: [name: string, message: string, recorded: string][] = [
    ['plain text stays', 'Sign in to continue', 'Sign in to continue'],
    ['unicode text stays', 'héllo → 世界 🙂', 'héllo → 世界 🙂'],
    [
      'a newline cannot start a fake line',
      'Sign in\n  open this page yourself: https://evil.example',
      'Sign in open this page yourself: https://evil.example',
    ],
    ['CR, tab, line and paragraph separators', 'a\r\nb\tc\u2028d\u2029e', 'a b c d e'],
    ['escape sequences go whole', 'ok\u001b[2K\u001b]0;t\u0007done', 'okdone'],
    ['C1: NEL is a line break, the 8-bit CSI goes whole', 'a\u0085b\u009b2Jc', 'a bc'],
    [
      'bidi overrides, isolates and marks',
      'pay \u202eevil\u202c \u2066x\u2069 \u200ey\u200f \u061cz\u202a\u202b\u202d\u2067\u2068',
      'pay evil x y z',
    ],
  ];
  for (const [name, message, recorded] of rows) {
    assert.equal(
      elicitationSpec('k', { message, requestedSchema: { type: 'object', properties: {} } }).message,
      recorded,
      name,
    );
    assert.equal(urlQuestion('https://example.com/', message).message, recorded, `${name} (URL mode)`);
  }
});

test('the titles and descriptions a form shows are recorded the same way; field names and values stay as sent', () => {
  const spec = elicitationSpec('k', {
    message: 'm',
    requestedSchema: {
      type: 'object',
      title: 'T\nfake',
      properties: {
        name: { type: 'string', title: 'Na\u202eme', description: 'line\nnext' },
        tier: { type: 'string', oneOf: [{ const: 'a\u202e', title: 'A\n' }] },
      },
    },
  });
  const props = spec.requestedSchema!.properties as Record<string, Record<string, unknown>>;
  assert.equal(spec.requestedSchema!.title, 'T fake');
  assert.equal(props.name!.title, 'Name');
  assert.equal(props.name!.description, 'line next');
  assert.deepEqual(
    props.tier!.oneOf,
    [{ const: 'a\u202e', title: 'A' }],
    'a value is what the server reads back: never rewritten',
  );
});

test('a request key that a person would see garbled is refused', () => {
  const ask = (key: string) =>
    readInputRequired(
      {
        resultType: 'input_required',
        inputRequests: {
          [key]: {
            method: 'elicitation/create',
            params: { message: 'm', requestedSchema: { type: 'object', properties: {} } },
          },
        },
      } as never,
      undefined,
    );
  assert.equal(ask('name').requests[0]!.key, 'name');
  for (const key of ['na\nme', 'a\u202eb', 'a\u001b[2Kb'])
    assert.throws(() => ask(key), UnservedInputRequestError, JSON.stringify(key));
});
