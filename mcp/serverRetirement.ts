import type { Logger } from 'pino';
import type { ManagedServer } from './managedServer.js';

/**
 * The calls in flight on each server, and the servers a config change or a session's end replaced
 * meanwhile: removing an entry does not cancel a call, so such a server stops once its last call ends.
 */
export class ServerRetirement {
  private readonly callsInFlight = new Map<ManagedServer, number>();
  private readonly retiring = new Set<ManagedServer>();

  constructor(private readonly logger: Logger) {}

  callStarted(server: ManagedServer): void {
    this.callsInFlight.set(server, (this.callsInFlight.get(server) ?? 0) + 1);
  }

  /** Counts the call as ended; stops a retiring server whose last call it was. */
  callEnded(server: ManagedServer): void {
    const left = (this.callsInFlight.get(server) ?? 1) - 1;
    if (left > 0) {
      this.callsInFlight.set(server, left);
      return;
    }
    this.callsInFlight.delete(server);
    if (this.retiring.delete(server)) {
      server.stop().catch((err: unknown) => this.logger.warn({ err }, 'stopping a replaced server failed'));
    }
  }

  /** Stops a server now, or after its in-flight calls. */
  async retire(server: ManagedServer): Promise<void> {
    if ((this.callsInFlight.get(server) ?? 0) > 0) {
      this.retiring.add(server);
      return;
    }
    await server.stop();
  }

  /** The servers waiting for their calls to end. */
  get waiting(): ManagedServer[] {
    return [...this.retiring];
  }

  /** Takes every waiting server out, to be stopped now (worker shutdown). */
  takeAll(): ManagedServer[] {
    const all = [...this.retiring];
    this.retiring.clear();
    return all;
  }
}
