import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface Pinning {
  /** Prepended to each server's command line. */
  serverPrefix: string[];
  /** One line saying how the load generator and the servers share the CPUs. */
  note: string;
}

/**
 * On a machine with few cores the load generator (wrk, started by this process) competes with the
 * server for CPU. Pinning this process to CPU 0, which the wrk it starts inherits, and each server
 * to CPU 1 gives every system the same one core and keeps the generator off it; without taskset
 * both float.
 */
export function pinCpus(enabled: boolean): Pinning {
  const cpus = availableParallelism();
  if (!enabled) return { serverPrefix: [], note: 'CPU pinning off (--no-pin): generator and servers share all CPUs' };
  if (cpus < 2) return { serverPrefix: [], note: `only ${cpus} CPU: generator and server share it` };
  try {
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
    const server = String(cpus - 1);
    return {
      serverPrefix: ['taskset', '-c', server],
      note: `load generator (wrk) pinned to CPU 0, each server to CPU ${server} (PostgreSQL itself, when used, is not pinned)`,
    };
  } catch {
    return { serverPrefix: [], note: 'taskset unavailable: generator and servers share all CPUs' };
  }
}
