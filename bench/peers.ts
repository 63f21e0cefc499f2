import { DIRECTUS_VERSION, directusInstalled, directusSystem, ensureDirectus } from './peers/directus.ts';
import type { SystemSpec } from './systems.ts';

/** `--peers directus` (install when missing), `--peers none`, or no flag: the peers already installed. */
export type PeerChoice = 'directus' | 'none' | 'installed';
export type PeerName = 'directus';

/**
 * The peers this run measures. Directus is installed on demand into bench/peers/directus (its own
 * lock, about 470 MB, never a dependency of the service) when asked for by name; without --peers it
 * joins only when it is installed already. What cannot join is said in `skipped`.
 */
export async function preparePeers(
  choice: PeerChoice,
  log: (line: string) => void,
  skipped: string[],
  root: string,
): Promise<PeerName[]> {
  if (choice === 'none') return [];
  if (choice === 'installed' && !directusInstalled(root)) {
    log(`Directus ${DIRECTUS_VERSION} is not installed: npm run bench -- --peers directus installs it and runs it too`);
    return [];
  }
  const install = await ensureDirectus(log, root);
  if (typeof install === 'string') {
    skipped.push(`Directus ${DIRECTUS_VERSION}: ${install}`);
    return [];
  }
  log(`Directus ${install.version} installed in ${install.dir.slice(root.length)}`);
  return ['directus'];
}

/** The peers' systems: each on SQLite, and on the bench's PostgreSQL when it runs. */
export function peerSystems(peers: PeerName[], root: string, postgresUrl: string | undefined): SystemSpec[] {
  return peers.includes('directus') ? directusSystem(root, postgresUrl) : [];
}
