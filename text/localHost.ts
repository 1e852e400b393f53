/**
 * Whether a request's `Host` and `Origin` headers name this machine, for the HTTP servers that
 * answer loopback clients (the codec server, the API). A web page can reach 127.0.0.1 through the
 * browser of whoever runs them, by a name of its own that it rebinds to 127.0.0.1: the `Host` then
 * carries that name, and the `Origin` the page's site. Pure.
 */

const LOOPBACK_HOST = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])(:\d{1,5})?$/i;
const LOOPBACK_ORIGIN = /^https?:\/\/(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])(:\d{1,5})?$/i;

/** `Host` names a loopback address or `localhost` (with or without a port). */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOST.test(host);
}

/** `Origin` is a page served from a loopback address or `localhost`. */
export function isLoopbackOrigin(origin: string): boolean {
  return LOOPBACK_ORIGIN.test(origin);
}

/**
 * A loopback `Host`, or one of `allowed` (each with or without a port; a name without a port allows
 * every port). Case-insensitive, as host names are.
 */
export function hostAllowed(host: string | undefined, allowed: readonly string[] = []): boolean {
  if (!host) return false;
  if (isLoopbackHost(host)) return true;
  const h = host.toLowerCase();
  const bare = h.replace(/:\d+$/, '');
  return allowed.some((a) => a.toLowerCase() === h || a.toLowerCase() === bare);
}

/** A loopback `Origin`, or one of `allowed` exactly (scheme, host and port, as browsers send it). */
export function originAllowed(origin: string, allowed: readonly string[] = []): boolean {
  return isLoopbackOrigin(origin) || allowed.includes(origin);
}
