/**
 * @postpone/testkit — what the tests, evidence cases, the soak and the bench of this repository
 * share and no published package should carry: a seeded PRNG, so a randomized run replays from its
 * seed, bounded waits ({@link pollUntil}, {@link withTimeout}) that end by a deadline, the TCP proxy
 * that injects network faults in front of PostgreSQL ({@link TcpProxy}), and the evidence recording
 * ({@link recordCase}: one line per case in `evidence/output.txt`).
 */
export * from './wait.js';
export * from './evidence.js';
export * from './tcp-proxy.js';
export * from './db-clock.js';

/**
 * mulberry32, Tommy Ettinger's public-domain 32-bit generator: `seed` (any number, taken as an
 * unsigned 32-bit integer) → a function returning floats in [0, 1), the same sequence for the
 * same seed on every machine.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A uniform integer in [min, max] (both inclusive, integers) drawn from `random`. */
export function randomInt(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}
export * from './citus-port.js';
