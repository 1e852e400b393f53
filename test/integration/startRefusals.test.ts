// A turn that cannot give its caller what it asked for says so at the start, with the reason and
// the fix, instead of starting with no tools or failing with "the Workflow completed before the
// Update completed".
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
import { TurnClient, TurnFailedError } from '../../client/turnClient.js';
import { fixtureServer, startHarness, tempDir, writeConfigDir, type Harness } from '../support/harness.js';

describe('a turn start that cannot work says why', () => {
  let h: Harness;
  let root: string;
  let allowed: string;

  before(async () => {
    root = await tempDir('dmcp-start-refusals-');
    allowed = join(root, 'allowed');
    await mkdir(allowed, { recursive: true });
    const config = await writeConfigDir(join(root, 'config'), {
      base: { command: process.execPath, args: [fixtureServer] },
    });
    h = await startHarness('start-refusals', {
      ...config,
      DMCP_ALLOWED_CONFIG_DIRS: allowed,
      DMCP_ALLOW_INLINE: 'true',
    });
  });
  after(async () => {
    await h?.stop();
  });

  test('a client without the turn key refuses a turn that names servers, and names the fix', async () => {
    const keyless = new TurnClient({
      client: new Client({
        connection: h.client.client.connection,
        dataConverter: h.client.client.options.dataConverter,
      }),
      taskQueue: h.taskQueue,
      dataDir: join(root, 'not-the-workers-data-dir'),
    });
    await assert.rejects(
      keyless.startTurn({
        sessionId: 'keyless-1',
        workspace: root,
        servers: { inlineSpecs: [`echo:${process.execPath} ${fixtureServer}`] },
      }),
      (err: Error) =>
        /the turn names inline specs/.test(err.message) &&
        err.message.includes(join(root, 'not-the-workers-data-dir', 'turn.key')) &&
        /pass `turnKey`, or `dataDir`/.test(err.message),
    );
    const started = await keyless.sessionTurns('keyless-1');
    assert.deepEqual(started, [], 'nothing was started');

    // A turn that names nothing the key signs still starts: the worker's own servers serve it.
    const turn = await keyless.startTurn({ sessionId: 'keyless-2', workspace: root });
    assert.ok(turn.tools.some((t) => t.name === 'mcp__base__echo'));
    await turn.end();
  });

  test("a turn that fails while it starts reaches the caller with the turn's reason", async () => {
    const file = join(allowed, 'mcp.json');
    await writeFile(file, JSON.stringify({ mcpServers: { typo: { comand: 'x' } } }, null, 2));
    await assert.rejects(
      h.client.startTurn({ sessionId: 'bad-config', workspace: root, servers: { mcpConfigFiles: [file] } }),
      (err: Error) => {
        assert.ok(err instanceof TurnFailedError, `${err.name}: ${err.message}`);
        assert.equal(err.turnId, 'bad-config/turn-1');
        assert.match(err.message, /unknown field "comand" \(did you mean "command"\?\)/);
        assert.ok(err.message.includes(file), 'names the file');
        return true;
      },
    );
  });
});
