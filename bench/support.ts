import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findTemporalCli, temporalCliVersion } from '../dev/temporalCli.js';
import { treeCpuMs } from './procs.js';

export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The machine line every section of bench/results/<bench>.md starts with (cores, memory, Node, Temporal CLI, date). */
export async function machineLine(): Promise<string> {
  const cli = await findTemporalCli().catch(() => undefined);
  const temporal = cli ? await temporalCliVersion(cli.path).catch(() => 'unknown') : 'not found';
  const gib = (totalmem() / 2 ** 30).toFixed(0);
  return `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), ${gib} GiB, Node ${process.version}, ${temporal}, ${new Date().toISOString().slice(0, 10)}`;
}

/**
 * The machine's load when a run ended. The load average counts the run's own processes (its
 * Temporal server, workers, MCP servers) as much as anyone else's, so it cannot say the load came
 * from other work: {@link cpuShare} can.
 */
export function loadLine(): string {
  const [one, five] = loadavg();
  return `load average ${one!.toFixed(1)} (1 min) / ${five!.toFixed(1)} (5 min) on ${cpus().length} cores when the run ended, its own processes included`;
}

/** Busy and total CPU ticks of the whole machine, from the first line of /proc/stat. */
function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const busy = user! + nice! + system! + irq! + softirq! + (steal ?? 0);
    return { busy, total: busy + idle! + iowait! };
  } catch {
    return undefined;
  }
}

/**
 * How busy the machine's cores were while a run went, and how much of that was the run itself (this
 * process and every process it started, from /proc) against other work. Call at the start; the
 * returned function, at the end, gives the sentence for the bench's results file.
 */
export function cpuShare(): () => string {
  const t0 = machineTicks();
  const own0 = ownCpuMs();
  const wall0 = performance.now();
  return () => {
    const t1 = machineTicks();
    const wallMs = performance.now() - wall0;
    if (!t0 || !t1 || wallMs <= 0) return loadLine();
    const cores = cpus().length;
    const busyCores = ((t1.busy - t0.busy) / (t1.total - t0.total)) * cores;
    const ownCores = Math.min(busyCores, (ownCpuMs() - own0) / wallMs);
    const other = busyCores - ownCores;
    const verdict = other >= 0.5 ? 'other work shared the machine' : 'the machine was otherwise quiet';
    return `while it ran, ${busyCores.toFixed(2)} of ${cores} cores were busy on average: ${ownCores.toFixed(2)} by the run itself (this process and every process it started: servers, workers, MCP servers), ${other.toFixed(2)} by other work (${verdict}); ${loadLine()}`;
  };
}

/** CPU ms of this process and of every process it started, live or reaped. */
function ownCpuMs(): number {
  const tree = treeCpuMs(process.pid);
  return tree.self + tree.children;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Where a bench's full runs live: `bench/results/<bench>.md` (BENCHMARKS.md keeps the headline table and links here). */
export function resultsFile(bench: string): string {
  return join(projectRoot, 'bench', 'results', `${bench}.md`);
}

/**
 * Replaces (or appends) the `## <title>` section of `bench/results/<bench>.md`, leaving its other
 * sections (earlier variants, notes written by hand) alone: a section runs from its heading to the
 * next `## `. The headline table in BENCHMARKS.md is kept by hand, from these files.
 */
export async function writeSection(bench: string, title: string, body: string): Promise<void> {
  const file = resultsFile(bench);
  await mkdir(join(projectRoot, 'bench', 'results'), { recursive: true });
  let text = await readFile(file, 'utf8').catch(
    () =>
      `# Benchmark: ${bench}\n\nFull runs of \`bench/${bench}.ts\`, written by the script (each \`## \` section is replaced by its next run) and notes written by hand. Headline figures: [BENCHMARKS.md](../../BENCHMARKS.md).\n`,
  );
  const heading = `## ${title}`;
  const section = `${heading}\n\n${body.trim()}\n`;
  const start = text.indexOf(`${heading}\n`);
  if (start < 0) {
    text = `${text.trimEnd()}\n\n${section}`;
  } else {
    const next = text.indexOf('\n## ', start + heading.length);
    text = `${text.slice(0, start)}${section}${next < 0 ? '' : text.slice(next)}`;
  }
  await writeFile(file, text.endsWith('\n') ? text : `${text}\n`);
}
