import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SharedWatch } from '../../src/store/shared-watch.ts';

describe('SharedWatch: one watcher of other processes for all listeners', () => {
  it('starts once for many listeners, wakes each, and stops with the last', () => {
    const events: string[] = [];
    let fire: (() => void) | undefined;
    const shared = new SharedWatch((wake) => {
      events.push('start');
      fire = wake;
      return () => events.push('stop');
    });
    const woken: string[] = [];
    const stopFeed = shared.add(() => woken.push('feed'));
    const stopHooks = shared.add(() => woken.push('hooks'));
    assert.deepEqual(events, ['start']);
    fire?.();
    assert.deepEqual(woken, ['feed', 'hooks']);

    stopFeed();
    stopFeed(); // A second call is harmless and does not take the other listener's place.
    assert.deepEqual(events, ['start']);
    fire?.();
    assert.deepEqual(woken, ['feed', 'hooks', 'hooks']);
    stopHooks();
    assert.deepEqual(events, ['start', 'stop']);

    const again = shared.add(() => woken.push('again'));
    assert.deepEqual(events, ['start', 'stop', 'start']);
    again();
    assert.deepEqual(events, ['start', 'stop', 'start', 'stop']);
  });
});
