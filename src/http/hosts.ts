import { networkInterfaces, hostname } from 'node:os';
import { isIP } from 'node:net';

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];
const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The `Host` names the service answers to: ALLOWED_HOSTS, or by default the loopback names and the
 * address it listens on (for a wildcard address, every address of this machine and its host name).
 * A page on another site that points its own name at this address (DNS rebinding) sends its own
 * name as Host, and is refused. `*` allows any.
 */
export function allowedHosts(configured: readonly string[], listenHost: string): ReadonlySet<string> | undefined {
  if (configured.includes('*')) return undefined;
  if (configured.length > 0) return new Set(configured);
  const hosts = new Set(LOOPBACK);
  const bracket = (address: string) => (isIP(address) === 6 ? `[${address}]` : address);
  if (WILDCARD.has(listenHost)) {
    for (const addresses of Object.values(networkInterfaces())) {
      for (const { address } of addresses ?? []) hosts.add(bracket(address.toLowerCase()));
    }
    hosts.add(hostname().toLowerCase());
  } else hosts.add(bracket(listenHost.toLowerCase()));
  return hosts;
}

/** The name part of a Host header (`Example.com:8080` → `example.com`, `[::1]:3000` → `[::1]`). */
export function hostName(header: string): string {
  const value = header.toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end === -1 ? value : value.slice(0, end + 1);
  }
  const colon = value.indexOf(':');
  const name = colon === -1 ? value : value.slice(0, colon);
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** How many Host headers a request carries (Node keeps only the first; RFC 9112 wants exactly one). */
export function hostHeaderCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}

/** `scheme://authority` at the start of an absolute-form target; the authority ends at / ? or #. */
const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/;
/** A host (a bracketed IP literal, or RFC 3986 reg-name characters) and an optional port; no userinfo. */
const AUTHORITY = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~%!$&'()*+,;=-]+)(?::([0-9]*))?$/;

/**
 * Whether a Host value or a target's authority is a host and an optional port of at most 65535
 * (RFC 9110, 7.2; RFC 3986, 3.2): `127.0.0.1:abc` or `:99999` is a malformed request, not a host.
 */
export function validAuthority(value: string): boolean {
  const match = AUTHORITY.exec(value);
  return match !== null && (match[1] === undefined || match[1] === '' || Number(match[1]) <= 65_535);
}

/**
 * What a request target says of the host (RFC 9112, 3.2): nothing for a path (origin form, `//x`
 * included) or `*`; for the absolute form (`http://example.com/users`), the authority, which a
 * server uses instead of the Host header (3.2.2). Another scheme than http or https names another
 * service (`misdirected`); userinfo (`http://a@b/`, deprecated and a way to confuse which host is
 * meant, RFC 9110 4.2.4), an empty authority or any other character is `malformed`.
 */
export function targetHost(target: string): { authority: string } | 'misdirected' | 'malformed' | undefined {
  if (target.startsWith('/') || target === '*') return undefined;
  const absolute = ABSOLUTE_FORM.exec(target);
  if (absolute === null) return undefined;
  const scheme = (absolute[1] as string).toLowerCase();
  const authority = absolute[2] as string;
  if (!validAuthority(authority)) return 'malformed';
  return scheme === 'http' || scheme === 'https' ? { authority } : 'misdirected';
}
