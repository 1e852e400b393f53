import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { ExternalStorage, Payload, PayloadCodec } from '@temporalio/common';
import { decodePayload } from './decodePayload.js';

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
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/** Options of {@link startCodecServer}. */
export interface CodecServerOptions {
  codecs: PayloadCodec[];
  /** When given, `/decode` also fetches externally stored payloads, so the UI shows the content. */
  externalStorage?: ExternalStorage;
  /** 0 picks a free port. Always bound to 127.0.0.1. */
  port?: number;
  /** Origins allowed by CORS (the Temporal UI's address); default: any loopback origin. */
  allowedOrigins?: string[];
  /** Largest request body accepted. */
  maxBodyBytes?: number;
}

export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

const LOOPBACK_ORIGIN = /^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/;

/**
 * The codec server: `/encode` and `/decode` in the Temporal remote-codec format, so
 * the UI and `temporal workflow show --codec-endpoint` show decoded payloads.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024;
  const originAllowed = (origin: string) => (options.allowedOrigins ? options.allowedOrigins.includes(origin) : LOOPBACK_ORIGIN.test(origin));

  const decodeOne = (payload: Payload) =>
    decodePayload(payload, { codecs: options.codecs, externalStorage: options.externalStorage, missingDriver: 'keep' });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    if (origin && originAllowed(origin)) {
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
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'POST /encode or /decode' }));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > maxBody) {
        res.writeHead(413).end();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    let body: { payloads?: JsonPayload[] };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { payloads?: JsonPayload[] };
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'body must be JSON { payloads: [...] }' }));
      return;
    }
    const payloads = (body.payloads ?? []).map(toPayload);
    const out = path === '/decode' ? await Promise.all(payloads.map(decodeOne)) : await options.codecs.reduce(async (acc, codec) => codec.encode(await acc), Promise.resolve(payloads));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ payloads: out.map(toJson) }));
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // The message says which key or claim was missing; it never holds payload contents.
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: (err as Error).message }));
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
