/**
 * A model turn's conversation, kept out of history: each step stores one node (the messages it
 * added and its parent) in the payload store, through the same codecs (compression, encryption) and
 * driver (data dir or S3) as large payloads. History and the store then grow by one node per step,
 * and a step's input names the conversation by its head.
 */
import { join } from 'node:path';
import { StorageDriverClaim, type Payload, type PayloadCodec, type StorageDriver } from '@temporalio/common';
import type { ModelMessage } from 'ai';
import type { ModelTool } from '../contract/index.js';
import { createPayloadCodecs, FilesystemStorageDriver } from '../payloads/dataConverter.js';
import { S3StorageDriver } from '../payloads/s3Storage.js';
import type { Settings } from '../settings/index.js';

/** Messages one step added to a session's conversation. */
export interface MessagesNode {
  kind: 'messages';
  sessionId: string;
  parent?: string;
  messages: ModelMessage[];
}

/** What a turn's model is told and offered, stored once per turn. */
export interface ContextNode {
  kind: 'context';
  sessionId: string;
  system: string;
  tools: ModelTool[];
}

export type ConversationNode = MessagesNode | ContextNode;

/** Nodes kept decoded in memory: a node never changes, and a turn's next step reads the same chain. */
const CACHED_NODES = 20_000;
const DIGEST = /^[0-9a-f]{64}$/;
const JSON_ENCODING = new TextEncoder().encode('json/plain');

export class ConversationStore {
  private readonly cache = new Map<string, ConversationNode>();

  constructor(
    private readonly driver: StorageDriver,
    private readonly codecs: PayloadCodec[],
  ) {}

  /** Stores `node`; returns its reference. */
  async put(node: ConversationNode): Promise<string> {
    let payloads: Payload[] = [
      { metadata: { encoding: JSON_ENCODING }, data: new TextEncoder().encode(JSON.stringify(node)) },
    ];
    for (const codec of this.codecs) payloads = await codec.encode(payloads);
    const [claim] = await this.driver.store({} as never, payloads);
    const digest = claim!.claimData.sha256!;
    this.remember(digest, node);
    return digest;
  }

  /** The node at `ref`, which must belong to `sessionId`: a turn reads only its own session's conversation. */
  async get(ref: string, sessionId: string): Promise<ConversationNode> {
    if (!DIGEST.test(ref))
      throw new ConversationError(`${JSON.stringify(ref.slice(0, 80))} is not a conversation reference`);
    let node = this.cache.get(ref);
    if (node === undefined) {
      let payloads = await this.driver.retrieve({} as never, [new StorageDriverClaim({ sha256: ref })]);
      for (const codec of [...this.codecs].reverse()) payloads = await codec.decode(payloads);
      node = JSON.parse(new TextDecoder().decode(payloads[0]!.data!)) as ConversationNode;
      this.remember(ref, node);
    }
    if (node.sessionId !== sessionId) {
      throw new ConversationError(
        `conversation ${ref.slice(0, 12)} belongs to another session; a turn continues only its own session's conversation`,
      );
    }
    return node;
  }

  /** Every message of the conversation ending at `head`, oldest first. */
  async messages(head: string | undefined, sessionId: string): Promise<ModelMessage[]> {
    const chunks: ModelMessage[][] = [];
    for (let ref = head; ref !== undefined; ) {
      const node = await this.get(ref, sessionId);
      if (node.kind !== 'messages') throw new ConversationError(`${ref.slice(0, 12)} is not a conversation`);
      chunks.push(node.messages);
      ref = node.parent;
    }
    return chunks.reverse().flat();
  }

  private remember(ref: string, node: ConversationNode): void {
    if (this.cache.size >= CACHED_NODES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(ref, node);
  }
}

/** A conversation reference that cannot be used: the turn's input is wrong, retrying will not help. */
export class ConversationError extends Error {}

/** The store the settings name: the payload store every worker and client of the deployment share. */
export function conversationStoreFor(settings: Pick<Settings, 'dataDir' | 'payloads'>): ConversationStore {
  const { payloads } = settings;
  const driver = payloads.s3
    ? new S3StorageDriver(payloads.s3)
    : new FilesystemStorageDriver(join(settings.dataDir, 'payloads'));
  return new ConversationStore(driver, createPayloadCodecs(payloads));
}
