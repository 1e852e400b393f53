import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { ExternalStorage, Payload, PayloadCodec } from '@temporalio/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { MAX_DECOMPRESSED_BYTES, PayloadTooLargeError } from './dataConverter.js';
import { decodePayload } from './decodePayload.js';
import { hostAllowed, originAllowed } from '../text/localHost.js';

/** A payload as the Temporal UI and CLI send it: base64 metadata values and data. */
interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const toPayload = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/** Options of {@link startCodecServer}. */
export interface CodecServerOptions {
  codecs: PayloadCodec[];
  /** When given, `/decode` also fetches externally stored payloads, so the UI shows the content. */
  externalStorage?: ExternalStorage;
  /** 0 picks a free port. Always bound to 127.0.0.1. */
  port?: number;
  /** Web origins allowed besides loopback ones (the Temporal UI's address when it is not on loopback). */
  allowedOrigins?: string[];
  /** Host names (with or without port) accepted in `Host` besides loopback names and addresses. */
  allowedHosts?: string[];
  /** Largest request body accepted (default 16 MiB). */
  maxBodyBytes?: number;
  /** Most bytes one `/decode` request may produce in total (default {@link MAX_DECOMPRESSED_BYTES}). */
  maxDecodedBytes?: number;
  /** DMCP_CODEC_TOKEN: when set, every request must carry `Authorization: Bearer <token>`. */
  token?: string;
}

export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Largest request by default. The UI sends one page of a history's payloads, each at most the
 * external-storage threshold (larger ones are references), so 16 MiB is far above what it needs.
 */
const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Compares two secrets in time independent of where they differ. */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** One at a time, counting what comes out: many small bombs in one request are still refused. */
async function decodeAll(payloads: Payload[], options: CodecServerOptions): Promise<Payload[]> {
  const maxDecoded = options.maxDecodedBytes ?? MAX_DECOMPRESSED_BYTES;
  const out: Payload[] = [];
  let total = 0;
  for (const payload of payloads) {
    const decoded = await decodePayload(payload, {
      codecs: options.codecs,
      externalStorage: options.externalStorage,
      missingDriver: 'keep',
    });
    total += decoded.data?.byteLength ?? 0;
    if (total > maxDecoded)
      throw new HttpRefusal(413, `decoded payloads are larger than ${maxDecoded} bytes in total: refused`);
    out.push(decoded);
  }
  return out;
}

function refuseUnlessAllowed(req: IncomingMessage, options: CodecServerOptions): void {
  const host = req.headers.host;
  if (!hostAllowed(host, options.allowedHosts))
    throw new HttpRefusal(403, 'host not allowed: use 127.0.0.1 or localhost');
  const origin = req.headers.origin;
  if (origin !== undefined && !originAllowed(origin, options.allowedOrigins))
    throw new HttpRefusal(403, 'origin not allowed');
}

/** The payloads of a JSON request body, refused when it is not JSON or is larger than `maxBody`. */
async function readPayloads(req: IncomingMessage, maxBody: number): Promise<Payload[]> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw new HttpRefusal(415, 'Content-Type must be application/json');
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBody) throw new HttpRefusal(413, `request body is larger than ${maxBody} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBody) throw new HttpRefusal(413, `request body is larger than ${maxBody} bytes`);
    chunks.push(chunk as Buffer);
  }
  let body: { payloads?: JsonPayload[] };
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { payloads?: JsonPayload[] };
  } catch {
    throw new HttpRefusal(400, 'body must be JSON { payloads: [...] }');
  }
  if (!Array.isArray(body?.payloads ?? [])) throw new HttpRefusal(400, 'body must be JSON { payloads: [...] }');
  return (body.payloads ?? []).map(toPayload);
}

async function handle(req: IncomingMessage, res: ServerResponse, options: CodecServerOptions): Promise<void> {
  refuseUnlessAllowed(req, options);
  const origin = req.headers.origin;
  if (origin) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
    res.setHeader('Vary', 'Origin');
  }
  if (req.method === 'OPTIONS') {
    res.writeHead(204).end();
    return;
  }
  const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
  if (req.method !== 'POST' || (path !== '/encode' && path !== '/decode')) {
    throw new HttpRefusal(404, 'POST /encode or /decode');
  }
  if (options.token !== undefined) {
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
    if (!bearer?.[1] || !sameSecret(bearer[1].trim(), options.token))
      throw new HttpRefusal(401, 'a bearer token is required (DMCP_CODEC_TOKEN)');
  }
  const payloads = await readPayloads(req, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  const out =
    path === '/decode'
      ? await decodeAll(payloads, options)
      : await options.codecs.reduce(async (acc, codec) => codec.encode(await acc), Promise.resolve(payloads));
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ payloads: out.map(toJson) }));
}

/**
 * The codec server: `/encode` and `/decode` in the Temporal remote-codec format, so
 * the UI and `temporal workflow show --codec-endpoint` show decoded payloads.
 *
 * It runs in the worker's process and decodes everything the worker can: only loopback clients
 * that name it by a loopback host (a DNS-rebound name is refused), only loopback or configured web
 * origins, only JSON (a cross-site form or `text/plain` POST needs no preflight, so CORS alone does
 * not stop it), bounded request and decoded sizes, and the token when one is set.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const server: Server = createServer((req, res) => {
    handle(req, res, options).catch((err: unknown) => {
      const status = err instanceof HttpRefusal ? err.status : err instanceof PayloadTooLargeError ? 413 : 500;
      // The message says which key or claim was missing, or which limit; it never holds payload contents.
      if (!res.headersSent) {
        // A refused body is not read on: close the connection rather than drain it.
        res.writeHead(status, {
          'content-type': 'application/json',
          ...(status === 413 ? { connection: 'close' } : {}),
        });
      }
      res.end(JSON.stringify({ error: (err as Error).message }));
      if (status === 413) req.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
