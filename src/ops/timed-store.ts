import type { UserStore } from '../store/store.ts';

/** Where one store operation's durations are counted (seconds). */
export type DurationsOf = (operation: string) => { observe(seconds: number): void };

/**
 * The store with each database call timed. Arguments are forwarded as they come, so a parameter
 * added to a method keeps compiling here; a method added to `UserStore` fails to compile until it
 * is listed below (`satisfies`), which is the point: nothing reaches the database untimed.
 */
export function timedStore(store: UserStore, durationsOf: DurationsOf): UserStore {
  const timed = <A extends unknown[], T>(operation: string, call: (...args: A) => Promise<T>) => {
    const durations = durationsOf(operation);
    return (...args: A): Promise<T> => {
      const started = performance.now();
      const done = () => durations.observe((performance.now() - started) / 1000);
      return call(...args).then(
        (value) => {
          done();
          return value;
        },
        (error: unknown) => {
          done();
          throw error;
        },
      );
    };
  };
  return {
    list: timed('list', store.list.bind(store)),
    get: timed('get', store.get.bind(store)),
    create: timed('create', store.create.bind(store)),
    createOnce: timed('createOnce', store.createOnce.bind(store)),
    createMany: timed('createMany', store.createMany.bind(store)),
    update: timed('update', store.update.bind(store)),
    remove: timed('remove', store.remove.bind(store)),
    version: timed('version', store.version.bind(store)),
    position: timed('version', store.position.bind(store)),
    count: timed('count', store.count.bind(store)),
    stats: timed('stats', store.stats.bind(store)),
    ping: timed('ping', store.ping.bind(store)),
    changes: timed('changes', store.changes.bind(store)),
    claimHook: timed('claimHook', store.claimHook.bind(store)),
    advanceHook: timed('advanceHook', store.advanceHook.bind(store)),
    releaseHook: timed('releaseHook', store.releaseHook.bind(store)),
    watch: store.watch.bind(store),
    // Not database round trips worth a latency series: a listener registration and shutdown.
    onCommit: store.onCommit.bind(store),
    close: store.close.bind(store),
  } satisfies UserStore;
}
