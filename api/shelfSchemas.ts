/* eslint-disable no-control-regex -- these patterns exist to refuse NUL and other control characters */
/**
 * The shapes of the shelf routes: one zod schema each, used both to validate requests and to
 * generate the OpenAPI document.
 */
import { z } from '@hono/zod-openapi';
import { AGENT_ID_PATTERN, MAX_SERVER_NAME_LENGTH, SERVER_NAME_PATTERN } from '../contract/index.js';

const ServerNameParam = z
  .string()
  .max(MAX_SERVER_NAME_LENGTH)
  .regex(
    SERVER_NAME_PATTERN,
    `a server name: a letter first, then letters and digits, with single "_" or "-" between them, at most ${MAX_SERVER_NAME_LENGTH}`,
  )
  .openapi({ param: { name: 'name', in: 'path' }, example: 'docs' });
const AgentParam = z
  .string()
  .regex(
    AGENT_ID_PATTERN,
    'an agent ID: letters, digits and . _ : @ / - (a "/" sent as %2F), starting with a letter or digit, at most 128',
  )
  .openapi({ param: { name: 'agent', in: 'path' }, example: 'support-bot' });
/** The path of a server on the shelf. */
export const ServerParams = z.object({ name: ServerNameParam });
/** The path of one agent's grant of a server. */
export const GrantParams = z.object({ name: ServerNameParam, agent: AgentParam });
/** The path of an agent. */
export const AgentParams = z.object({ agent: AgentParam });

// What the workers' config parser accepts, said here so that the document says it: a URL is
// http(s) with a host a URL parser takes (no user name or password), header names are HTTP tokens
// and values one line, variable names are shell names, and nothing holds a NUL.
const IPV4_PART = String.raw`(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`;
// A reference the workers resolve (`${NAME}`, `${NAME:-default}`); RFC 3986 has no braces, so a URL
// holding one is not a URI until then, and the document says `pattern`, not `format: uri`.
const URL_VAR = String.raw`\$\{[A-Za-z_][A-Za-z0-9_]*(?::-(?:[A-Za-z0-9\-._~!&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?\}`;
const URL_CHAR = String.raw`(?:[A-Za-z0-9\-._~!&'()*+,;=:@/?]|%[0-9A-Fa-f]{2}|\$\$|${URL_VAR})`;
const URL_LABEL = String.raw`(?:[A-Za-z0-9-]|${URL_VAR})+`;
const URL_HOST = String.raw`(?:(?:${URL_LABEL}\.)*(?:[A-Za-z]|${URL_VAR})(?:[A-Za-z0-9-]|${URL_VAR})*|(?:${IPV4_PART}\.){3}${IPV4_PART})`;
const URL_RE = new RegExp(
  String.raw`^[Hh][Tt][Tt][Pp][Ss]?://${URL_HOST}(?::(?:[1-5]?\d{1,4}|${URL_VAR}))?(?:[/?]${URL_CHAR}*)?(?:#${URL_CHAR}*)?$`,
);
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `propertyNames` for a record's keys, which the document generator leaves out (its types do not know the keyword). */
const keysMatch = (re: RegExp) =>
  ({ propertyNames: { type: 'string', pattern: re.source } }) as { description?: string };
// NUL is written \u0000, not \0: the document carries the pattern, and Schemathesis cannot use `\0`.
const noNul = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[^\u0000]*$/, 'no NUL character');
const RemoteEntry = z
  .object({
    type: z.enum(['http', 'sse']),
    url: z
      .string()
      .max(4096)
      .regex(
        URL_RE,
        'an http:// or https:// URL (RFC 3986 characters; ${VAR} references), without a user name or password',
      )
      .openapi({
        description:
          "The server's http:// or https:// URL: RFC 3986 characters, no user name or password, no literal credential in its query; it may hold `${VAR}` references, which the workers resolve (a URI once they have).",
      }),
    headers: z
      .record(
        z.string().regex(HEADER_NAME, 'an HTTP header name'),
        z
          .string()
          .max(4096)
          .regex(/^[^\r\n\u0000]*$/, 'one line, no NUL'),
      )
      .optional()
      .openapi({
        ...keysMatch(HEADER_NAME),
        description:
          'Header values; `${VAR}` is resolved on the workers. No literal credential: use `Authorization: Bearer ${VAR}` or an OAuth login.',
      }),
    oauth: z
      .object({
        clientId: z
          .string()
          .max(1024)
          .regex(/^[^\u0000-\u001f]*[^\s\u0000-\u001f][^\u0000-\u001f]*$/, 'one line, not blank'),
        clientSecretEnv: z.string().max(256).regex(ENV_NAME, 'a variable name').optional().openapi({
          description:
            "The variable holding the client's secret: set where `mcp login` runs, and on the workers (listed in their DMCP_MCP_ENV) for refreshes and machine logins. Never the secret itself.",
        }),
        grant: z.enum(['client_credentials', 'id_jag']).optional().openapi({
          description:
            'A machine login: `client_credentials`, the workers get tokens by the client-credentials grant (no `mcp login`), authenticating with `clientSecretEnv` or `privateKeyEnv` (exactly one); `id_jag`, cross-app access: the workers exchange the ID token of `idTokenEnv` at `idpTokenEndpoint` for an ID-JAG and present it with `clientSecretEnv`.',
        }),
        idpTokenEndpoint: z
          .string()
          .max(4096)
          .regex(URL_RE, 'an http:// or https:// URL')
          .optional()
          .openapi({ description: "With `grant: id_jag`: the identity provider's token endpoint." }),
        idpClientId: z
          .string()
          .max(1024)
          .optional()
          .openapi({ description: "With `grant: id_jag`: the client's ID at the identity provider." }),
        idTokenEnv: z.string().max(256).regex(ENV_NAME, 'a variable name').optional().openapi({
          description:
            "With `grant: id_jag`: the worker variable (listed in DMCP_MCP_ENV) holding the user's ID token. Never the token itself.",
        }),
        privateKeyEnv: z.string().max(256).regex(ENV_NAME, 'a variable name').optional().openapi({
          description:
            "With `grant: client_credentials`: the worker variable (listed in DMCP_MCP_ENV) holding the client's private key in PEM, for `private_key_jwt`. Never the key itself.",
        }),
        signingAlgorithm: z
          .string()
          .regex(/^(RS|PS|ES)(256|384|512)$/, 'RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 or ES512')
          .optional()
          .openapi({
            description:
              'With `privateKeyEnv`: the JWS algorithm of the client assertion; default from the key (RS256 for RSA, ES256/ES384/ES512 by curve).',
          }),
      })
      .strict()
      .optional()
      .openapi({
        description:
          "A client registered with the server's authorization server beforehand, for servers without dynamic client registration, or for machine logins (`grant`).",
      }),
  })
  .strict();
const CommandEntry = z
  .object({
    type: z.literal('stdio'),
    command: z
      .string()
      .max(4096)
      .regex(/^[^\u0000]*[^\s\u0000][^\u0000]*$/, 'not blank, no NUL character'),
    args: z.array(noNul(4096)).max(256).default([]),
    env: z
      .record(z.string().regex(ENV_NAME, 'a variable name'), noNul(4096))
      .optional()
      .openapi({
        ...keysMatch(ENV_NAME),
        description:
          'Variables of the command; `NAME: "${NAME}"` hands a secret variable over from the workers (listed in their DMCP_MCP_ENV).',
      }),
  })
  .strict();
export const ShelfEntrySchema = z.discriminatedUnion('type', [RemoteEntry, CommandEntry]).openapi('ShelfEntry');

export const PutShelfServerSchema = z
  .object({
    entry: ShelfEntrySchema,
    agents: z
      .array(z.string().regex(AGENT_ID_PATTERN, 'an agent ID'))
      .max(100)
      .optional()
      .openapi({ description: 'Grant it to these agents at once.' }),
  })
  .strict()
  .openapi('PutShelfServer');

/** A server on the shelf, as the API shows it: no proof, with its agents. */
export const ShelfServerSchema = z
  .object({
    name: z.string(),
    entry: ShelfEntrySchema,
    addedAt: z.string(),
    addedBy: z.string(),
    agents: z.array(z.string()),
  })
  .openapi('ShelfServer');
export const ShelfGrantSchema = z
  .object({ server: z.string(), agent: z.string(), grantedAt: z.string() })
  .openapi('ShelfGrant');
export const ShelfLogEntrySchema = z
  .object({
    at: z.string(),
    by: z.string(),
    op: z.enum(['add', 'grant', 'drop', 'forget']),
    server: z.string(),
    agent: z.string().optional(),
  })
  .openapi('ShelfLogEntry');
export const ShelfStateSchema = z
  .object({
    version: z.number().int(),
    servers: z.array(ShelfServerSchema),
    grants: z.array(ShelfGrantSchema),
    log: z
      .array(ShelfLogEntrySchema)
      .openapi({ description: "The newest changes, oldest first; the shelf workflow's history holds every one." }),
  })
  .openapi('Shelf');
export const ShelfChangeSchema = z
  .object({
    changed: z
      .boolean()
      .openapi({ description: 'False when it was so already (the same entry, an existing grant, a missing one).' }),
    version: z.number().int(),
    agents: z.array(z.string()).optional().openapi({ description: 'Removing a server: the agents that had it.' }),
  })
  .openapi('ShelfChange');
export const AgentServersSchema = z
  .object({
    agent: z.string(),
    servers: z.array(
      z.object({
        name: z.string(),
        entry: ShelfEntrySchema,
        grantedAt: z.string(),
        verified: z.boolean().openapi({
          description:
            "Whether its proofs verify with this API's turn key (workers with the same key use only verified servers).",
        }),
      }),
    ),
  })
  .openapi('AgentServers');
