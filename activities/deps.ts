import type { Logger } from 'pino';
import type { ConfigRefs, LoadedConfig } from '../config/types.js';
import type { ServerPool } from '../mcp/pool.js';
import type { LegacyInputWaits } from '../mcp/legacyInputs.js';
import type { Governance, GovernanceService } from '../governance/index.js';
import type { ModelService } from '../models/modelStep.js';
import type { StepTextStore } from '../models/stepText.js';

/**
 * The part of the worker's server pool the activities use: workflow-tier tests pass a fake one
 * instead of starting server processes.
 */
export type SessionServers = Pick<ServerPool, 'reconcile' | 'tools' | 'callTool' | 'endSession'> &
  Partial<Pick<ServerPool, 'withServer' | 'serves'>>;

/** What the activities need; tests pass real or fake parts explicitly. */
export interface ActivityDeps {
  pool: SessionServers;
  /** This worker's unique task queue. */
  workerQueue: string;
  /**
   * Resolves config references into entries; runs on the worker, which decides what of them it
   * honours. `turn.sessionId` is part of what the references' proof signs.
   */
  loadConfig: (refs: ConfigRefs, turn: { sessionId: string }) => Promise<LoadedConfig>;
  logger: Logger;
  /** Removes secret values from messages that go into history. */
  scrub: (text: string) => string;
  /**
   * The operator's allowed-tools rules and hooks (`createGovernance`). Absent: every tool is
   * listed and no hook runs.
   */
  governance?: GovernanceService;
  /**
   * Seals PreToolUse decisions. The operator's turn key, which every worker of the operator holds,
   * so a call that moves to another worker after its hooks ran still verifies. Absent: a key of
   * this process alone (such a call is then refused on the other worker, and says why).
   */
  turnKey?: Buffer;
  /**
   * Whether retry-safe calls may run as local activities on this worker (DMCP_FAST_PATH). Default
   * true. Reported by reconcileServers, so each turn reads the choice from its own history.
   */
  fastPath?: boolean;
  /**
   * Whether a side-effecting call may be sent to the shared queue for eager dispatch to this worker
   * (DMCP_EAGER_CALLS). Default true. Reported by reconcileServers, like {@link fastPath}.
   */
  eagerCalls?: boolean;
  /**
   * Whether calls to remote servers of the stateless 2026-07-28 revision may run on any worker
   * (DMCP_SHARED_CALLS). Default true. Reported by reconcileServers, like {@link fastPath}.
   */
  sharedCalls?: boolean;
  /** Runs model turns' steps (the operator's `models.json`, the conversation store). Absent: a model step is refused. */
  models?: ModelService;
  /** Where model steps write their text as it is produced, for the turn's stream. Absent: only whole steps are streamed. */
  stepText?: StepTextStore;
}

/** What every activity of one worker is built from: its deps and the parts they share. */
export interface ActivityKit {
  deps: ActivityDeps;
  /** The operator's governance for a turn, kept from its reconcile (`fresh`: read again); undefined without governance. */
  governanceFor: (turnId: string, fresh?: boolean) => Promise<Governance | undefined>;
  /** Seals a PreToolUse decision's proof text with the turn key. */
  seal: (text: string) => string;
  /** The 2025-era questions this worker's calls hold open, until their answers are delivered. */
  legacyWaits: LegacyInputWaits;
}
