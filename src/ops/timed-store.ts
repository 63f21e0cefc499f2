import type { UserStore } from '../store/store.ts';

/** Records how long one store operation took, whether it succeeded or failed. */
export type ObserveDuration = (operation: string, seconds: number) => void;

/**
 * The store with each database call timed. Arguments are forwarded as they come, so a parameter
 * added to a method keeps compiling here; a method added to `UserStore` fails to compile until it
 * is listed below (`satisfies`), which is the point: nothing reaches the database untimed.
 */
export function timedStore(store: UserStore, observe: ObserveDuration): UserStore {
  const timed = async <T>(operation: string, run: () => Promise<T>): Promise<T> => {
    const start = process.hrtime.bigint();
    try {
      return await run();
    } finally {
      observe(operation, Number(process.hrtime.bigint() - start) / 1e9);
    }
  };
  return {
    list: (...args: Parameters<UserStore['list']>) => timed('list', () => store.list(...args)),
    get: (...args: Parameters<UserStore['get']>) => timed('get', () => store.get(...args)),
    create: (...args: Parameters<UserStore['create']>) => timed('create', () => store.create(...args)),
    createOnce: (...args: Parameters<UserStore['createOnce']>) => timed('createOnce', () => store.createOnce(...args)),
    update: (...args: Parameters<UserStore['update']>) => timed('update', () => store.update(...args)),
    remove: (...args: Parameters<UserStore['remove']>) => timed('remove', () => store.remove(...args)),
    version: (...args: Parameters<UserStore['version']>) => timed('version', () => store.version(...args)),
    count: (...args: Parameters<UserStore['count']>) => timed('count', () => store.count(...args)),
    ping: (...args: Parameters<UserStore['ping']>) => timed('ping', () => store.ping(...args)),
    // Not database round trips worth a latency series: a listener registration and shutdown.
    onCommit: (...args: Parameters<UserStore['onCommit']>) => store.onCommit(...args),
    close: (...args: Parameters<UserStore['close']>) => store.close(...args),
  } satisfies UserStore;
}
