/**
 * The shortcuts of the data converter for payloads it leaves as they are (payloads/storageFastPath.ts
 * and the compression codec): through the SDK's own payload-store pass, small payloads come back
 * untouched without a driver call, and big ones and references still reach the driver, as before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ExternalStorage,
  StorageDriverClaim,
  defaultPayloadConverter,
  type Payload,
  type StorageDriver,
} from '@temporalio/common';
import {
  ExternalStorageRunner,
  extstoreInboundOptions,
  extstoreStoreOptions,
  visit,
  walkWorkflowActivationCompletion,
} from '@temporalio/common/lib/internal-non-workflow/index.js';
import proto from '@temporalio/proto';
import { CompressionCodec, MIN_COMPRESS_BYTES, createDataConverter } from '../../payloads/dataConverter.js';
import { installStorageFastPath } from '../../payloads/storageFastPath.js';

const THRESHOLD = 4096;
const Completion = proto.coresdk.workflow_completion.WorkflowActivationCompletion;

/** An in-memory driver that counts its calls. */
function memoryDriver(): StorageDriver & { stores: number; retrieves: number } {
  const kept = new Map<string, Payload>();
  return {
    name: 'memory',
    type: 'test.memory',
    stores: 0,
    retrieves: 0,
    async store(_ctx, payloads) {
      this.stores += 1;
      return payloads.map((p, i) => {
        const key = `k${kept.size}-${i}`;
        kept.set(key, p);
        return new StorageDriverClaim({ key });
      });
    },
    async retrieve(_ctx, claims) {
      this.retrieves += 1;
      return claims.map((c) => kept.get(c.claimData.key!)!);
    },
  };
}

/** A completion with a call's small input and, when asked, a result big enough to be stored. */
function completion(bigResult: boolean) {
  const p = (v: unknown) => defaultPayloadConverter.toPayload(v);
  return Completion.fromObject({
    runId: 'r',
    successful: {
      commands: [
        { updateResponse: { protocolInstanceId: 'c1', completed: p({ text: bigResult ? 'x'.repeat(10_000) : 'ok' }) } },
        {
          scheduleLocalActivity: { seq: 1, activityId: '1', activityType: 'callToolLocal', arguments: [p({ a: 1 })] },
          userMetadata: { summary: p('mcp__safe__echo') },
        },
      ],
    },
  });
}

test('creating the data converter gives the SDK runner its shortcut, once', () => {
  createDataConverter({ payloadDir: '/nonexistent' });
  const { store, retrieve } = ExternalStorageRunner.prototype;
  assert.ok(store.toString().includes('encodedSizeAtMost'), 'store has the shortcut');
  installStorageFastPath();
  assert.equal(ExternalStorageRunner.prototype.store, store, 'a second install changes nothing');
  assert.equal(ExternalStorageRunner.prototype.retrieve, retrieve);
});

test('small payloads pass the store and retrieve passes without a driver call; a big one is stored and read back', async () => {
  installStorageFastPath();
  const driver = memoryDriver();
  const storage = new ExternalStorage({ drivers: [driver], payloadSizeThreshold: THRESHOLD });

  const small = completion(false);
  const before = Completion.toObject(small);
  // What the shortcut saves: the runner's batch signal (AbortSignal.any) for each payload field.
  const any = AbortSignal.any.bind(AbortSignal);
  let batches = 0;
  AbortSignal.any = (signals) => ((batches += 1), any(signals));
  try {
    await visit(small, walkWorkflowActivationCompletion, extstoreStoreOptions(storage));
    await visit(small, walkWorkflowActivationCompletion, extstoreInboundOptions(storage));
  } finally {
    AbortSignal.any = any;
  }
  assert.deepEqual(Completion.toObject(small), before, 'small payloads are left exactly as they were');
  assert.deepEqual([driver.stores, driver.retrieves, batches], [0, 0, 0]);

  const big = completion(true);
  const original = Completion.toObject(completion(true));
  await visit(big, walkWorkflowActivationCompletion, extstoreStoreOptions(storage));
  assert.equal(driver.stores, 1, 'the big result went to the driver');
  const stored = big.successful!.commands![0]!.updateResponse!.completed!;
  assert.ok(stored.externalPayloads?.length, 'and history holds a reference');
  await visit(big, walkWorkflowActivationCompletion, extstoreInboundOptions(storage));
  assert.equal(driver.retrieves, 1);
  assert.deepEqual(Completion.toObject(big), original, 'read back as it was written');
});

test('a threshold of 0 stores every payload, as the SDK does', async () => {
  installStorageFastPath();
  const driver = memoryDriver();
  const storage = new ExternalStorage({ drivers: [driver], payloadSizeThreshold: 0 });
  const c = completion(false);
  await visit(c, walkWorkflowActivationCompletion, extstoreStoreOptions(storage));
  assert.ok(driver.stores >= 1);
  assert.ok(c.successful!.commands![0]!.updateResponse!.completed!.externalPayloads?.length);
});

test('the compression codec returns small payloads as they are and decodes a mix of compressed and plain ones', async () => {
  const codec = new CompressionCodec();
  const small = [defaultPayloadConverter.toPayload({ a: 1 }), defaultPayloadConverter.toPayload('two')];
  assert.equal(await codec.encode(small), small, 'nothing to compress: the same array');
  assert.equal(await codec.decode(small), small, 'nothing compressed: the same array');
  const bigValue = { text: 'y'.repeat(4 * MIN_COMPRESS_BYTES) };
  const mixed = await codec.encode([small[0]!, defaultPayloadConverter.toPayload(bigValue)]);
  assert.equal(mixed[0], small[0], 'the small one is untouched');
  assert.equal(new TextDecoder().decode(mixed[1]!.metadata!.encoding!), 'binary/dmcp-brotli');
  const decoded = await codec.decode(mixed);
  assert.equal(decoded[0], small[0]);
  assert.deepEqual(defaultPayloadConverter.fromPayload(decoded[1]!), bigValue);
});
