import { readFileSync, readdirSync, writeFileSync } from 'node:fs';

// /proc exposes CPU times in USER_HZ, which Linux fixes at 100 for user space.
const TICKS_PER_SECOND = 100;

/** A `Vm*` line of /proc/PID/status in MB (10^6 bytes), or undefined when the process is gone. */
export function statusMB(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match?.[1] === undefined ? undefined : (Number(match[1]) * 1024) / 1e6;
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (clear_refs 5), so the next peak is the peak of what follows. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** User plus system CPU seconds the process (or, given its id, one of its threads) has used so far. */
export function cpuSeconds(pid: number, thread?: number): number | undefined {
  try {
    const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
    // The command name may hold spaces or parentheses; the fields after its last ')' are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Waits until the process uses under 5% of a core over 200 ms (leftover work from the last run), for at most `timeoutMs`. */
export async function waitIdle(pid: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let before = cpuSeconds(pid);
  while (before !== undefined && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = cpuSeconds(pid);
    if (now === undefined || now - before < 0.01) return;
    before = now;
  }
}

/**
 * The process's CPU milliseconds per request over `requests` sent one after another by `send`, once
 * its leftover work has settled (waitIdle); the last answer comes back with it.
 */
export async function cpuMsPerRequest<T>(
  pid: number,
  requests: number,
  send: () => Promise<T>,
): Promise<{ cpuMs: number; last: T | undefined }> {
  await waitIdle(pid, 3_000);
  const before = cpuSeconds(pid) ?? Number.NaN;
  let last: T | undefined;
  for (let i = 0; i < requests; i++) last = await send();
  return { cpuMs: (((cpuSeconds(pid) ?? Number.NaN) - before) * 1000) / requests, last };
}

/** CPU seconds the whole machine has been busy (every CPU, every process), from /proc/stat. */
export function machineBusySeconds(): number | undefined {
  try {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
    // user nice system idle iowait irq softirq steal. Idle and iowait are no work; irq and softirq are
    // left out too, as on loopback they are mostly the kernel carrying the benchmark's own traffic.
    const busy = fields.reduce((sum, value, i) => (i >= 3 && i <= 6 ? sum : sum + value), 0);
    return busy / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Every running process's PID, from /proc. */
function allPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
}

/** The first process whose argv satisfies `test`, or undefined. */
export function findProcess(test: (argv: string[]) => boolean): number | undefined {
  for (const pid of allPids()) {
    try {
      if (test(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'))) return pid;
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}

/** A process and its direct children (PostgreSQL's backends are children of its postmaster). */
export function withChildren(pid: number): number[] {
  const children = allPids().filter((child) => {
    try {
      const stat = readFileSync(`/proc/${child}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
    } catch {
      return false;
    }
  });
  return [pid, ...children];
}

/** A process's CPU seconds with its reaped children's (cutime, cstime), or undefined when it is gone. */
function ownAndReapedSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds of a process and every process under it, each with all its threads and the children
 * it has reaped: what a server costs, whether it runs threads, workers or helper processes.
 */
export function treeCpuSeconds(pid: number): number | undefined {
  const parents = new Map<number, number[]>();
  for (const child of allPids()) {
    try {
      const stat = readFileSync(`/proc/${child}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(parent, [...(parents.get(parent) ?? []), child]);
    } catch {
      // The process ended while we looked.
    }
  }
  const own = ownAndReapedSeconds(pid);
  if (own === undefined) return undefined;
  let total = own;
  const queue = [...(parents.get(pid) ?? [])];
  while (queue.length > 0) {
    const next = queue.shift() as number;
    total += ownAndReapedSeconds(next) ?? 0;
    queue.push(...(parents.get(next) ?? []));
  }
  return total;
}
