/** What activities put into history: results without secrets, and failures the workflow can read. */
import { ApplicationFailure } from '@temporalio/activity';
import { ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { scrubDeep } from '../config/secrets.js';
import { ConfigError } from '../config/types.js';
import { RefusedCallError, ServerUnavailableError } from '../mcp/serverErrors.js';
import { needsTasksExtension } from '../mcp/taskRequests.js';
import { FailureType, type BadRequestDetails, type CallToolInput } from '../contract/index.js';

/**
 * A server that was given a secret may echo it back; history must never hold it. Each string of the
 * result (object keys included) is scrubbed where it sits: scrubbing the JSON text instead would
 * miss a secret holding `"` or `\` (escaped there) and fail to parse again when a secret looks like
 * JSON syntax. An unchanged result is returned as it is.
 */
export function scrubResult<T>(result: T, scrub: (t: string) => string): T {
  return scrubDeep(result, scrub);
}

/** A broken operator file as a failure not retried (retrying cannot fix it); any other error as it is. */
export function configFailure(err: unknown, scrub: (t: string) => string): unknown {
  if (err instanceof ConfigError)
    return ApplicationFailure.create({ type: FailureType.Config, message: scrub(err.message), nonRetryable: true });
  return err;
}

/**
 * Maps an error of a call to the failure type the workflow reads. The type decides whether Temporal
 * retries (a bad request or a server that is not running never is) and what the model is told: a
 * call that never started, one whose request timed out, or one whose connection was lost mid-call.
 */
export function toFailure(
  err: unknown,
  input: Pick<CallToolInput, 'name' | 'server'>,
  scrub: (t: string) => string,
): ApplicationFailure {
  const message = scrub(err instanceof Error ? err.message : String(err));
  if (err instanceof RefusedCallError) {
    return ApplicationFailure.create({ type: FailureType.BadRequest, message, nonRetryable: true });
  }
  if (err instanceof ServerUnavailableError) {
    return ApplicationFailure.create({ type: FailureType.ServerUnavailable, message, nonRetryable: true });
  }
  if (err instanceof ProtocolError) {
    // -32021: the tool needs something this client does not offer (sampling): retrying cannot help.
    if (needsTasksExtension(err.code, err.data)) {
      // A 2026-07-28 server decides per call whether it answers with a task; this tool it runs
      // only as one, and an ordinary call does not declare the tasks extension. It did not run.
      const hint = `${input.name}: the server runs this tool only as an MCP task, and this call was not sent as one (the call did not run); calls of server "${input.server}" run as tasks with "tasks": "prefer" in its entry`;
      // Still a BadRequest for workflow code that does not read the mark; newer code sends the call again as a task.
      const details: BadRequestDetails = { taskOnly: true };
      return ApplicationFailure.create({
        type: FailureType.BadRequest,
        message: `${hint} (${message})`,
        nonRetryable: true,
        details: [details],
      });
    }
    if (
      err.code === ProtocolErrorCode.InvalidParams ||
      err.code === ProtocolErrorCode.MethodNotFound ||
      err.code === ProtocolErrorCode.InvalidRequest ||
      err.code === ProtocolErrorCode.MissingRequiredClientCapability
    ) {
      return ApplicationFailure.create({
        type: FailureType.BadRequest,
        message: `${input.name}: ${message}`,
        nonRetryable: true,
      });
    }
  }
  if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) {
    return ApplicationFailure.create({ type: FailureType.ToolTimeout, message: `${input.name}: ${message}` });
  }
  return ApplicationFailure.create({
    type: FailureType.Transport,
    message: `${input.name} (server "${input.server}"): ${message}`,
  });
}
