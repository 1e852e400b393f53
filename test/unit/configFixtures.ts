// Shared fixtures for the config tests (no tests here; the name keeps it inside the config test files).
import type { CommandRequest, ConfigIO } from '../../config/configIO.js';

/** The workspace used by config tests. */
export const WS = '/ws';

/** A worker environment with secrets of every kind, and plain variables. */
export const BASE_ENV: NodeJS.ProcessEnv = {
  HOME: '/home/u',
  PATH: '/usr/bin',
  DMCP_MCP_ENV: 'GH_TOKEN,DB_PASS',
  GH_TOKEN: 'ghp_supersecretvalue',
  DB_PASS: 'db-pass-secret',
  OPENAI_API_KEY: 'sk-openai-secret',
  ANTHROPIC_API_KEY: 'sk-ant-secret',
  TEMPORAL_TLS_CLIENT_KEY_DATA: 'tls-key-secret',
  DMCP_ENCRYPTION_KEY: 'encryption-key-secret',
  SET_VAR: 'value',
  EMPTY_VAR: '',
  NEWLINE_VAR: 'a\r\nX-Injected: 1',
};

/** A config file whose servers sit one per line, starting at line 3. */
export function configText(members: string[]): string {
  return `{\n  "mcpServers": {\n${members.map((m) => `    ${m}`).join(',\n')}\n  }\n}\n`;
}

/** An in-memory ConfigIO that records which files were read and which commands ran. */
export function fakeIO(
  files: Record<string, string>,
  outputs: Record<string, string> = {},
): ConfigIO & { calls: CommandRequest[]; reads: string[] } {
  const calls: CommandRequest[] = [];
  const reads: string[] = [];
  return {
    calls,
    reads,
    readText(path) {
      reads.push(path);
      if (Object.hasOwn(files, path)) return Promise.resolve(files[path]);
      return Promise.reject(Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' }));
    },
    runCommand(request) {
      calls.push(request);
      const key = request.argv.join(' ');
      if (Object.hasOwn(outputs, key)) return Promise.resolve(`${outputs[key]}\n`);
      return Promise.reject(new Error(`command not found: ${request.argv[0]}`));
    },
  };
}
