import { condition, sleep } from '@temporalio/workflow';
import type { TurnState } from './turnState.js';

/**
 * Keeps an interactive turn open until it is ended or no call has started or ended for `idleMs`;
 * then sets `state.ended`. `afterWake` runs after each wake-up (the turn continues as new there).
 * With `wakeWhen`, a finished burst of calls wakes the loop only when it holds: each wake-up costs
 * promises, and most find nothing to do.
 */
/**
 * One idle timer per idle period rather than a condition-with-timeout per wake-up, which started
 * and cancelled a timer for every call: two history events and measurable workflow CPU per call.
 */
export async function waitWhileOpen(
  state: TurnState,
  idleMs: number,
  afterWake: () => Promise<void>,
  wakeWhen?: () => boolean,
): Promise<void> {
  let idleFired = false;
  const armIdle = () => {
    // While a call runs the turn is not idle; the timer is re-armed when it fires.
    const wait = state.inFlight > 0 ? idleMs : Math.max(state.lastActivityAt + idleMs - Date.now(), 1);
    void sleep(wait).then(
      () => void (idleFired = true),
      () => undefined,
    );
  };
  armIdle();
  while (!state.ended) {
    const seen = state.lastActivity;
    // Wakes once per finished burst of calls, not at each call's start and end.
    await condition(
      () =>
        state.ended !== undefined ||
        idleFired ||
        (state.lastActivity !== seen && state.inFlight === 0 && (wakeWhen?.() ?? true)),
    );
    if (idleFired) {
      idleFired = false;
      // A loop that wakes only when due may hold an old `seen`: then the last call's time decides.
      if (
        state.inFlight === 0 &&
        (wakeWhen !== undefined || state.lastActivity === seen) &&
        state.lastActivityAt + idleMs <= Date.now()
      ) {
        state.ended = 'idle';
        break;
      }
      armIdle();
    }
    await afterWake();
  }
}
