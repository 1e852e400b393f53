/**
 * Noticing that a server is gone while requests wait for it. A stdio server's exit closes the
 * client by itself; a Streamable HTTP or SSE server can vanish without the SDK noticing, so those
 * are pinged while a request is waiting.
 */
import type { Client, RequestOptions } from '@modelcontextprotocol/client';
import { unansweredPingsText } from './failureText.js';
import { classifyPingFailure, describeRemoteError, type WireTracker } from './httpTransport.js';

/**
 * A cheap request that shows the server is there. The 2026-07-28 era has no `ping` (the client
 * refuses it locally), so a modern server is asked `server/discover`, which it answers from what it
 * already knows; a legacy server is pinged.
 */
export function livenessRequest(client: Client, options: RequestOptions): Promise<unknown> {
  return client.getProtocolEra() === 'modern' ? client.discover(options) : client.ping(options);
}

/**
 * Consecutive unanswered pings after which a remote server counts as gone: one slow answer may
 * be a busy server, three in a row are not.
 */
export const MAX_SLOW_PINGS = 3;
export const DEFAULT_PING_INTERVAL_MS = 1000;
export const DEFAULT_PING_TIMEOUT_MS = 2500;

/**
 * The requests waiting for one server. When the server is known to be gone they all fail at
 * once, instead of each waiting out its own timeout.
 */
export class PendingRequests {
  private readonly waiting = new Set<(err: Error) => void>();

  constructor(
    private readonly hooks: {
      /** A request started (the watchdog starts, if it is not running). */
      onRequest: () => void;
      /** No request is waiting any more (the watchdog stops). */
      onNone: () => void;
    },
  ) {}

  get size(): number {
    return this.waiting.size;
  }

  /**
   * Runs one request so that {@link failAll} ends it at once. The SDK turns an abort reason into
   * a timeout error, so the request is aborted (to free its handlers) after our own error has
   * already won the race.
   */
  run<T>(request: (signal: AbortSignal) => Promise<T>, outer?: AbortSignal): Promise<T> {
    const controller = new AbortController();
    const forward = () => controller.abort(outer?.reason);
    if (outer?.aborted) forward();
    else outer?.addEventListener('abort', forward, { once: true });
    return new Promise<T>((resolve, reject) => {
      const fail = (err: Error) => {
        reject(err);
        controller.abort(err);
      };
      this.waiting.add(fail);
      this.hooks.onRequest();
      request(controller.signal)
        .then(resolve, reject)
        .finally(() => {
          this.waiting.delete(fail);
          outer?.removeEventListener('abort', forward);
          if (this.waiting.size === 0) this.hooks.onNone();
        });
    });
  }

  /** Fails every waiting request with `err`. */
  failAll(err: Error): void {
    const all = [...this.waiting];
    this.waiting.clear();
    for (const fail of all) fail(err);
  }
}

export interface RemoteWatchdogOptions {
  /** The client to ping while its server is ready; undefined otherwise (nothing to watch). */
  readyClient: () => Client | undefined;
  /** What the server's HTTP requests last met, to say why it is lost. */
  wire: WireTracker;
  intervalMs?: number;
  /** A ping unanswered for this long is a strike. */
  timeoutMs?: number;
  /** The server is gone; `cause` is unscrubbed. */
  onLost: (cause: string) => void;
}

/** Pings a remote server while requests wait for it; a connection-level failure or three strikes mean lost. */
export class RemoteWatchdog {
  private timer?: NodeJS.Timeout;
  private checking = false;
  private slowPings = 0;

  constructor(private readonly options: RemoteWatchdogOptions) {}

  start(): void {
    if (this.timer || !this.options.readyClient()) return;
    this.timer = setInterval(() => void this.check(), this.options.intervalMs ?? DEFAULT_PING_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.slowPings = 0;
  }

  /**
   * One ping now. Also used when the SDK reports a transport error: it reports a broken SSE
   * stream or a failed POST only to `onerror` while the request keeps waiting, and a ping tells
   * a dropped stream from a dead server.
   */
  async check(): Promise<void> {
    const client = this.options.readyClient();
    if (this.checking || !client) return;
    this.checking = true;
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_PING_TIMEOUT_MS;
    try {
      await livenessRequest(client, { timeout: timeoutMs });
      this.slowPings = 0;
    } catch (err) {
      // The server stopped or was replaced while we pinged: not ours to judge any more.
      if (client !== this.options.readyClient()) return;
      const verdict = classifyPingFailure(err);
      if (verdict === 'alive') {
        this.slowPings = 0;
      } else if (verdict === 'lost') {
        this.options.onLost(describeRemoteError(err, this.options.wire.last));
      } else if (++this.slowPings >= MAX_SLOW_PINGS) {
        this.options.onLost(unansweredPingsText(MAX_SLOW_PINGS, timeoutMs));
      }
    } finally {
      this.checking = false;
    }
  }
}
