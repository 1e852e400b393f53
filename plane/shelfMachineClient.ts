/**
 * The client fields of a shelf entry whose workers log in by themselves (client credentials, or
 * cross-app access): which fit together, for `mcp add` flags and for entries alike.
 */
import type { MachineGrant, ShelfOAuthClient } from '../contract/index.js';

/** An environment variable's name, as the fields that name one must be. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The JWS algorithms a client assertion may be signed with (asymmetric keys in PEM). */
export const SIGNING_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
] as const;

/** Why the machine-login fields of a pre-registered client do not fit together, with the field to blame; undefined when they do. */
export function machineClientProblem(
  client: ShelfOAuthClient,
  flags: boolean,
): { message: string; field: string } | undefined {
  const say = (flag: string, field: string) => (flags ? flag : field);
  const idJag = idJagClientProblem(client, say);
  if (idJag !== null) return idJag;
  if (client.grant !== 'client_credentials') {
    if (client.privateKeyEnv !== undefined)
      return {
        message: `${say('--private-key-env', 'oauth.privateKeyEnv')} is for a machine login (${say('--client-credentials', 'oauth.grant: client_credentials')})`,
        field: 'oauth.privateKeyEnv',
      };
    if (client.signingAlgorithm !== undefined)
      return {
        message: `${say('--signing-algorithm', 'oauth.signingAlgorithm')} is for a machine login with a private key (${say('--client-credentials --private-key-env <VAR>', 'oauth.grant: client_credentials, oauth.privateKeyEnv')})`,
        field: 'oauth.signingAlgorithm',
      };
    return undefined;
  }
  if ((client.clientSecretEnv === undefined) === (client.privateKeyEnv === undefined)) {
    return {
      message: `a machine login authenticates with either a secret (${say('--client-secret-env <VAR>', 'oauth.clientSecretEnv')}) or a private key (${say('--private-key-env <VAR>', 'oauth.privateKeyEnv')}): give one of them`,
      field: 'oauth',
    };
  }
  if (client.privateKeyEnv !== undefined && !VARIABLE_NAME.test(client.privateKeyEnv)) {
    return {
      message: `${say('--private-key-env', 'oauth.privateKeyEnv')} takes the name of a variable holding the private key (PEM), not the key itself`,
      field: 'oauth.privateKeyEnv',
    };
  }
  if (client.signingAlgorithm !== undefined) {
    if (client.privateKeyEnv === undefined)
      return {
        message: `${say('--signing-algorithm', 'oauth.signingAlgorithm')} applies to a private key (${say('--private-key-env', 'oauth.privateKeyEnv')}), not to a secret`,
        field: 'oauth.signingAlgorithm',
      };
    if (!(SIGNING_ALGORITHMS as readonly string[]).includes(client.signingAlgorithm))
      return {
        message: `${say('--signing-algorithm', 'oauth.signingAlgorithm')} ${JSON.stringify(client.signingAlgorithm.slice(0, 40))} is not one of ${SIGNING_ALGORITHMS.join(', ')}`,
        field: 'oauth.signingAlgorithm',
      };
  }
  return undefined;
}

const ID_JAG_FIELDS = [
  ['idpTokenEndpoint', '--idp-token-endpoint'],
  ['idpClientId', '--idp-client-id'],
  ['idTokenEnv', '--id-token-env'],
] as const;

/**
 * The cross-app access (`id_jag`) part of {@link machineClientProblem}: null when the entry is not
 * about it (neither the grant nor its fields), else its problem or undefined.
 */
function idJagClientProblem(
  client: ShelfOAuthClient,
  say: (flag: string, field: string) => string,
): { message: string; field: string } | undefined | null {
  if (client.grant !== 'id_jag') {
    const stray = ID_JAG_FIELDS.find(([field]) => client[field] !== undefined);
    return stray
      ? {
          message: `${say(stray[1], `oauth.${stray[0]}`)} is for a cross-app access login (${say('--id-jag', 'oauth.grant: id_jag')})`,
          field: `oauth.${stray[0]}`,
        }
      : null;
  }
  const missing = ID_JAG_FIELDS.find(([field]) => client[field] === undefined);
  if (missing)
    return {
      message: `a cross-app access login (${say('--id-jag', 'oauth.grant: id_jag')}) needs ${say(`${missing[1]} <${missing[0] === 'idTokenEnv' ? 'VAR' : missing[0] === 'idpClientId' ? 'ID' : 'URL'}>`, `oauth.${missing[0]}`)}`,
      field: `oauth.${missing[0]}`,
    };
  if (client.clientSecretEnv === undefined)
    return {
      message: `a cross-app access login authenticates to the server's authorization server with a secret: give ${say('--client-secret-env <VAR>', 'oauth.clientSecretEnv')}`,
      field: 'oauth.clientSecretEnv',
    };
  if (client.privateKeyEnv !== undefined || client.signingAlgorithm !== undefined)
    return {
      message: `a cross-app access login authenticates with a secret, not a private key: drop ${say('--private-key-env', 'oauth.privateKeyEnv')}`,
      field: 'oauth.privateKeyEnv',
    };
  if (!VARIABLE_NAME.test(client.idTokenEnv!))
    return {
      message: `${say('--id-token-env', 'oauth.idTokenEnv')} takes the name of a variable holding the ID token, not the token itself`,
      field: 'oauth.idTokenEnv',
    };
  let endpoint: URL | undefined;
  try {
    endpoint = new URL(client.idpTokenEndpoint!);
  } catch {
    endpoint = undefined;
  }
  if (!endpoint || !['http:', 'https:'].includes(endpoint.protocol) || endpoint.username || endpoint.password)
    return {
      message: `${say('--idp-token-endpoint', 'oauth.idpTokenEndpoint')} must be the identity provider's http(s) token endpoint, without a user name or password`,
      field: 'oauth.idpTokenEndpoint',
    };
  const id = client.idpClientId!;
  if (id.trim() === '' || id.length > 1024 || [...id].some((c) => c.charCodeAt(0) < 0x20))
    return {
      message: `${say('--idp-client-id', 'oauth.idpClientId')} must be the client ID the identity provider gave (one line, at most 1024 characters)`,
      field: 'oauth.idpClientId',
    };
  return undefined;
}

/** The client of a shelf server whose workers log in by themselves (client credentials, or cross-app access). */
export type MachineClient = ShelfOAuthClient & { grant: MachineGrant };
