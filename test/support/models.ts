/** The scripted model server (test/fixtures/modelServer.ts) and a worker config dir naming it in models.json. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readLines, startListening } from './harness.js';

export const modelFixture = fileURLToPath(new URL('../fixtures/modelServer.js', import.meta.url));

/** One request the model server answered, as its log records it. */
export interface ModelRequest {
  at: number;
  key: string | null;
  step: number | null;
  n: number | null;
  status: number;
  messages: number;
  tools: string[];
  toolResults: string[];
  system: string | null;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string;
  requests(): Promise<ModelRequest[]>;
}

/** Starts the model server with `script` (see the fixture); its PID joins `started`. */
export async function startModelServer(
  dir: string,
  name: string,
  script: unknown,
  started: Set<number>,
  env: NodeJS.ProcessEnv = {},
): Promise<ModelServer> {
  const scriptFile = join(dir, `${name}.script.json`);
  const logFile = join(dir, `${name}.requests.log`);
  await writeFile(scriptFile, JSON.stringify(script));
  await writeFile(logFile, '');
  const baseURL = await startListening(
    [modelFixture, scriptFile, logFile],
    /^model server listening on (http:\/\/127\.0\.0\.1:\d+\/v1)$/m,
    started,
    env,
  );
  return { baseURL, requests: async () => (await readLines(logFile)).map((l) => JSON.parse(l) as ModelRequest) };
}

/** Writes `models.json` into the worker's config dir: one openai-compatible model `name` at `baseURL`. */
export async function writeModelsJson(
  configDir: string,
  models: Record<string, Record<string, string>>,
  instructions?: string,
): Promise<void> {
  await writeFile(
    join(configDir, 'models.json'),
    JSON.stringify({ ...(instructions !== undefined ? { instructions } : {}), models }, null, 2),
  );
}
