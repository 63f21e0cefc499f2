import { readFileSync } from 'node:fs';
import { statusMB } from '../../bench/proc-stats.ts';

/** The resident memory of a process, in MiB, from /proc/<pid>/status (VmRSS). */
export function rssMb(pid: number): number {
  const megabytes = statusMB(pid, 'VmRSS');
  if (megabytes === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return (megabytes * 1e6) / (1024 * 1024);
}

/**
 * How many TCP connections to 127.0.0.1:`port` are open on the server's side (state ESTABLISHED,
 * local port `port`), from /proc/net/tcp: what the server holds, whatever the clients think.
 */
export function openConnections(port: number): number {
  const local = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let count = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields[1]?.endsWith(local) && fields[3] === '01') count++;
  }
  return count;
}

/**
 * CPU time a process has used and time it has spent runnable but waiting for a CPU, in ms, from
 * /proc/<pid>/schedstat. A large wait means the machine is oversubscribed (neighbours, or the
 * test's own clients), which a server sees as event-loop lag.
 */
export function cpuTimes(pid: number): { cpuMs: number; waitMs: number } {
  const [cpu, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
  return { cpuMs: (cpu ?? 0) / 1e6, waitMs: (wait ?? 0) / 1e6 };
}

/**
 * How many connections to 127.0.0.1:`port` wait in the kernel's accept queue of its listening socket
 * (handshake done, not yet accepted by the server), from /proc/net/tcp: for a socket in state LISTEN
 * (0A), the rx_queue column counts them. -1 when no socket listens on that port.
 */
export function acceptQueue(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === local && fields[3] === '0A') return Number.parseInt(fields[4]?.split(':')[1] ?? '', 16);
  }
  return -1;
}
