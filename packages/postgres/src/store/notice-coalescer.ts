/**
 * Coalesced schedule notices (`scheduleNotices: 'coalesced'`, docs/contract.md#schedule-notices): after an autocommit schedule commits, its
 * tasks are announced by a NOTIFY of their own, at most one in flight per store. The first task goes
 * out at once; tasks scheduled while that NOTIFY is in flight wait and go together in the next one
 * (`scheduledMany`, up to `MAX_TASKS_PER_NOTICE` per payload). So a quiet producer announces each
 * task one round trip after its commit, and a busy one sends a few notifications for many tasks.
 *
 * Why: PostgreSQL serialises the commits of all transactions that sent a notification on one
 * instance-wide lock (the notification queue; PostgreSQL 17 source `async.c`, PreCommit_Notify), so a
 * NOTIFY in every schedule transaction, not the insert, set the schedule rate. A notice lost here
 * (a failed NOTIFY) is never retried: a hybrid worker's fallback read finds the task.
 */
import { scheduledManyPayloads, type TaskNotice } from '../sql/notice.js';

export class NoticeCoalescer {
  private queue: [string, number][] = [];
  private flushing: Promise<void> | null = null;
  /** Notifications sent (each may carry many tasks), for tests and reports. */
  sent = 0;

  /**
   * @param send sends one payload (a NOTIFY outside any transaction)
   * @param onError a failed send (its tasks are not announced again)
   */
  constructor(
    private readonly send: (payload: string) => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Announces `tasks` (already committed): at once when no NOTIFY is in flight, else with the next one. */
  add(tasks: readonly Pick<TaskNotice, 'id' | 'dueAt'>[]): void {
    for (const t of tasks) this.queue.push([t.id, t.dueAt.getTime()]);
    if (this.flushing === null && this.queue.length > 0) this.flushing = this.drain();
  }

  /** Resolves when nothing is queued or in flight. */
  async idle(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        for (const payload of scheduledManyPayloads(batch)) {
          try {
            await this.send(payload);
            this.sent += 1;
          } catch (error) {
            this.onError(error);
          }
        }
      }
    } finally {
      this.flushing = null;
    }
  }
}
