/**
 * Whether two strings name the same server address: compared without a fragment or trailing
 * slashes (and with the URL's own normalisation: case of scheme and host, default port).
 */
export function sameServerUrl(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      const url = new URL(u);
      url.hash = '';
      return url.href.replace(/\/+$/, '');
    } catch {
      return u.trim().replace(/\/+$/, '');
    }
  };
  return norm(a) === norm(b);
}
