/** What a run of concurrent writers saw. */
export interface WriteLoad {
  /** Names whose create was answered 200. */
  answered: Set<string>;
  /** Names sent, answered or not. */
  attempted: Set<string>;
  /** How many answers each status got. */
  statuses: Map<number, number>;
  /** Content types of answers other than 200. */
  errorTypes: Set<string>;
  /** Tells the writers to stop after their current request; resolves when all have. */
  stop(): Promise<void>;
}

/**
 * Starts `writers` loops that create records with unique names (`<prefix><writer>-<n>`) as fast as
 * the server answers. Bounded: each loop sends at most `perWriter` requests and ends at the first
 * connection error (the server has gone) or once stopped.
 */
export function startWriters(url: string, writers: number, prefix: string, perWriter = 2000): WriteLoad {
  const load = {
    answered: new Set<string>(),
    attempted: new Set<string>(),
    statuses: new Map<number, number>(),
    errorTypes: new Set<string>(),
  };
  let stopped = false;
  const writer = async (w: number) => {
    for (let n = 0; n < perWriter && !stopped; n++) {
      const name = `${prefix}${w}-${n}`;
      load.attempted.add(name);
      let answer: Response;
      try {
        answer = await fetch(`${url}/users?name=${name}&age=${n % 151}&city=c${w}`, { method: 'POST' });
        await answer.arrayBuffer();
      } catch {
        return; // the server is gone
      }
      load.statuses.set(answer.status, (load.statuses.get(answer.status) ?? 0) + 1);
      if (answer.status === 200) load.answered.add(name);
      else load.errorTypes.add(answer.headers.get('content-type') ?? '');
    }
  };
  const running = Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
  return {
    ...load,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** Waits until `ready()` holds, checking every 5 ms, for at most `timeoutMs`; returns whether it held. */
export async function waitFor(ready: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!ready() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  return ready();
}
