/**
 * Governance of MCP tools: allowed-tools rules and the operator's PreToolUse / PostToolUse hooks.
 * `createGovernance` reads the operator's rules (settings and the config dir's `settings.json`);
 * the activities apply them when they freeze a turn's tools and run the hooks of each call.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ToolHooks, ToolInfo } from '../contract/index.js';
import { configDirPath } from '../config/load.js';
import { ConfigError } from '../config/types.js';
import { configSettings } from '../settings/index.js';
import { createCallHooks } from './callHooks.js';
import { hookMatches, type HookExit } from './hookOutput.js';
import { runHookCommand, type HookRunRequest } from './hookRunner.js';
import { parseGovernanceText, type HookSpec } from './settingsFile.js';
import { decideTool, listProblem, type ToolRuleSet } from './toolRules.js';

export { decideTool, matchesToolRule, toolRuleProblem, listProblem, type ToolRuleSet } from './toolRules.js';
export { parseGovernanceText, type HookSpec, type GovernanceFile } from './settingsFile.js';
export { parsePreToolUse, parsePostToolUse, hookMatches, type HookExit } from './hookOutput.js';
export { runHookCommand, type HookRunRequest } from './hookRunner.js';

/** The governance file in the config dir. */
export const governanceFile = (configDir: string): string => join(configDir, 'settings.json');

/** The operator's rules and hooks, as read for one turn. */
export interface Governance {
  /** In order: the worker's settings, the config dir's file. Every set must allow a tool. */
  ruleSets: ToolRuleSet[];
  hooks: HookSpec[];
  warnings: string[];
}

/** Options of {@link createGovernance}. */
export interface GovernanceOptions {
  /** The worker's environment: where the config dir is, and what hooks inherit (minus secrets). */
  env: NodeJS.ProcessEnv;
  /** DMCP_ALLOWED_TOOLS: the worker's allow list (undefined: no allow list). */
  allowedTools?: string[];
  /** DMCP_DISALLOWED_TOOLS. */
  disallowedTools?: string[];
  /** Reads the governance file; rejects with ENOENT when it is missing (default: the disk). */
  readText?: (path: string) => Promise<string>;
  /** Runs a hook (default: {@link runHookCommand}); tests and benchmarks may count runs. */
  runHook?: (request: HookRunRequest) => Promise<HookExit>;
  /** Removes secret values from what is recorded. */
  scrub: (text: string) => string;
}

/** What a turn adds to the operator's rules: it may only narrow them. */
export interface TurnToolRules {
  allowedTools?: string[];
  disallowedTools?: string[];
}

const NO_GOVERNANCE: Governance = { ruleSets: [], hooks: [], warnings: [] };

/**
 * The operator's governance. Bad rules in the worker's settings throw here, at start; a bad
 * governance file throws a ConfigError (naming file, line and field) from `load`, every turn, until
 * it is fixed: skipping it would drop deny rules and hooks the operator relies on.
 */
export function createGovernance(options: GovernanceOptions) {
  const { env, scrub } = options;
  const readText = options.readText ?? ((path: string) => readFile(path, 'utf8'));
  const runHook = options.runHook ?? runHookCommand;
  const settingsSet: ToolRuleSet | undefined = (() => {
    const allowProblem = listProblem(options.allowedTools, 'DMCP_ALLOWED_TOOLS');
    const denyProblem = listProblem(options.disallowedTools, 'DMCP_DISALLOWED_TOOLS');
    if (allowProblem || denyProblem) throw new ConfigError((allowProblem ?? denyProblem)!);
    if (options.allowedTools === undefined && (options.disallowedTools ?? []).length === 0) return undefined;
    return {
      source: "the worker's DMCP_ALLOWED_TOOLS / DMCP_DISALLOWED_TOOLS",
      allow: options.allowedTools,
      deny: options.disallowedTools ?? [],
    };
  })();

  /** Reads the operator's rules and hooks for a turn: the settings, then the config dir's file. */
  async function load(): Promise<Governance> {
    const ruleSets = settingsSet ? [settingsSet] : [];
    if (configSettings(env).noUserConfig) return ruleSets.length ? { ...NO_GOVERNANCE, ruleSets } : NO_GOVERNANCE;
    const dir = configDirPath(env);
    if (dir === undefined) return ruleSets.length ? { ...NO_GOVERNANCE, ruleSets } : NO_GOVERNANCE;
    const file = governanceFile(dir);
    let text: string;
    try {
      text = await readText(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR')
        return ruleSets.length ? { ...NO_GOVERNANCE, ruleSets } : NO_GOVERNANCE;
      throw new ConfigError(
        `${file}: cannot read it (${code ?? (err as Error).message}); no turn runs until it can be read`,
        file,
      );
    }
    const parsed = parseGovernanceText(text, file);
    return {
      ruleSets: parsed.rules ? [...ruleSets, parsed.rules] : ruleSets,
      hooks: parsed.hooks,
      warnings: parsed.warnings,
    };
  }

  /**
   * The turn's tools under the rules: a refused tool keeps its place with `refusedBy` (so a call to
   * it names the rule), the others get the hooks that apply. With no rules and no hooks the list is
   * returned as it is. Bad matchers in the turn's rules throw a ConfigError naming the field.
   */
  function govern(tools: ToolInfo[], g: Governance, turn: TurnToolRules = {}): ToolInfo[] {
    const sets = ruleSetsFor(g, turn);
    if (sets.length === 0 && g.hooks.length === 0) return tools;
    return tools.map((tool) => {
      const verdict = decideTool(sets, tool.name);
      if (!verdict.allowed) return { ...tool, refusedBy: verdict.reason };
      const hooks = hooksFor(g.hooks, tool.name);
      return {
        ...tool,
        ...(hooks ? { hooks } : {}),
        ...(verdict.ask !== undefined ? { askedBy: verdict.ask } : {}),
        ...(verdict.edits !== undefined ? { approvalEdits: verdict.edits } : {}),
      };
    });
  }

  /**
   * Whether a tool name may be shown to the model under the operator's and the turn's rules;
   * undefined when there are no rules (everything may).
   */
  function visible(g: Governance, turn: TurnToolRules = {}): ((name: string) => boolean) | undefined {
    const sets = ruleSetsFor(g, turn);
    return sets.length === 0 ? undefined : (name) => decideTool(sets, name).allowed;
  }

  const { preToolUse, postToolUse } = createCallHooks({ env, scrub, runHook });
  return { load, govern, visible, preToolUse, postToolUse };
}

/**
 * Every rule set a turn's tools must pass, in order: the operator's, then the turn's own. Bad
 * matchers in the turn's rules throw a ConfigError naming the field.
 */
export function ruleSetsFor(g: Governance, turn: TurnToolRules): ToolRuleSet[] {
  const problem =
    listProblem(turn.allowedTools, "the turn's allowedTools") ??
    listProblem(turn.disallowedTools, "the turn's disallowedTools");
  if (problem) throw new ConfigError(problem);
  // An agent's grants (from the plane) become one more set here, between the operator's and the turn's.
  const sets = [...g.ruleSets];
  if (turn.allowedTools !== undefined || (turn.disallowedTools ?? []).length > 0) {
    sets.push({
      source: "the turn's allowedTools / disallowedTools",
      allow: turn.allowedTools,
      deny: turn.disallowedTools ?? [],
    });
  }
  return sets;
}

export type GovernanceService = ReturnType<typeof createGovernance>;

/** For each event, the longest timeout of the hooks whose matcher selects `toolName`; undefined when none. */
export function hooksFor(hooks: readonly HookSpec[], toolName: string): ToolHooks | undefined {
  let out: ToolHooks | undefined;
  for (const h of hooks) {
    if (!hookMatches(h.matcher, toolName)) continue;
    out ??= {};
    out[h.event] = Math.max(out[h.event] ?? 0, h.timeoutMs);
  }
  return out;
}
