import type { UserStore } from '../store/store.ts';
import type { TracingKit } from './tracing-kit.ts';

/**
 * The store with a client span for each database call made inside a request or a webhook
 * delivery (`store.get`, `store.create`...), child of that request's span. It records the database
 * and the operation, never arguments or results (record fields, ids, filters); a call that fails is
 * an error, with the error's class as `error.type` (its message may quote values). Calls outside
 * any span (the webhook outbox and the change feed polling in the background) make none: they would
 * be a trace every second of no interest. Like timed-store.ts, a method added to `UserStore` fails
 * to compile until it is listed below.
 */
export function tracedStore(store: UserStore, kit: TracingKit, system: 'sqlite' | 'postgresql'): UserStore {
  const { api, tracer, semconv: s } = kit;
  const traced = <A extends unknown[], T>(operation: string, call: (...args: A) => Promise<T>) => {
    const name = `store.${operation}`;
    const attributes = { [s.ATTR_DB_SYSTEM_NAME]: system, [s.ATTR_DB_OPERATION_NAME]: operation };
    return async (...args: A): Promise<T> => {
      const parent = api.context.active();
      // An ended span can still be the context of work it started (a timer, a stream): no child then.
      if (api.trace.getSpan(parent)?.isRecording() !== true) return call(...args);
      const span = tracer.startSpan(name, { kind: api.SpanKind.CLIENT, attributes }, parent);
      try {
        return await call(...args);
      } catch (error) {
        span.setAttribute(s.ATTR_ERROR_TYPE, (error as Error).name ?? s.ERROR_TYPE_VALUE_OTHER);
        span.setStatus({ code: api.SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    };
  };
  /** Listeners run later, for every request or none: outside the context of the one that registered them. */
  const detached = <A extends unknown[]>(listener: (...args: A) => void) => {
    return (...args: A) => api.context.with(api.ROOT_CONTEXT, listener, undefined, ...args);
  };
  return {
    list: traced('list', store.list.bind(store)),
    get: traced('get', store.get.bind(store)),
    create: traced('create', store.create.bind(store)),
    createOnce: traced('createOnce', store.createOnce.bind(store)),
    createMany: traced('createMany', store.createMany.bind(store)),
    update: traced('update', store.update.bind(store)),
    remove: traced('remove', store.remove.bind(store)),
    version: traced('version', store.version.bind(store)),
    position: traced('position', store.position.bind(store)),
    count: traced('count', store.count.bind(store)),
    stats: traced('stats', store.stats.bind(store)),
    ping: traced('ping', store.ping.bind(store)),
    changes: traced('changes', store.changes.bind(store)),
    claimHook: traced('claimHook', store.claimHook.bind(store)),
    advanceHook: traced('advanceHook', store.advanceHook.bind(store)),
    releaseHook: traced('releaseHook', store.releaseHook.bind(store)),
    watch: (wake) => api.context.with(api.ROOT_CONTEXT, () => store.watch(detached(wake))),
    onCommit: (listener) => store.onCommit(detached(listener)),
    close: store.close.bind(store),
  } satisfies UserStore;
}
