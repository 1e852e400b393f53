import { readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findTemporalCli, temporalCliVersion } from '../dev/temporalCli.js';

export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The machine line every BENCHMARKS.md section starts with (cores, memory, Node, Temporal CLI, date). */
export async function machineLine(): Promise<string> {
  const cli = await findTemporalCli().catch(() => undefined);
  const temporal = cli ? await temporalCliVersion(cli.path).catch(() => 'unknown') : 'not found';
  const gib = (totalmem() / 2 ** 30).toFixed(0);
  return `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), ${gib} GiB, Node ${process.version}, ${temporal}, ${new Date().toISOString().slice(0, 10)}`;
}

/** The machine's load when a run ended, so a reader can tell a quiet run from one that shared the cores. */
export function loadLine(): string {
  const [one, five] = loadavg();
  return `load average ${one!.toFixed(1)} (1 min) / ${five!.toFixed(1)} (5 min) on ${cpus().length} cores when the run ended${one! > cpus().length ? ': the machine was loaded by other work' : ''}`;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Replaces (or appends) the `## <title>` section of BENCHMARKS.md, leaving the others alone. */
export async function writeSection(title: string, body: string): Promise<void> {
  const file = join(projectRoot, 'BENCHMARKS.md');
  let text = await readFile(file, 'utf8').catch(() => '# Benchmarks\n\nRun on demand (`npm run bench`), never in CI. Each section says how it was run, on what machine and when.\n');
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
