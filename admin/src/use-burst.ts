import { useCallback, useRef, useState } from 'preact/hooks';

/**
 * Past this many changes in one interval (live.ts) the page is in a burst: it stops making each
 * change on its rows, says so, and reads the page again once per interval instead.
 */
export const MANY_CHANGES = 100;
/** A run of changes ends once the stream has been live this long without one (a reconnect does not end it). */
const QUIET_MS = 2000;

/** Many changes at once: while they come, then `over`, with how many the run brought in all. */
export interface Burst {
  count: number;
  over: boolean;
}

/**
 * Counts each run of changes (from the first after a quiet spell to the next quiet spell). A run
 * with an interval past MANY_CHANGES is a burst: the page shows a notice while it lasts, and how
 * many changes it brought once it is over.
 */
export function useBurst() {
  const [burst, setBurst] = useState<Burst | undefined>();
  const run = useRef({
    count: 0,
    many: false,
    live: true,
    timer: undefined as ReturnType<typeof setTimeout> | undefined,
  });

  const quietFromNow = useCallback(() => {
    const state = run.current;
    clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      state.timer = undefined;
      // Not live: the rest of the run comes after the reconnect, which starts the wait again.
      if (!state.live) return;
      if (state.many) setBurst({ count: state.count, over: true });
      state.count = 0;
      state.many = false;
    }, QUIET_MS);
  }, []);

  /** `count` changes arrived in one interval. */
  const note = useCallback(
    (count: number) => {
      const state = run.current;
      state.count += count;
      if (count > MANY_CHANGES && !state.many) {
        state.many = true;
        setBurst({ count: 0, over: false });
      }
      quietFromNow();
    },
    [quietFromNow],
  );

  /** Whether the stream is live: the quiet spell that ends a run is counted only while it is. */
  const live = useCallback(
    (now: boolean) => {
      const state = run.current;
      state.live = now;
      if (now && state.count > 0) quietFromNow();
    },
    [quietFromNow],
  );

  /** A read someone asked for (Refresh, a filter, a page): the notice of a burst that is over goes. */
  const dismiss = useCallback(() => setBurst((old) => (old?.over === true ? undefined : old)), []);

  /** Forgets the run and the notice (signing out). */
  const reset = useCallback(() => {
    clearTimeout(run.current.timer);
    run.current = { count: 0, many: false, live: true, timer: undefined };
    setBurst(undefined);
  }, []);

  return { burst, note, live, dismiss, reset };
}
