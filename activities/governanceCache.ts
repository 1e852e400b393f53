import type { Governance } from '../governance/index.js';
import type { ActivityDeps, ActivityKit } from './deps.js';
import { configFailure } from './history.js';

/** Sessions whose governance is kept between a turn's reconcile and its calls; the oldest go first. */
const GOVERNANCE_SESSIONS_KEPT = 1000;

/**
 * What the operator's files said when a turn reconciled: its tools were frozen, and its calls'
 * hooks run and are checked, under the same rules. Keyed by the turn as Temporal names it to the
 * activity, never by anything in the workflow's input.
 */
export function createGovernanceCache(deps: Pick<ActivityDeps, 'governance' | 'scrub'>): ActivityKit['governanceFor'] {
  const governed = new Map<string, Governance>();
  return async function governanceFor(turnId: string, fresh = false): Promise<Governance | undefined> {
    if (!deps.governance) return undefined;
    const kept = governed.get(turnId);
    if (kept && !fresh) return kept;
    let g: Governance;
    try {
      g = await deps.governance.load();
    } catch (err) {
      throw configFailure(err, deps.scrub);
    }
    governed.delete(turnId);
    governed.set(turnId, g);
    if (governed.size > GOVERNANCE_SESSIONS_KEPT) governed.delete(governed.keys().next().value!);
    return g;
  };
}
