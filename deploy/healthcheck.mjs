/* global process, fetch, AbortSignal */
// The image's health check (plain Node, no dependencies). A worker is healthy while its metrics
// endpoint answers (DMCP_METRICS_PORT) or, without one, while the Temporal frontend it was told
// to use accepts connections; the API while its /readyz says it reaches Temporal; the codec service while
// its port accepts connections. Exit 0 healthy, 1 not.
import { connect } from 'node:net';

const argv = process.argv[2] ?? '';
const tcp = (host, port) =>
  new Promise((resolve) => {
    const s = connect({ host, port: Number(port), timeout: 3000 });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
const http = async (url, ok = (status) => status < 500) => {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
    return ok(res.status);
  } catch {
    return false;
  }
};

async function healthy() {
  const e = process.env;
  // The API is ready when it reaches Temporal (/readyz answers 200, 503 otherwise).
  if (argv === 'api' && e.DMCP_API_PORT)
    return http(`http://127.0.0.1:${e.DMCP_API_PORT}/readyz`, (status) => status === 200);
  if (e.DMCP_METRICS_PORT) return http(`http://127.0.0.1:${e.DMCP_METRICS_PORT}/metrics`);
  if (argv === 'codec') return tcp('127.0.0.1', e.DMCP_CODEC_PORT ?? 8234);
  const address = e.TEMPORAL_ADDRESS ?? '';
  const at = address.lastIndexOf(':');
  if (at < 0) return true;
  return tcp(address.slice(0, at), address.slice(at + 1));
}

process.exit((await healthy()) ? 0 : 1);
