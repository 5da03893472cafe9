/**
 * The pure parts of hybrid discovery: the database clock estimate and the reading of notices. No
 * store, no timers.
 */
import { describe, expect, it } from 'vitest';
import { DatabaseClock } from '../../src/discovery/database-clock.js';
import { readNotice, readWorkerNotice } from '../../src/discovery/notices.js';
import { hashText, Peers } from '../../src/discovery/peers.js';

describe('DatabaseClock', () => {
  it('takes the lower bound of each sample (now − receivedAt) and keeps the tightest', () => {
    const clock = new DatabaseClock();
    expect(clock.known).toBe(false);
    expect(() => clock.toMonotonic(0)).toThrow(/no sample/);
    // The database read 1 000 500 somewhere between monotonic 100 and 110: offset in [1 000 390, 1 000 400].
    clock.sample(1_000_500, 100, 110);
    expect(clock.offsetMs).toBe(1_000_390);
    // A faster round trip narrows it: [1 000 396, 1 000 398].
    clock.sample(1_000_598, 200, 202);
    expect(clock.offsetMs).toBe(1_000_396);
    // A slow one does not widen it.
    clock.sample(1_000_700, 300, 350);
    expect(clock.offsetMs).toBe(1_000_396);
    expect(clock.toMonotonic(1_001_000)).toBe(604);
    expect(clock.toDatabase(604)).toBe(1_001_000);
  });

  it('drops older samples when a sample proves the database clock stepped back', () => {
    const clock = new DatabaseClock();
    clock.sample(10_000, 0, 2);
    expect(clock.offsetMs).toBe(9_998);
    // Upper bound 5 000 − 100 = 4 900 < 9 998: the clocks moved apart by about 5 s.
    clock.sample(5_000, 100, 104);
    expect(clock.offsetMs).toBe(4_896);
  });

  it('remembers only the last `keep` samples', () => {
    const clock = new DatabaseClock(2);
    clock.sample(1_000, 0, 0); // an exact sample: offset 1 000
    clock.sample(1_105, 100, 110); // [995, 1 005]: consistent with 1 000
    expect(clock.offsetMs).toBe(1_000);
    clock.sample(1_205, 200, 210); // [995, 1 005] again: the exact sample has aged out
    expect(clock.offsetMs).toBe(995);
  });
});

describe('readNotice', () => {
  it('accepts the store notices and ignores anything else', () => {
    expect(readNotice({ op: 'scheduled', id: '7', dueAt: new Date(5) })).toEqual({ op: 'scheduled', id: '7', dueAtMs: 5 });
    expect(readNotice({ op: 'cancelled', id: '7', dueAt: new Date(5) })).toEqual({ op: 'cancelled', id: '7' });
    for (const junk of [null, 'x', { op: 'claimed', id: '1', dueAt: new Date(0) }, { op: 'scheduled', id: '', dueAt: new Date(0) }, { op: 'scheduled', id: '1', dueAt: new Date(Number.NaN) }, { op: 'scheduled', id: '1', dueAt: 5 }]) {
      expect(readNotice(junk)).toBeNull();
    }
  });
});

describe('Peers (rendezvous preference over the known workers)', () => {
  const slices = (peers: Peers, n: number) => Array.from({ length: n }, (_, i) => peers.ownerOf(i * 64));

  it('alone, a worker is preferred everywhere; with others, each worker of a shared view gets a share', () => {
    let now = 0;
    const a = new Peers('a', 64, 1_000, () => now);
    expect(new Set(slices(a, 100))).toEqual(new Set(['a']));
    expect(a.heard('b')).toBe(true);
    expect(a.heard('b')).toBe(false);
    expect(a.heard('a')).toBe(false);
    a.heard('c');
    expect(a.size).toBe(2);
    const counts = new Map<string, number>();
    for (const owner of slices(a, 3_000)) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    for (const id of ['a', 'b', 'c']) expect(counts.get(id) ?? 0).toBeGreaterThan(800);
    // Every worker of the same view names the same preferred worker of each slice.
    const b = new Peers('b', 64, 1_000, () => now);
    b.heard('a');
    b.heard('c');
    expect(slices(b, 3_000)).toEqual(slices(a, 3_000));
    // Not heard from within the ttl: forgotten.
    now = 1_001;
    expect(a.size).toBe(0);
    expect(new Set(slices(a, 50))).toEqual(new Set(['a']));
  });

  it('views that differ never leave a slice without a claimer: the top worker of all always prefers itself', () => {
    const ids = ['w1', 'w2', 'w3', 'w4'];
    // Each worker knows only some others (its own view), as after a start or a suspicion.
    const views = ids.map((self, i) => {
      const view = new Peers(self, 64, 60_000, () => 0);
      for (const other of ids.filter((_, j) => j !== i && (i + j) % 3 !== 0)) view.heard(other);
      return view;
    });
    const everyone = new Peers('w1', 64, 60_000, () => 0);
    for (const id of ids) everyone.heard(id);
    for (let slice = 0; slice < 2_000; slice++) {
      const top = everyone.ownerOf(slice * 64);
      const claimers = views.filter((v) => v.ownerOf(slice * 64) === v.self).map((v) => v.self);
      expect(claimers).toContain(top);
    }
  });

  it('a suspected worker is no longer preferred until heard from again', () => {
    const a = new Peers('a', 64, 60_000, () => 0);
    a.heard('b');
    const bSlices = slices(a, 200).filter((o) => o === 'b').length;
    expect(bSlices).toBeGreaterThan(0);
    expect(a.suspect('b')).toBe(true);
    expect(slices(a, 200).filter((o) => o === 'b')).toHaveLength(0);
    a.heard('b');
    expect(slices(a, 200).filter((o) => o === 'b')).toHaveLength(bSlices);
  });

  it('slices above 2^32 still spread (due times are epoch ms)', () => {
    const a = new Peers('a', 64, 60_000, () => 0);
    a.heard('b');
    const base = 1_780_000_000_000;
    const owners = Array.from({ length: 400 }, (_, i) => a.ownerOf(base + i * 64));
    expect(owners.filter((o) => o === 'a').length).toBeGreaterThan(100);
    expect(owners.filter((o) => o === 'b').length).toBeGreaterThan(100);
    expect(hashText('a')).not.toBe(hashText('b'));
  });
});

describe('readWorkerNotice', () => {
  it('accepts a presence notice and ignores anything else', () => {
    expect(readWorkerNotice({ op: 'worker', worker: 'w1', group: 'g', hello: true })).toEqual({ worker: 'w1', group: 'g', hello: true });
    for (const junk of [null, 'x', { op: 'worker', worker: '', group: 'g', hello: true }, { op: 'worker', worker: 'w', group: 'g' }, { op: 'scheduled', worker: 'w', group: 'g', hello: false }]) {
      expect(readWorkerNotice(junk)).toBeNull();
    }
  });
});
