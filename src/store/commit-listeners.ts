import type { Commit } from './store.ts';

/** The listeners of a store's commits, told in commit order; a commit with no change is not told. */
export class CommitListeners {
  readonly #listeners: Array<(commit: Commit) => void> = [];

  add(listener: (commit: Commit) => void): void {
    this.#listeners.push(listener);
  }

  emit(commit: Commit): void {
    if (commit.changes.length === 0) return;
    for (const listener of this.#listeners) listener(commit);
  }
}
