/**
 * The shelf: servers registered once per Temporal namespace and granted to agents by name. It lives
 * in one long-running workflow (`dmcpShelf`), so every worker, CLI and API process of a deployment
 * reads the same shelf, and its history is the record of every change. No token or secret value is
 * ever part of it: entries hold `${VAR}` references, logins live in the token store.
 */

/** The server an entry describes, in `mcp.json`'s shape (the worker parses it like any layer). */
export type ShelfEntry =
  | { type: 'http' | 'sse'; url: string; headers?: Record<string, string>; oauth?: ShelfOAuthClient }
  | { type: 'stdio'; command: string; args: string[]; env?: Record<string, string> };

/**
 * A client the operator registered with a remote server's authorization server (for servers that
 * offer no dynamic registration): its ID, and the worker variable that holds its secret, if any.
 * The secret itself is never on the shelf.
 */
export interface ShelfOAuthClient {
  clientId: string;
  clientSecretEnv?: string;
  /**
   * `client_credentials`: a machine login. The workers obtain tokens themselves with the
   * client-credentials grant (no person, no `mcp login`), authenticating with the secret of
   * `clientSecretEnv` or a JWT signed with the private key of `privateKeyEnv`. `id_jag`: the workers
   * exchange the ID token of `idTokenEnv` at `idpTokenEndpoint` and present the ID-JAG with the
   * secret of `clientSecretEnv`.
   */
  grant?: MachineGrant;
  /** The worker variable holding the client's private key (PEM, PKCS#8) for `private_key_jwt`; never the key itself. */
  privateKeyEnv?: string;
  /** The JWS algorithm the client assertion is signed with (`RS256`, `ES256`...); default RS256. */
  signingAlgorithm?: string;
  /** With `grant: id_jag`: the enterprise identity provider's token endpoint, where the ID token is exchanged for an ID-JAG (RFC 8693). */
  idpTokenEndpoint?: string;
  /** With `grant: id_jag`: the client ID this client has at the identity provider. */
  idpClientId?: string;
  /** With `grant: id_jag`: the worker variable holding the user's ID token from the identity provider; never the token itself. */
  idTokenEnv?: string;
}

/**
 * How a machine login gets its tokens: `client_credentials` (the client alone), or `id_jag`
 * (enterprise-managed authorization: a user's ID token exchanged at the identity provider for an
 * ID-JAG, presented to the server's authorization server as a JWT-bearer grant).
 */
export type MachineGrant = 'client_credentials' | 'id_jag';

/** Whether `grant` is one the workers make by themselves. */
export function isMachineGrant(grant: string | undefined): grant is MachineGrant {
  return grant === 'client_credentials' || grant === 'id_jag';
}

/** One server on the shelf. */
export interface ShelfServer {
  name: string;
  entry: ShelfEntry;
  /** ISO time it was put on the shelf. */
  addedAt: string;
  /** Who put it there, as the client describes itself (`cli`, `api token <source>`); never a token. */
  addedBy: string;
  /** Hex HMAC-SHA256 of {@link shelfServerProofText} with the operator's turn key. */
  proof: string;
}

/** An agent's grant of one shelf server. */
export interface ShelfGrant {
  server: string;
  agent: string;
  grantedAt: string;
  /** Hex HMAC-SHA256 of {@link shelfGrantProofText} with the operator's turn key. */
  proof: string;
}

/** One change, as the shelf's log keeps it (newest last). */
export interface ShelfLogEntry {
  at: string;
  by: string;
  op: ShelfChange['op'];
  server: string;
  agent?: string;
}

/** The Update a shelf change is. Removals carry no proof: they can take reach away, never add it. */
export type ShelfChange =
  | { op: 'add'; server: ShelfServer; grant?: ShelfGrant; by: string }
  | { op: 'grant'; grant: ShelfGrant; by: string }
  | { op: 'drop'; server: string; agent: string; by: string }
  | { op: 'forget'; server: string; by: string };

/** What a change did, for the client to print. */
export interface ShelfChangeResult {
  /** False when the change was already true (adding the same entry again, dropping a missing grant). */
  changed: boolean;
  /** For `forget`: the agents that had it. */
  agents?: string[];
  version: number;
}

/** The shelf as the `shelf` query answers it. */
export interface ShelfState {
  servers: ShelfServer[];
  grants: ShelfGrant[];
  /** The newest changes (at most {@link SHELF_LOG_KEPT}); the workflow's history has every one. */
  log: ShelfLogEntry[];
  /** Increases by one with every change that changed something. */
  version: number;
}

export const SHELF_LOG_KEPT = 200;

/** The shelf workflow's ID: one shelf per namespace. */
export const SHELF_WORKFLOW_ID = 'durable-mcp/shelf';

/** The text a shelf server's proof signs. */
export function shelfServerProofText(name: string, entry: ShelfEntry): string {
  return JSON.stringify(['durable-mcp shelf server v1', name, canonical(entry)]);
}

/**
 * The text a grant's proof signs: the agent and the server's name *and entry*, so a grant dies with
 * the entry it was made for (a server forgotten and put back as something else is not granted by
 * the old proof).
 */
export function shelfGrantProofText(server: string, agent: string, entry: ShelfEntry): string {
  return JSON.stringify(['durable-mcp shelf grant v2', server, agent, canonical(entry)]);
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}
