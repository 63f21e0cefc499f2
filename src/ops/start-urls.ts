import { isIP } from 'node:net';

/** Addresses that mean "every address of this machine": a browser cannot open them as such. */
const WILDCARD: Readonly<Record<string, string>> = { '0.0.0.0': '127.0.0.1', '::': '::1' };

/**
 * The start-up line that says which pages to open, from the address the server really listens on
 * (a port 0 is the port picked). On a wildcard address the pages are given at loopback, where this
 * machine reaches them, and the line says other machines use its name or address instead.
 */
export function startUrls(address: string, port: number): { msg: string; admin: string; docs: string } {
  const reachable = WILDCARD[address] ?? address;
  const host = isIP(reachable) === 6 ? `[${reachable}]` : reachable;
  const origin = `http://${host}:${port}`;
  const admin = `${origin}/admin`;
  const docs = `${origin}/docs`;
  const everywhere =
    WILDCARD[address] === undefined
      ? ''
      : `; listening on every address (${address}): from another machine, use this machine's name or address in place of ${host}`;
  return {
    msg: `open ${admin} (the admin page) or ${docs} (the API docs); ${origin}/ links to both${everywhere}`,
    admin,
    docs,
  };
}
