import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { ServerEntry } from '../config/types.js';
import type { EraVerdicts } from './era.js';
import { ManagedServer } from './managedServer.js';
import type { ServerPoolOptions } from './pool.js';
import type { Session } from './poolSession.js';
import { rootsOf } from './roots.js';
import { StdioSandbox } from './sandbox.js';

/** What durable-mcp tells servers it is (`clientInfo.version`): the package's own version. */
const PACKAGE_VERSION = (createRequire(import.meta.url)('durable-mcp/package.json') as { version: string }).version;

/**
 * Builds the pool's servers: each with its environment, headers and login, in a sandbox when its
 * layer is untrusted, offered the roots its session (or its sandbox) allows.
 */
export class ServerFactory {
  private readonly sandbox: StdioSandbox;
  /** The session each server works for: a warm spare gets one when it is handed over. */
  private readonly owners = new WeakMap<ManagedServer, Session>();
  /** Servers started in a sandbox, with the folder it lets them write. */
  private readonly sandboxed = new WeakMap<ManagedServer, { writable?: string }>();
  /** What each stdio config's era probe found, so its restarts and new sessions skip the probe. */
  private readonly eraVerdicts: EraVerdicts = new Map();

  constructor(
    private readonly options: ServerPoolOptions,
    private readonly scrub: (text: string) => string,
  ) {
    this.sandbox = new StdioSandbox(options.untrustedStdio ?? { mode: 'sandbox', hiddenPaths: [] });
  }

  /** A warm spare now works for `session`. */
  handOver(spare: ManagedServer, session: Session): void {
    this.owners.set(spare, session);
  }

  /** Whether a sandboxed server's writable folder is not the session's workspace any more. */
  boundElsewhere(server: ManagedServer, session: Session): boolean {
    const bound = this.sandboxed.get(server);
    return bound !== undefined && session.workspace !== undefined && bound.writable !== resolve(session.workspace);
  }

  /** A new server of `entry` for `session` (none: a warm spare, which gets one when handed over). */
  create(entry: ServerEntry, session?: Session): ManagedServer {
    // A sandboxed server keeps the root of the folder its sandbox lets it write, for its whole life:
    // offering another would promise what the sandbox does not allow (it is started anew for
    // another workspace instead, see boundElsewhere). Others follow the session.
    let sandboxRoot: { root?: string } | undefined;
    const { options } = this;
    const observer = options.observer;
    const server: ManagedServer = new ManagedServer(entry, {
      logger: options.logger,
      environment: () => options.environmentFor(entry),
      stdioCommand: async (e, environment) => {
        const launch = await this.sandbox.launch(e, environment, session?.workspace);
        if (launch.sandbox) {
          sandboxRoot =
            launch.sandbox.writable !== undefined && session?.root !== undefined ? { root: session.root } : {};
          this.sandboxed.set(server, launch.sandbox);
        }
        return launch;
      },
      // `"roots": false`: no roots capability at all, so the server keeps its own directories.
      ...(entry.roots === false
        ? {}
        : { roots: () => rootsOf(sandboxRoot ? sandboxRoot.root : this.owners.get(server)?.root) }),
      ...(observer?.serverStarted
        ? { onStart: (result: 'ready' | 'failed', ms: number) => observer.serverStarted!(entry.name, result, ms) }
        : {}),
      ...(options.requestHeadersFor ? { requestHeaders: () => options.requestHeadersFor!(entry) } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      ...(options.connect ? { connect: options.connect } : {}),
      scrub: this.scrub,
      startTimeoutMs: options.startTimeoutMs,
      clientVersion: options.clientVersion ?? PACKAGE_VERSION,
      eraVerdicts: this.eraVerdicts,
    });
    if (session) this.owners.set(server, session);
    return server;
  }
}
