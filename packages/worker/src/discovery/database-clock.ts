/**
 * The database's clock seen from the worker's monotonic clock: `database ms ≈ monotonic ms + offset`.
 *
 * Due times are judged by the database clock only (docs/contract.md#promise-1), and the worker's wall clock may be
 * off by minutes; so the hybrid worker never reads `Date.now()`. Each query that returns the store's
 * now (`peekDue`) is a sample: the database read its clock at some monotonic instant `m` between
 * sending the query (`sentAt`) and receiving the answer (`receivedAt`), so the true offset lies in
 * `[now − receivedAt, now − sentAt]` (the bound of Cristian's algorithm, Distributed Computing 3(3),
 * 1989). The estimate is the lower bound `now − receivedAt`: a timer placed at `due − offset` on the
 * monotonic clock then never fires before the database reaches `due`. Of the recent samples the
 * largest lower bound is the tightest; a sample whose upper bound falls below it proves the clocks
 * moved apart (the database clock was stepped back), and the older samples are dropped.
 */
export class DatabaseClock {
  private readonly samples: number[] = [];
  private offset: number | null = null;

  /** @param keep samples remembered (each refresh adds one; default 8) */
  constructor(private readonly keep = 8) {}

  /** True once a sample was taken. */
  get known(): boolean {
    return this.offset !== null;
  }

  /** The current estimate of `database ms − monotonic ms`, or null before the first sample. */
  get offsetMs(): number | null {
    return this.offset;
  }

  /**
   * Records a query answer.
   * @param databaseNowMs the store's now in the answer (epoch ms, database clock)
   * @param sentAt monotonic ms when the query was sent
   * @param receivedAt monotonic ms when the answer arrived
   */
  sample(databaseNowMs: number, sentAt: number, receivedAt: number): void {
    const low = databaseNowMs - receivedAt;
    const high = databaseNowMs - sentAt;
    if (this.offset !== null && high < this.offset) this.samples.length = 0;
    this.samples.push(low);
    if (this.samples.length > this.keep) this.samples.shift();
    this.offset = Math.max(...this.samples);
  }

  /**
   * The monotonic time at which the database clock reads `databaseMs` (never earlier than the true
   * instant while the offset holds).
   * @throws Error before the first sample
   */
  toMonotonic(databaseMs: number): number {
    if (this.offset === null) throw new Error('DatabaseClock: no sample yet');
    return databaseMs - this.offset;
  }

  /**
   * The database time at monotonic time `monotonicMs` (a lower bound).
   * @throws Error before the first sample
   */
  toDatabase(monotonicMs: number): number {
    if (this.offset === null) throw new Error('DatabaseClock: no sample yet');
    return monotonicMs + this.offset;
  }
}
