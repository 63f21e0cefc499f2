import { isIP } from 'node:net';
import type { Config } from '../config/load.ts';

/** Whether a listen address reaches only this machine. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  const v4 = host.toLowerCase().startsWith('::ffff:') ? host.slice('::ffff:'.length) : host;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/** The warning to print at start when the service is reachable from other machines without tokens. */
export function exposureWarning(
  config: Pick<Config, 'host' | 'tokens'> & Partial<Pick<Config, 'jwt'>>,
): string | undefined {
  if (config.tokens.length > 0 || config.jwt !== undefined || isLoopback(config.host)) return undefined;
  return `listening on ${config.host} with no API_TOKENS: anyone who can reach this address can read and change every record; set API_TOKENS or API_TOKENS_FILE, or JWT_JWKS_URL (see docs/security.md)`;
}
