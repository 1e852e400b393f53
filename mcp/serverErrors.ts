/** The errors a server's requests fail with, as the activities map them to failure types. */

/** The server went away while a call was waiting for it: the call may have run. */
export class ConnectionLostError extends Error {
  override name = 'ConnectionLostError';
  constructor(
    readonly server: string,
    cause: string,
  ) {
    super(`connection to MCP server "${server}" lost: ${cause}`);
  }
}

/** A listing past its deadline or page cap: the server is failed with this message. */
export class ListingBoundError extends Error {
  override name = 'ListingBoundError';
}

/** The server is not running: the call never started, so it is always safe to retry. */
export class ServerUnavailableError extends Error {
  override name = 'ServerUnavailableError';
  constructor(
    readonly server: string,
    reason: string,
  ) {
    super(`MCP server "${server}" is not available: ${reason}`);
  }
}

/** A call the worker refuses to send (the operator's rules, a missing hook decision, a name that does not match). */
export class RefusedCallError extends Error {
  override name = 'RefusedCallError';
}
