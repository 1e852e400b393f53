/**
 * The S3 payload store against a real S3-compatible server: Versity's S3 gateway (posix backend in
 * a temp dir, on loopback), built into `.tools/` by `node dist/dev/setupCluster.js`. Workers and
 * clients in different folders (different data dirs) read each other's large payloads through it;
 * what is uploaded is content-addressed, verified on read, and encrypted when a key is set.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { S3Client } from '@aws-sdk/client-s3';
import { NativeConnection } from '@temporalio/worker';
import type { DataConverter, Payload } from '@temporalio/common';
import pino from 'pino';
import { TurnClient } from '../../client/turnClient.js';
import { createDataConverter } from '../../payloads/dataConverter.js';
import { S3StorageDriver } from '../../payloads/s3Storage.js';
import { S3StepTextStore } from '../../payloads/streamLog.js';
import { createPayloadCodecs } from '../../payloads/dataConverter.js';
import { loadSettings, type S3StoreSettings } from '../../settings/index.js';
import { ensureTurnKey } from '../../config/load.js';
import { bundleWorkflows, startWorker, workerBoundary, type RunningWorker } from '../../worker/index.js';
import { installRuntimeLogger } from '../../worker/runtimeLogger.js';
import { bigText } from '../fixtures/bigServer.js';
import { tempDir, temporalAddress, uniqueQueue, within } from '../support/harness.js';
import { textOf } from '../support/content.js';
import { startVersity, type Versity } from '../cluster/processes.js';
import { installClusterTools, readDotEnv } from '../../dev/clusterTools.js';

const bigServer = fileURLToPath(new URL('../fixtures/bigServer.js', import.meta.url));
const echoServer = fileURLToPath(new URL('../fixtures/echoServer.js', import.meta.url));
const BUCKET = 'dmcp-test';
const sha = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

let versity: Versity;
let logDir: string;

function storeSettings(prefix: string): S3StoreSettings {
  return { bucket: BUCKET, prefix, endpoint: versity.endpoint, region: 'us-east-1', forcePathStyle: true };
}

/** A client for the gateway with explicit credentials (the processes take them from AWS_* variables). */
function s3Client(secret = versity.secret): S3Client {
  return new S3Client({
    region: 'us-east-1',
    endpoint: versity.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: versity.access, secretAccessKey: secret },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

function driver(prefix: string, secret?: string): S3StorageDriver {
  return new S3StorageDriver({ ...storeSettings(prefix), client: s3Client(secret) });
}

/** Every object file the gateway holds under the prefix (the posix backend keeps them as files). */
async function objectFiles(prefix: string): Promise<string[]> {
  const dir = join(versity.root, BUCKET, prefix);
  try {
    return (await readdir(dir)).filter((n) => n.endsWith('.bin')).map((n) => join(dir, n));
  } catch {
    return [];
  }
}

before(async () => {
  installRuntimeLogger(pino({ level: 'warn' }), 'WARN');
  // Builds versitygw into .tools/ the first time (go install, a few minutes), so `npm test` alone passes.
  await installClusterTools(await readDotEnv(), (m) => process.stderr.write(`${m}\n`), ['versitygw']);
  const dir = await tempDir('dmcp-s3-');
  logDir = dir;
  versity = await startVersity({
    dir,
    logDir,
    access: `test-${randomBytes(4).toString('hex')}`,
    secret: randomBytes(16).toString('hex'),
    buckets: [BUCKET],
  });
});

after(async () => {
  await versity?.proc.stop();
});

describe("a model step's text log on S3", () => {
  test('records come back in order after a cursor, encrypted at rest; a log never begun is undefined', async () => {
    const codecs = createPayloadCodecs({ encryptionKey: randomBytes(32).toString('base64') });
    const store = new S3StepTextStore(driver('text/'), codecs);
    const key = { turnId: `s3-text-${randomBytes(4).toString('hex')}/turn-1`, step: 2, attempt: 1 };
    assert.equal(await store.read(key, 0), undefined);
    await store.append(key, { begin: true, at: 1 });
    await store.append(key, { text: 'secret-looking words one', at: 2 });
    const first = await store.read(key, 0);
    assert.deepEqual(first?.records, [
      { begin: true, at: 1 },
      { text: 'secret-looking words one', at: 2 },
    ]);
    await store.append(key, { text: ' and two', at: 3 });
    assert.deepEqual((await store.read(key, first!.cursor))?.records, [{ text: ' and two', at: 3 }]);
    assert.equal(await store.read({ ...key, attempt: 2 }, 0), undefined);
    // What the bucket holds is ciphertext: no record's words are readable there.
    const files = await readdir(join(versity.root, BUCKET, 'text', 'streams'), { recursive: true });
    const objects = files.filter((f) => f.endsWith('.bin'));
    assert.equal(objects.length, 3);
    for (const f of objects)
      assert.ok(!(await readFile(join(versity.root, BUCKET, 'text', 'streams', f), 'utf8')).includes('secret-looking'));
  });
});

describe('the S3 storage driver', () => {
  const payload = (text: string): Payload => ({
    metadata: { encoding: new TextEncoder().encode('json/plain') },
    data: new TextEncoder().encode(JSON.stringify(text)),
  });

  test('stores content-addressed under the prefix, and the claim holds only the digest', async () => {
    const d = driver('unit/');
    const p = payload(`hello ${randomBytes(8).toString('hex')}`);
    const [claim] = await d.store({}, [p]);
    assert.deepEqual(Object.keys(claim!.claimData), ['sha256']);
    const digest = claim!.claimData.sha256!;
    const file = join(versity.root, BUCKET, 'unit', `${digest}.bin`);
    assert.equal(sha(await readFile(file)), digest, 'the object is the encoded payload, named by its digest');
    const [back] = await d.retrieve({}, [claim!]);
    assert.deepEqual(Buffer.from(back!.data!), Buffer.from(p.data!));
    // Storing the same content again is the same object.
    const [again] = await d.store({}, [p]);
    assert.equal(again!.claimData.sha256, digest);
    assert.equal((await objectFiles('unit')).length, 1);
  });

  test('a tampered object is refused, a missing one is named', async () => {
    const d = driver('tamper/');
    const [claim] = await d.store({}, [payload('original')]);
    const digest = claim!.claimData.sha256!;
    const [file] = await objectFiles('tamper');
    await writeFile(file!, Buffer.from('something else'));
    await assert.rejects(
      d.retrieve({}, [claim!]),
      new RegExp(`external payload ${digest} in s3://${BUCKET}/tamper/${digest}\\.bin is corrupt`),
    );
    await rm(file!);
    await assert.rejects(
      d.retrieve({}, [claim!]),
      /is not in s3:\/\/dmcp-test\/tamper\/.*\(deleted by a lifecycle rule, or another bucket\/prefix\?\)/,
    );
  });

  test('a claim that is not a digest is refused before any request', async () => {
    const { StorageDriverClaim } = await import('@temporalio/common');
    await assert.rejects(
      driver('x/').retrieve({}, [new StorageDriverClaim({ sha256: '../../etc/passwd' })]),
      /bad external payload claim/,
    );
  });

  test("wrong credentials fail with the service's code, and the message holds no secret", async () => {
    const wrongSecret = `wrong-${randomBytes(8).toString('hex')}`;
    await assert.rejects(driver('creds/', wrongSecret).store({}, [payload('x')]), (err: Error) => {
      assert.match(
        err.message,
        /storing payload [0-9a-f]{64} in s3:\/\/dmcp-test\/creds\/.* failed: SignatureDoesNotMatch \(HTTP 403\)/,
      );
      assert.equal(err.message.includes(wrongSecret) || err.message.includes(versity.secret), false);
      return true;
    });
  });

  test('the settings select it: DMCP_S3_* variables and AWS credentials from the environment', async () => {
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    process.env.AWS_ACCESS_KEY_ID = versity.access;
    process.env.AWS_SECRET_ACCESS_KEY = versity.secret;
    try {
      const settings = loadSettings({
        DMCP_S3_BUCKET: BUCKET,
        DMCP_S3_PREFIX: 'settings',
        DMCP_S3_ENDPOINT: versity.endpoint,
        DMCP_S3_FORCE_PATH_STYLE: '1',
        DMCP_EXTERNAL_THRESHOLD_BYTES: '1',
      });
      const { dataConverterFor } = await import('../../payloads/dataConverter.js');
      const converter = dataConverterFor(settings);
      const s3 = converter.externalStorage!.drivers[0]!;
      assert.equal(s3.name, 'dmcp-s3');
      const [claim] = await s3.store({}, [payload('via settings')]);
      assert.equal(
        (await objectFiles('settings')).map((f) => f.endsWith(`${claim!.claimData.sha256}.bin`)).includes(true),
        true,
      );
    } finally {
      process.env.AWS_ACCESS_KEY_ID = saved.id;
      process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
      if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
      if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
    }
  });
});

describe('workers and clients in different folders share large payloads through S3', { timeout: 10 * 60_000 }, () => {
  const prefix = `turns-${randomBytes(3).toString('hex')}/`;
  const key = randomBytes(32).toString('base64');
  const bundle = bundleWorkflows();
  const stops: (() => Promise<void>)[] = [];
  let taskQueue: string;
  let turnKey: Buffer;

  /** A converter whose filesystem store is in its own folder: only S3 is shared. */
  const converterIn = (folder: string, encryptionKey = key): DataConverter =>
    createDataConverter({ payloadDir: join(folder, 'payloads'), encryptionKey, s3: driver(prefix) });

  async function workerIn(folder: string): Promise<RunningWorker> {
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DMCP_NO_USER_CONFIG: '1',
      DMCP_DATA_DIR: join(folder, '.data'),
    };
    const settings = loadSettings(env);
    const connection = await NativeConnection.connect({ address: temporalAddress() });
    const boundary = { ...(await workerBoundary(settings, 'embedded', folder)), turnKey };
    const worker = await startWorker({
      connection,
      logger: pino({ level: 'silent' }),
      env,
      settings,
      taskQueue,
      dataConverter: converterIn(folder),
      workflowBundle: await bundle,
      boundary,
    });
    stops.push(async () => {
      await worker.shutdown();
      await connection.close();
    });
    return worker;
  }

  async function clientIn(folder: string, dataConverter = converterIn(folder)): Promise<TurnClient> {
    const client = await TurnClient.connect({
      address: temporalAddress(),
      taskQueue,
      dataConverter,
      dataDir: join(folder, '.data'),
      turnKey,
    });
    stops.push(() => client.close());
    return client;
  }

  before(async () => {
    taskQueue = uniqueQueue('s3');
    turnKey = await ensureTurnKey(await tempDir());
  });
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });

  test('a client writes big arguments a worker reads; the worker writes big results a client in a third folder reads', async () => {
    const [workerDir, clientDir, readerDir, otherWorkerDir] = await Promise.all([
      tempDir(),
      tempDir(),
      tempDir(),
      tempDir(),
    ]);
    const worker = await workerIn(workerDir);
    const client = await clientIn(clientDir);
    const sessionId = `s3-${randomBytes(4).toString('hex')}`;
    const marker = `MARKER-${randomBytes(8).toString('hex')}`;
    const bigArg = `${marker} ${'x'.repeat(40_000)}`;
    const result = await within(
      60_000,
      'turn 1',
      client.runBatch({
        sessionId,
        workspace: clientDir,
        servers: { inlineSpecs: [`e:${process.execPath} ${echoServer}`, `big:${process.execPath} ${bigServer}`] },
        calls: [
          [{ id: 'echo', name: 'mcp__e__echo', arguments: { text: bigArg } }],
          [{ id: 'txt', name: 'mcp__big__text', arguments: { bytes: 200_000, seed: marker } }],
        ],
      }),
    );
    const [echo, txt] = result.calls;
    assert.equal(echo?.outcome.status, 'ok', JSON.stringify(echo?.outcome));
    assert.equal(textOf(echo.outcome.content[0]), bigArg, 'the worker read the arguments the client stored');
    assert.equal(txt?.outcome.status, 'ok', JSON.stringify(txt?.outcome));
    assert.equal(
      textOf(txt.outcome.content[0]),
      bigText(200_000, marker),
      'the client read the result the worker stored',
    );

    // Nothing large landed in either folder's filesystem store: S3 is the one store.
    for (const dir of [workerDir, clientDir])
      assert.deepEqual(await readdir(join(dir, 'payloads')).catch(() => []), []);
    const objects = await objectFiles(prefix);
    assert.ok(objects.length >= 2, `objects in S3: ${objects.length}`);
    // Encrypted before upload: no object holds the marker, in plain or compressed form a reader could grep.
    for (const f of objects) assert.equal((await readFile(f)).includes(marker), false, `${f} holds plaintext`);

    // A client in a third folder renders the turn from history (references resolved through S3).
    const reader = await clientIn(readerDir);
    const t = await reader.transcript(`${sessionId}/turn-1`);
    assert.equal(t.calls.length, 2);
    assert.equal(textOf(t.calls[1]!.outcome!.content[0]), bigText(200_000, marker));

    // A second worker in its own folder takes the session's next turn and reads turn 1's payloads.
    await worker.shutdown();
    await workerIn(otherWorkerDir);
    const turn2 = await within(
      60_000,
      'turn 2',
      client.runBatch({
        sessionId,
        turn: 2,
        workspace: clientDir,
        servers: { inlineSpecs: [`e:${process.execPath} ${echoServer}`] },
        calls: [[{ id: 'echo2', name: 'mcp__e__echo', arguments: { text: bigArg } }]],
      }),
    );
    assert.equal(textOf(turn2.calls[0]!.outcome.content[0]), bigArg);
  });

  test('a client without the key cannot read what was stored (the store holds ciphertext)', async () => {
    const folder = await tempDir();
    const [file] = await objectFiles(prefix);
    assert.ok(file, 'the previous test stored objects');
    const digest = file.split('/').pop()!.replace('.bin', '');
    const converter = converterIn(folder, randomBytes(32).toString('base64'));
    const { StorageDriverClaim } = await import('@temporalio/common');
    const [stored] = await converter.externalStorage!.drivers[0]!.retrieve({}, [
      new StorageDriverClaim({ sha256: digest }),
    ]);
    const codecs = converter.payloadCodecs!;
    await assert.rejects(
      codecs.reduceRight(async (acc, c) => c.decode(await acc), Promise.resolve([stored!])),
      /encrypted with key [0-9a-f]{12}, which this process does not have/,
    );
  });
});
