/**
 * One watcher of other processes' commits for all of a store's listeners (the event stream's feed,
 * the webhooks): the store's way of watching (a LISTEN connection, a poll of the change version)
 * starts with the first listener and stops with the last, instead of once per listener.
 */
export class SharedWatch {
  readonly #start: (wake: () => void) => () => void;
  readonly #listeners = new Set<() => void>();
  #stop: (() => void) | undefined;

  constructor(start: (wake: () => void) => () => void) {
    this.#start = start;
  }

  /** Calls `wake` on every commit seen until the returned function is called. */
  add(wake: () => void): () => void {
    // Each registration is its own entry, so the same function added twice is removed once per call.
    const entry = () => wake();
    this.#listeners.add(entry);
    this.#stop ??= this.#start(() => {
      for (const listener of this.#listeners) listener();
    });
    return () => {
      if (!this.#listeners.delete(entry) || this.#listeners.size > 0) return;
      this.#stop?.();
      this.#stop = undefined;
    };
  }
}
