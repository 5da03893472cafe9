/**
 * Per-key concurrency and fair share in memory (`KeyLimitStore` of `@postpone/core`,
 * docs/contract.md#per-key-concurrency): one row per declared kind, and the claim order that rotates
 * among the limit keys with due work. The claim counts, orders and claims without an `await` in
 * between, so on one event loop no other claim interleaves (the PostgreSQL store's advisory lock per
 * key-limited kind).
 */
import { type KeyConcurrencyInput, type KeyConcurrencyRecord, type Task, TaskState, validateKeyConcurrency, validateKeyConcurrencyKind } from '@postpone/core';

export class MemoryKeyLimits {
  /** The table `key_limit`: kind → limit. */
  readonly #rows = new Map<string, number>();

  constructor(private readonly ctx: { readonly assertOpen: () => void }) {}

  async set(input: KeyConcurrencyInput): Promise<KeyConcurrencyRecord> {
    this.ctx.assertOpen();
    const { kind, limit } = validateKeyConcurrency(input);
    this.#rows.set(kind, limit);
    return { kind, limit };
  }

  async delete(target: { readonly kind: string }): Promise<boolean> {
    this.ctx.assertOpen();
    return this.#rows.delete(validateKeyConcurrencyKind(target));
  }

  async list(): Promise<KeyConcurrencyRecord[]> {
    this.ctx.assertOpen();
    return [...this.#rows].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([kind, limit]) => ({ kind, limit }));
  }

  /** The declared limits of the kinds a claim may take (`kinds` null: every kind), or null when none applies. */
  applicable(kinds: readonly string[] | null): Map<string, number> | null {
    const found = new Map([...this.#rows].filter(([kind]) => kinds === null || kinds.includes(kind)));
    return found.size === 0 ? null : found;
  }
}

/**
 * A keyed claim's plan (as `taskClaimKeyed` of `@postpone/postgres`): the room per (kind, limitKey) of
 * the key-limited kinds — the limit less the key's CLAIMED tasks in any queue — and the due
 * candidates in fair order: `priority desc`, then the task's rank among the due candidates of its
 * (kind, priority, key) — the key only for a key-limited kind, every other kind is one group — then
 * `dueAt`, id. Tasks without a limit key in a key-limited kind form one group with no cap.
 */
export function keyedClaimOrder(
  candidates: readonly Task[],
  all: Iterable<Task>,
  limits: ReadonlyMap<string, number>,
  limitKeyOf: (task: Task) => string | null,
  nowMs: number,
): { readonly ordered: Task[]; readonly room: Map<string, number> } {
  const slot = (kind: string, key: string) => JSON.stringify([kind, key]);
  const room = new Map<string, number>();
  const claimed = new Map<string, number>();
  for (const t of all) {
    const key = t.state === TaskState.CLAIMED && limits.has(t.kind) ? limitKeyOf(t) : null;
    if (key !== null) claimed.set(slot(t.kind, key), (claimed.get(slot(t.kind, key)) ?? 0) + 1);
  }
  const rank = new Map<Task, number>();
  const seen = new Map<string, number>();
  // `candidates` is in (priority desc, dueAt, id) order, so a running count per group is the rank.
  for (const t of candidates) {
    if (t.dueAt.getTime() > nowMs) continue;
    const key = limits.has(t.kind) ? limitKeyOf(t) : null;
    const group = JSON.stringify([t.kind, t.priority, key]);
    const n = (seen.get(group) ?? 0) + 1;
    seen.set(group, n);
    rank.set(t, n);
    if (key !== null && !room.has(slot(t.kind, key))) room.set(slot(t.kind, key), Math.max(0, (limits.get(t.kind) as number) - (claimed.get(slot(t.kind, key)) ?? 0)));
  }
  const ordered = [...rank.keys()].sort(
    (a, b) => b.priority - a.priority || (rank.get(a) as number) - (rank.get(b) as number) || a.dueAt.getTime() - b.dueAt.getTime() || compareIds(a.id, b.id),
  );
  return { ordered, room };
}

/** The room slot of a task of a key-limited kind with a key, else undefined. */
export function keySlot(task: Task, limits: ReadonlyMap<string, number>, limitKeyOf: (task: Task) => string | null): string | undefined {
  const key = limits.has(task.kind) ? limitKeyOf(task) : null;
  return key === null ? undefined : JSON.stringify([task.kind, key]);
}

function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
