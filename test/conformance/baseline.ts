/**
 * The conformance baselines: per suite line, the client scenarios expected to fail, each naming the
 * issue whose change will remove it. The file is the suite's own `--expected-failures` YAML
 * (a `client:` list), kept to one entry a line so each carries its issue as a comment:
 *
 *   client:
 *     - elicitation-sep1034-client-defaults # input requests
 */
import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';

/** The issues an expected failure may name: the change that will make the scenario pass. */
export const BASELINE_ISSUES = ['input requests', 'tasks', 'logins', 'protocol eras'] as const;

export interface Baseline {
  /** The file, relative to the working directory (for messages). */
  file: string;
  /** Scenario -> the issue that will remove it. */
  entries: Map<string, (typeof BASELINE_ISSUES)[number]>;
}

/** Reads a baseline; any line it does not understand is an error naming the file and line. */
export async function readBaseline(path: string): Promise<Baseline> {
  const file = relative(process.cwd(), path) || path;
  const entries = new Map<string, (typeof BASELINE_ISSUES)[number]>();
  let inClient = false;
  (await readFile(path, 'utf8')).split('\n').forEach((text, i) => {
    const where = `${file}:${i + 1}`;
    if (/^\s*(#.*)?$/.test(text)) return;
    if (/^client:\s*(#.*)?$/.test(text)) {
      inClient = true;
      return;
    }
    const entry = /^\s+-\s+(\S+)\s*(?:#\s*(.*?)\s*)?$/.exec(text);
    if (!inClient || !entry)
      throw new Error(`${where}: expected "client:" and then "  - <scenario> # <issue>", got ${JSON.stringify(text)}`);
    const [, scenario, issue] = entry;
    if (!issue || !(BASELINE_ISSUES as readonly string[]).includes(issue)) {
      throw new Error(
        `${where}: ${scenario} must name the issue that will remove it, one of ${BASELINE_ISSUES.map((s) => `"# ${s}"`).join(', ')}`,
      );
    }
    if (entries.has(scenario!)) throw new Error(`${where}: ${scenario} is listed twice`);
    entries.set(scenario!, issue as (typeof BASELINE_ISSUES)[number]);
  });
  return { file, entries };
}

/** How a scenario's result reads against its line's baseline. */
export type Verdict = 'pass' | 'expected' | 'REGRESSION' | 'STALE';

/** A failure not listed is a regression; a listed scenario that passes is stale (remove its entry). */
export function verdict(scenario: string, passed: boolean, baseline: Pick<Baseline, 'entries'>): Verdict {
  const expected = baseline.entries.has(scenario);
  if (passed) return expected ? 'STALE' : 'pass';
  return expected ? 'expected' : 'REGRESSION';
}
