/**
 * What the three framework adapters share, with no framework imported: one durable call (the
 * framework's tool-call ID as the call ID, its abort signal forwarded as a cancellation), the
 * system-prompt text of a turn, and a turn that ends when the framework's run ends.
 */
import type { CallOutcome, ToolInfo, TurnResult, TurnStatus } from '../contract/index.js';
import type { CallInputOptions, StartTurnOptions, Turn, TurnClient } from '../client/turnClient.js';
import type { ModelView, ShapeLimits } from '../shaping/index.js';

/** What a durable tool returns to the application: the recorded outcome and what the model reads of it. */
export interface DurableToolResult {
  /** The outcome as recorded in the turn's history (every block, untouched). */
  outcome: CallOutcome;
  /** What the model reads: `<toolOutput>` text under the token cap, the images that fit, notes. */
  model: ModelView;
}

/** Options every adapter takes. */
export interface DurableToolsOptions {
  /** What the model reads of each result (default: the TurnClient's `shapeLimits`). */
  shapeLimits?: ShapeLimits;
  /** Which of the turn's tools to offer (default: all of them). */
  filter?: (tool: ToolInfo) => boolean;
  /**
   * Answers the questions a tool asks a person while it runs (see `TurnClient`'s `InputHandler`);
   * without it they wait for an answer sent by other means (`durable-mcp answer`, the API).
   */
  onInput?: CallInputOptions['onInput'];
  /** How often the turn is asked for new questions while a call runs (default 1000 ms). */
  inputPollMs?: number;
}

/** How often a cancellation is sent again while the workflow has not started the call yet. */
const CANCEL_RETRY_MS = 100;

/** The turn's tools the options select, in the turn's order. */
export function selectTools(turn: Pick<Turn, 'tools'>, options: DurableToolsOptions = {}): ToolInfo[] {
  return options.filter ? turn.tools.filter(options.filter) : [...turn.tools];
}

export { objectSchema } from '../contract/index.js';

/** Thrown when a framework calls a tool without the tool-call ID that makes the call exactly-once. */
export class MissingToolCallIdError extends Error {
  override name = 'MissingToolCallIdError';
  constructor(tool: string, framework: string) {
    super(
      `${framework} called ${tool} without a tool-call ID: a durable call is keyed by the model's tool-call ID, ` +
        "so it can only run from a model's tool call (invoke the tool with the tool call, not with bare arguments)",
    );
  }
}

/** The run was aborted before the call was sent: nothing ran and nothing was recorded. */
export class CallAbortedError extends Error {
  override name = 'AbortError';
}

/**
 * Runs one call of the turn for a framework. `id` is the framework's tool-call ID, which is the
 * Update ID: the same ID again returns the recorded outcome instead of running the tool twice.
 * When `signal` aborts, the call is cancelled on the worker (the server gets
 * `notifications/cancelled`) and the recorded outcome (`cancelled`) is returned.
 */
export async function runDurableCall(
  turn: Turn,
  request: { id: string; name: string; arguments?: Record<string, unknown> },
  signal?: AbortSignal,
  limits?: ShapeLimits,
  inputs: CallInputOptions = {},
): Promise<DurableToolResult> {
  if (signal?.aborted)
    throw new CallAbortedError(`the run was aborted before ${request.name} was called; it did not run`);
  let settled = false;
  const call = turn.callToolForModel(request, limits, inputs).finally(() => {
    settled = true;
  });
  const onAbort = () => void cancelUntilSettled(turn, request.id, () => settled);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await call;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The abort can come before the workflow has started the call (its Update not yet accepted), when
 * `cancelCall` finds nothing to cancel: send it again until the call is found or has settled.
 */
async function cancelUntilSettled(turn: Turn, id: string, settled: () => boolean): Promise<void> {
  while (!settled()) {
    try {
      if (await turn.cancelCall(id)) return;
    } catch {
      // The turn ended or the connection dropped: the call settles on its own (idle end, failover).
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, CANCEL_RETRY_MS));
  }
}

/** What a turn tells the model about its servers, for the system prompt. */
export interface TurnBriefing {
  /** `instructions` followed by the servers paragraph: put this in the system prompt. */
  system: string;
  /** Which servers are connected, failed or disabled this turn, and how their tools are named. */
  serversParagraph: string;
  /** The status the paragraph was rendered from (every server's state, tools and warnings). */
  status: TurnStatus;
}

/** The system prompt of this turn: the caller's instructions, then the servers paragraph. */
export function turnBriefing(turn: Pick<Turn, 'serversParagraph' | 'status'>, instructions = ''): TurnBriefing {
  const system =
    instructions.trim() === '' ? turn.serversParagraph : `${instructions.trimEnd()}\n\n${turn.serversParagraph}`;
  return { system, serversParagraph: turn.serversParagraph, status: turn.status };
}

/**
 * Starts a turn, runs the framework's run with it, and ends the turn when the run ends, also when
 * it throws (an aborted run included). A run that never returns is ended by the turn's idle
 * timeout (`limits.idleMs`, DMCP_TURN_IDLE).
 */
export async function withDurableTurn<T>(
  client: TurnClient,
  options: StartTurnOptions,
  run: (turn: Turn) => Promise<T>,
): Promise<{ value: T; turn: TurnResult }> {
  const turn = await client.startTurn(options);
  let value: T;
  try {
    value = await run(turn);
  } catch (err) {
    await turn.end().catch(() => undefined);
    throw err;
  }
  return { value, turn: await turn.end() };
}
