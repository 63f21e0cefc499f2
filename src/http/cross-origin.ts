/** Methods that change nothing; a browser may send them from any page. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses a change sent by a browser from a page of another site (a form that posts here, or a
 * fetch with a "simple" body type, which browsers send without asking first) unless that site's
 * origin is in CORS_ORIGINS. Browsers mark such requests with `Origin` and `Sec-Fetch-Site`;
 * requests from other programs carry neither and pass.
 */
export function crossSiteWriteCheck(corsOrigins: readonly string[]) {
  const any = corsOrigins.includes('*');
  const listed = new Set(corsOrigins);
  /** The refused origin (or `a page of another site`), or undefined when the request may go on. */
  return (
    method: string,
    headers: { origin?: string; host?: string; 'sec-fetch-site'?: string },
  ): string | undefined => {
    if (SAFE_METHODS.has(method) || any) return undefined;
    const { origin } = headers;
    const site = headers['sec-fetch-site'];
    if (origin === undefined)
      return site === 'cross-site' || site === 'same-site' ? 'a page of another site' : undefined;
    if (listed.has(origin)) return undefined;
    const host = headers.host?.toLowerCase();
    const scheme = origin.indexOf('://');
    if (host !== undefined && scheme !== -1 && origin.slice(scheme + 3).toLowerCase() === host) return undefined;
    return origin;
  };
}
