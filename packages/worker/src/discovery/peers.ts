/**
 * The live hybrid workers of one group as this worker knows them, and which of them is preferred to
 * claim a stretch of due time (docs/contract.md#discovery-sharing).
 *
 * Due time is cut into slices of `sliceMs` (database clock); each slice's preferred worker is the one
 * with the highest rendezvous score (highest random weight hashing: Thaler & Ravishankar 1998) of
 * (worker id, slice). Rendezvous hashing needs no agreement: each worker ranks only the workers it
 * knows, and the worker that ranks highest among all live ones ranks highest in its own view too (it
 * always knows itself), so every slice has a worker that claims it; views that differ cost a
 * duplicate (empty) claim, never a gap. A slice, not a tick, because a claim takes everything due:
 * contiguous time with one owner keeps one worker's claim from emptying another's.
 *
 * A worker is known from its notices (`hello` at start, and a periodic refresh) and forgotten when
 * not heard from for `ttlMs`, or at once when it is suspected (a task of its slice was found overdue).
 */

/** The 32-bit finaliser of MurmurHash3: spreads every input bit over the output. */
function mix(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** FNV-1a (32 bit) of a string's UTF-16 code units. */
export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix(h);
}

/** The rendezvous score of a worker (its {@link hashText}) for a slice (an integer, may exceed 2^32). */
export function rendezvousScore(workerHash: number, slice: number): number {
  const low = slice >>> 0;
  const high = Math.floor(slice / 0x1_0000_0000) >>> 0;
  return mix(workerHash ^ mix(low ^ mix(high + 0x9e3779b9)));
}

export class Peers {
  /** Worker id → [its hash, monotonic time last heard]. */
  private readonly known = new Map<string, { readonly hash: number; heardAt: number }>();
  private readonly selfHash: number;

  constructor(
    readonly self: string,
    private readonly sliceMs: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {
    this.selfHash = hashText(self);
  }

  /** Other workers known now (not counting this one). */
  get size(): number {
    this.expire();
    return this.known.size;
  }

  /** Notes a notice from `worker`. @returns whether it was not known before */
  heard(worker: string): boolean {
    if (worker === this.self) return false;
    const entry = this.known.get(worker);
    if (entry !== undefined) {
      entry.heardAt = this.now();
      return false;
    }
    this.known.set(worker, { hash: hashText(worker), heardAt: this.now() });
    return true;
  }

  /** Forgets `worker` until it is heard from again. @returns whether it was known */
  suspect(worker: string): boolean {
    return this.known.delete(worker);
  }

  /** The slice of a due time (database clock, epoch ms). */
  sliceOf(dueAtMs: number): number {
    return Math.floor(dueAtMs / this.sliceMs);
  }

  /** The preferred worker of the slice holding `dueAtMs`: this worker's id, or a known other one. */
  ownerOf(dueAtMs: number): string {
    this.expire();
    const slice = this.sliceOf(dueAtMs);
    let best = this.self;
    let bestScore = rendezvousScore(this.selfHash, slice);
    for (const [worker, { hash }] of this.known) {
      const score = rendezvousScore(hash, slice);
      if (score > bestScore || (score === bestScore && worker > best)) {
        best = worker;
        bestScore = score;
      }
    }
    return best;
  }

  private expire(): void {
    const oldest = this.now() - this.ttlMs;
    for (const [worker, { heardAt }] of this.known) if (heardAt < oldest) this.known.delete(worker);
  }
}
