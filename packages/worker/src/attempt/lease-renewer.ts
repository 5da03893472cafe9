/**
 * One renewal statement for the leases a worker renews together: every `renew` asked in the same
 * turn of the event loop (the keepers of one claim's tasks wake together; the local queue renews all
 * it holds at once) is sent as ONE `store.extendMany` on the next macrotask (`setImmediate`), each
 * item keeping its own fence and its own answer (docs/contract.md#transitions, extend).
 */
import type { ExtendManyItem, Store } from '@postpone/core';
import { MAX_EXTEND_MANY } from '@postpone/core';

interface Pending {
  readonly item: ExtendManyItem;
  readonly resolve: (renewed: boolean) => void;
  readonly reject: (error: unknown) => void;
}

export class LeaseRenewer {
  private queue: Pending[] = [];
  private armed = false;

  /** @param leaseMs the lease each renewal grants, in ms of the store's clock */
  constructor(
    private readonly store: Pick<Store<unknown>, 'extendMany'>,
    readonly leaseMs: number,
  ) {}

  /**
   * Renews the lease of attempt `item.attempt` of task `item.id` for `leaseMs`, fenced as `extend`.
   * @returns true when renewed; false when the attempt is stale, expired, cancel-requested or gone
   * @throws the store's error for the whole batch (nothing is known of any item then)
   */
  renew(item: ExtendManyItem): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.queue.length >= MAX_EXTEND_MANY) this.flush();
      else if (!this.armed) {
        this.armed = true;
        setImmediate(() => {
          this.armed = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    // One task can be in a batch once: a second renewal of it (not expected) waits for the next one.
    const seen = new Set<string>();
    const now: Pending[] = [];
    for (const p of batch) {
      if (seen.has(p.item.id)) this.queue.push(p);
      else {
        seen.add(p.item.id);
        now.push(p);
      }
    }
    if (this.queue.length > 0 && !this.armed) {
      this.armed = true;
      setImmediate(() => {
        this.armed = false;
        this.flush();
      });
    }
    this.store.extendMany({ items: now.map((p) => ({ id: p.item.id, attempt: p.item.attempt })), leaseMs: this.leaseMs }).then(
      (renewed) => {
        for (const [i, p] of now.entries()) p.resolve(renewed[i] === true);
      },
      (error: unknown) => {
        for (const p of now) p.reject(error);
      },
    );
  }
}
