/** The activities that start a turn's servers and name their tools. */
import type { LoadedConfig } from '../config/types.js';
import { renderServersParagraph } from '../shaping/serversParagraph.js';
import type { ListToolsInput, ReconcileInput, ReconcileResult, ToolInfo, WorkerInfo } from '../contract/index.js';
import { currentTurnChain, currentTurnId, withHeartbeat } from './context.js';
import type { ActivityKit } from './deps.js';
import { configFailure, scrubResult } from './history.js';
import { sharedServers } from './sharedCalls.js';

/** `reconcileServers`: resolves the turn's references and brings its session's servers to them. */
export function reconcileServersActivity(kit: ActivityKit): (input: ReconcileInput) => Promise<ReconcileResult> {
  const { deps, governanceFor } = kit;
  const { pool, logger, scrub } = deps;
  return async function reconcileServers(input) {
    let config: LoadedConfig;
    try {
      config = await deps.loadConfig(input.refs, { sessionId: input.sessionId });
    } catch (err) {
      throw configFailure(err, scrub);
    }
    // Read before any server starts: a broken governance file stops the turn, naming the file and line.
    const turnId = currentTurnId();
    const g = await governanceFor(turnId, true);
    // An open interactive turn may still call: its servers are held for its idle limit.
    const chain = currentTurnChain(input.firstRunId);
    const status = await withHeartbeat(() =>
      pool.reconcile(input.sessionId, config, {
        holdMs: input.turnIdleMs,
        workspace: input.refs.workspace,
        offerRoot: input.offerWorkspaceRoot === true,
        turnId: chain,
      }),
    );
    logger.info(
      { sessionId: input.sessionId, servers: status.servers.map((s) => `${s.name}:${s.state}`) },
      'servers reconciled',
    );
    // The status is recorded in history: a secret value that reached it (an error that quotes a
    // spec, a server's stderr) must not.
    const withWarnings =
      g && g.warnings.length > 0 ? { ...status, warnings: [...status.warnings, ...g.warnings] } : status;
    const clean = scrubResult(withWarnings, scrub);
    // The status keeps every tool (the operator reads it); the model's paragraph names only those it may call.
    let shown: ((name: string) => boolean) | undefined;
    try {
      shown = g && deps.governance?.visible(g, input);
    } catch (err) {
      throw configFailure(err, scrub);
    }
    const forModel = shown
      ? { ...clean, servers: clean.servers.map((s) => ({ ...s, tools: s.tools.filter(shown) })) }
      : clean;
    return {
      workerQueue: deps.workerQueue,
      status: clean,
      serversParagraph: renderServersParagraph(forModel),
      fastPath: deps.fastPath !== false,
      eagerCalls: deps.eagerCalls !== false,
      ...withShared(sharedServers(kit, config, status, chain)),
    };
  };
}

function withShared(shared: ReconcileResult['shared']): Pick<ReconcileResult, 'shared'> {
  return shared ? { shared } : {};
}

/** `listTools`: the session's tools, as the operator's rules let the turn see them. */
export function listToolsActivity({
  deps,
  governanceFor,
}: ActivityKit): (input: ListToolsInput) => Promise<ToolInfo[]> {
  return async function listTools(input) {
    const tools = deps.pool.tools(input.sessionId);
    const g = await governanceFor(currentTurnId());
    if (!g || !deps.governance) return tools;
    try {
      return deps.governance.govern(tools, g, input);
    } catch (err) {
      throw configFailure(err, deps.scrub);
    }
  };
}

/** `workerInfo`: this worker's own queue and its DMCP_FAST_PATH; run as a local activity, by the worker running the turn. */
export function workerInfoActivity({ deps }: ActivityKit): () => Promise<WorkerInfo> {
  return async function workerInfo() {
    return { workerQueue: deps.workerQueue, fastPath: deps.fastPath !== false };
  };
}
