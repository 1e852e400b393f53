/** Helpers of the input-request tests: the 2026 fixture over HTTP, its log, and the call inputs history holds. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ActivityName, type CallToolInput } from '../../contract/index.js';
import type { TurnClient } from '../../client/turnClient.js';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { decodeHistoryPayloads } from '../../payloads/decodeHistory.js';
import { readLines } from './harness.js';

const modernFixture = fileURLToPath(new URL('../fixtures/modernServer.js', import.meta.url));
const started = new Set<number>();

/** Starts the 2026 fixture over HTTP with its own log; resolves with its URL. */
export async function modernHttpServer(logFile: string): Promise<string> {
  const child = spawn(process.execPath, [modernFixture, 'http', '--legacy', 'reject'], {
    env: { PATH: process.env.PATH, FIXTURE_LOG: logFile },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.pid === undefined) throw new Error('could not start the modern fixture');
  started.add(child.pid);
  child.stdout.setEncoding('utf8');
  return new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const match = /\{"url":"([^"]+)"\}/.exec(buffered);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`modern fixture exited with ${code}`)));
  });
}

export function killStartedServers(): void {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** The `callTool` activity inputs of a turn, decoded from its history. */
export async function callInputs(client: TurnClient, turnId: string): Promise<CallToolInput[]> {
  const converter = client.client.options.loadedDataConverter;
  const history = await client.client.workflow.getHandle(turnId).fetchHistory();
  await decodeHistoryPayloads(history, { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage });
  return (history.events ?? []).flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== ActivityName.callTool || !scheduled.input?.payloads?.[0]) return [];
    return [converter.payloadConverter.fromPayload<CallToolInput>(scheduled.input.payloads[0])];
  });
}

/**
 * A turn's whole history as searchable text: the history as recorded (JSON) and every payload's
 * plain text, external storage and codecs undone.
 */
export async function historyTexts(client: TurnClient, turnId: string): Promise<{ raw: string; payloads: string[] }> {
  const converter = client.client.options.loadedDataConverter;
  const history = await client.client.workflow.getHandle(turnId).fetchHistory();
  const raw = historyToJSON(history);
  await decodeHistoryPayloads(history, { codecs: converter.payloadCodecs, externalStorage: converter.externalStorage });
  const payloads: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return;
    const p = node as { data?: unknown; metadata?: unknown };
    if (p.data instanceof Uint8Array && typeof p.metadata === 'object' && p.metadata !== null)
      payloads.push(Buffer.from(p.data).toString('utf8'));
    else Object.values(node).forEach(walk);
  };
  walk(history);
  return { raw, payloads };
}

interface ProvisionLine {
  tool: string;
  round?: number;
  state?: string;
  action?: string;
  completed?: boolean;
}

/** Provision's log lines (one per round; a completion once). */
export async function provisionLog(file: string): Promise<ProvisionLine[]> {
  return (await readLines(file)).map((l) => JSON.parse(l) as ProvisionLine).filter((e) => e.tool === 'provision');
}

/** The text of an outcome's content. */
export function text(outcome: { content: unknown[] }): string {
  return outcome.content.map((c) => (c as { text?: string }).text ?? '').join('');
}
