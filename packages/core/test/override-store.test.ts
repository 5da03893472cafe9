import { describe, expect, it } from 'vitest';
import { overrideStore, type Store } from '../src/index.js';

describe('overrideStore', () => {
  it('answers with the override where given and with the store’s own member, bound, elsewhere', async () => {
    const real = {
      name: 'real',
      calls: 0,
      async now() {
        this.calls += 1;
        return new Date(42);
      },
      async cancel() {
        return 'NOT_FOUND' as const;
      },
    };
    const wrapped = overrideStore(real as unknown as Store, { cancel: async () => 'CANCELLED' as const });
    expect(wrapped.name).toBe('real');
    expect(await wrapped.cancel('1')).toBe('CANCELLED');
    const { now } = wrapped; // detached: still bound to the real store
    expect((await now()).getTime()).toBe(42);
    expect(real.calls).toBe(1);
  });
});
