/**
 * Aggregates a V8 `.cpuprofile` (from `node --cpu-prof` or the inspector) into self time per
 * function and per component. CLI: `node dist/bench/cpuProfile.js FILE.cpuprofile|DIR [top]`.
 */
import { readFile, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileSummary {
  /** Wall time covered by the profile (ms). */
  totalMs: number;
  /** Sampled time that was not idle (ms). */
  busyMs: number;
  functions: { name: string; component: string; selfMs: number }[];
  components: { component: string; selfMs: number }[];
}

/** Which part of the stack a frame belongs to. */
export function componentOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(program)') return 'V8/native (program)';
    return 'native / builtins';
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg.startsWith('@temporalio/') ? `${pkg} (worker/client SDK)` : pkg;
  if (url.startsWith('node:')) return 'Node.js internals';
  if (/workflow|bundle/i.test(url) && !url.includes('/dist/')) return 'workflow sandbox (bundle)';
  if (url.includes('/dist/')) return `project: ${/\/dist\/([^/]+)/.exec(url)?.[1] ?? 'dist'}/`;
  return 'other';
}

/**
 * `window`: only samples taken in [fromUs, toUs] of the monotonic clock (V8's profile timestamps
 * and `process.hrtime` both read CLOCK_MONOTONIC on Linux), e.g. a benchmark's steady state
 * without the process's start-up.
 */
export function summarize(profile: CpuProfile, top = 20, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const selfUs = new Map<number, number>();
  let t = profile.startTime;
  if (profile.samples && profile.timeDeltas) {
    // The delta after a sample is the time that sample stands for.
    for (let i = 0; i < profile.samples.length; i++) {
      t += profile.timeDeltas[i] ?? 0;
      if (window && (t < window.fromUs || t > window.toUs)) continue;
      const dt = profile.timeDeltas[i + 1] ?? 0;
      selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + Math.max(0, dt));
    }
  }
  const byFunction = new Map<string, { name: string; component: string; selfMs: number }>();
  const byComponent = new Map<string, number>();
  let busy = 0;
  for (const node of profile.nodes) {
    const ms = (selfUs.get(node.id) ?? 0) / 1000;
    if (ms === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const component = componentOf(url, functionName);
    if (component !== 'idle') busy += ms;
    const name = `${functionName || '(anonymous)'}${url ? ` ${basename(url)}:${lineNumber + 1}` : ''}`;
    const entry = byFunction.get(name) ?? { name, component, selfMs: 0 };
    entry.selfMs += ms;
    byFunction.set(name, entry);
    byComponent.set(component, (byComponent.get(component) ?? 0) + ms);
  }
  return {
    totalMs: window
      ? (Math.min(window.toUs, profile.endTime) - Math.max(window.fromUs, profile.startTime)) / 1000
      : (profile.endTime - profile.startTime) / 1000,
    busyMs: busy,
    functions: [...byFunction.values()]
      .filter((f) => f.component !== 'idle')
      .sort((a, b) => b.selfMs - a.selfMs)
      .slice(0, top),
    components: [...byComponent.entries()]
      .filter(([c]) => c !== 'idle')
      .map(([component, selfMs]) => ({ component, selfMs }))
      .sort((a, b) => b.selfMs - a.selfMs),
  };
}

export async function summarizeFile(
  file: string,
  top = 20,
  window?: { fromUs: number; toUs: number },
): Promise<ProfileSummary> {
  return summarize(JSON.parse(await readFile(file, 'utf8')) as CpuProfile, top, window);
}

/**
 * All profiles `node --cpu-prof --cpu-prof-dir DIR` wrote for one process (one file per thread:
 * `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`, thread 0 = the main thread), merged:
 * components and functions of other threads are tagged with the thread.
 */
export async function summarizeDir(
  dir: string,
  top = 20,
  window?: { fromUs: number; toUs: number },
): Promise<ProfileSummary> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  const merged: ProfileSummary = { totalMs: 0, busyMs: 0, functions: [], components: [] };
  const components = new Map<string, number>();
  for (const file of files) {
    const thread = Number(/\.(\d+)\.\d+\.cpuprofile$/.exec(file)?.[1] ?? 0);
    const tag = thread === 0 ? '' : 'worker thread: ';
    const s = await summarizeFile(join(dir, file), 1000, window);
    merged.totalMs = Math.max(merged.totalMs, s.totalMs);
    merged.busyMs += s.busyMs;
    for (const c of s.components)
      components.set(`${tag}${c.component}`, (components.get(`${tag}${c.component}`) ?? 0) + c.selfMs);
    merged.functions.push(...s.functions.map((f) => ({ ...f, component: `${tag}${f.component}` })));
  }
  merged.functions = merged.functions.sort((a, b) => b.selfMs - a.selfMs).slice(0, top);
  merged.components = [...components.entries()]
    .map(([component, selfMs]) => ({ component, selfMs }))
    .sort((a, b) => b.selfMs - a.selfMs);
  return merged;
}

/** Now on the clock of V8 profile timestamps (µs). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node dist/bench/cpuProfile.js FILE.cpuprofile [top]\n');
    process.exit(2);
  }
  const { stat } = await import('node:fs/promises');
  const s = (await stat(file)).isDirectory()
    ? await summarizeDir(file, Number(top ?? 25))
    : await summarizeFile(file, Number(top ?? 25));
  process.stdout.write(`profile ${s.totalMs.toFixed(0)} ms, busy ${s.busyMs.toFixed(0)} ms\n\nby component:\n`);
  for (const c of s.components)
    process.stdout.write(
      `  ${c.selfMs.toFixed(1).padStart(9)} ms  ${((100 * c.selfMs) / s.busyMs).toFixed(1).padStart(5)}%  ${c.component}\n`,
    );
  process.stdout.write('\ntop self time:\n');
  for (const f of s.functions)
    process.stdout.write(
      `  ${f.selfMs.toFixed(1).padStart(9)} ms  ${((100 * f.selfMs) / s.busyMs).toFixed(1).padStart(5)}%  ${f.name}  [${f.component}]\n`,
    );
}
