/**
 * A session's events, read from Temporal alone (the API keeps no state): the stream lists the
 * session's turns every poll to find new ones and follows each one's stream (client/turnEvents.ts)
 * from its start. Event IDs are places in their turn, so a client that reconnects with the last ID
 * it read is sent that turn's events after it, then the turns after that one.
 */
import { pumpEvents } from '../client/eventPump.js';
import { placeOf, turnEvents, type TurnEvent } from '../client/turnEvents.js';
import type { TurnClient } from '../client/turnClient.js';
import type { StepTextStore } from '../payloads/streamLog.js';

export interface SessionEventsOptions {
  /** How often the session's turns are listed, to find a new one. */
  pollMs: number;
  signal: AbortSignal;
  /** Resume after this event ID (the last one the client read): its turn after it, then the later turns. */
  after?: string;
  /** Where model steps' text is logged as produced. */
  stepText?: StepTextStore;
}

/** The turn an event ID belongs to, when it is one of `turnIds`. */
export function turnOfEventId(id: string, turnIds: readonly string[]): string | undefined {
  const turnId = id.slice(0, Math.max(0, id.lastIndexOf('|')));
  if (!turnIds.includes(turnId)) return undefined;
  placeOf(id, turnId);
  return turnId;
}

/**
 * Yields the session's events until `signal` aborts. Without `after`, the newest turn that exists
 * when the stream starts is sent from its beginning (its status first); older turns are not replayed.
 */
export async function* sessionEvents(
  turns: TurnClient,
  sessionId: string,
  options: SessionEventsOptions,
): AsyncGenerator<TurnEvent> {
  yield* pumpEvents<TurnEvent>(options.signal, async (emit, stop, fail) => {
    const follow = async (turnId: string, after?: string) => {
      for await (const e of turnEvents(turns.client, turnId, {
        signal: stop,
        ...(after !== undefined ? { after } : {}),
        ...(options.stepText ? { stepText: options.stepText } : {}),
      }))
        emit(e);
    };
    const following = new Set<string>();
    let first = true;
    while (!stop.aborted) {
      const ids = await turns.sessionTurns(sessionId);
      if (first) {
        first = false;
        const resumed = options.after === undefined ? undefined : turnOfEventId(options.after, ids);
        const skip = resumed === undefined ? ids.length - 1 : ids.indexOf(resumed);
        for (const id of ids.slice(0, skip)) following.add(id);
        if (resumed !== undefined) {
          following.add(resumed);
          follow(resumed, options.after).catch(fail);
        }
      }
      for (const id of ids) {
        if (following.has(id)) continue;
        following.add(id);
        follow(id).catch(fail);
      }
      await sleep(options.pollMs, stop);
    }
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
