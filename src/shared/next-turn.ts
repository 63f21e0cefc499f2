const waiting: Array<() => void> = [];
let releasing = false;

function releaseOne(): void {
  waiting.shift()?.();
  if (waiting.length > 0) setImmediate(releaseOne);
  else releasing = false;
}

/**
 * Resolves on a later turn of the event loop, one waiter per turn: however many listings stream at
 * once, one page is read between two polls for I/O, so other requests (and the overload check) wait
 * for at most one page, not for one page of every listing.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!releasing) {
      releasing = true;
      setImmediate(releaseOne);
    }
  });
}
