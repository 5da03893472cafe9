/**
 * What the workers told the demo over IPC: every claim (with the database's due and claim times),
 * every reclaim, lease loss and store error, and every claim query and near-task read discovery sent.
 */
import type { WorkerMessage } from './messages.js';
import { type Summary, summarize } from './stats.js';

export interface ClaimRecord {
  readonly workerId: string;
  readonly attempt: number;
  readonly dueAtMs: number;
  readonly claimedAtMs: number;
}

export class EventTracker {
  /** Claims per task id, in arrival order. */
  readonly claims = new Map<string, ClaimRecord[]>();
  readonly reclaimedBy = new Map<string, number>();
  readonly finished = new Map<string, number>();
  leaseLost = 0;
  /** When (epoch ms, this process's clock) the first reclaim was reported. */
  firstReclaimAt: number | null = null;
  readonly errors: string[] = [];
  /** Discovery's store queries, as the workers reported them: claims (empty ones among them) and reads of near tasks. */
  readonly queries = { claims: 0, emptyClaims: 0, peeks: 0 };
  /** Claims per worker id. */
  readonly claimsBy = new Map<string, number>();
  /** Hybrid claims by cause per worker id, as each worker last reported them. */
  readonly causesBy = new Map<string, Readonly<Record<string, { readonly claims: number; readonly empty: number }>>>();

  record(message: WorkerMessage): void {
    switch (message.type) {
      case 'claimed': {
        const list = this.claims.get(message.taskId) ?? [];
        list.push({ workerId: message.workerId, attempt: message.attempt, dueAtMs: Date.parse(message.dueAt), claimedAtMs: Date.parse(message.claimedAt) });
        this.claims.set(message.taskId, list);
        this.claimsBy.set(message.workerId, (this.claimsBy.get(message.workerId) ?? 0) + 1);
        break;
      }
      case 'reclaimed':
        this.firstReclaimAt ??= Date.now();
        this.reclaimedBy.set(message.workerId, (this.reclaimedBy.get(message.workerId) ?? 0) + 1);
        break;
      case 'finished':
        this.finished.set(message.outcome, (this.finished.get(message.outcome) ?? 0) + 1);
        break;
      case 'leaseLost':
        this.leaseLost += 1;
        break;
      case 'query':
        if (message.op === 'peek') this.queries.peeks += 1;
        else {
          this.queries.claims += 1;
          if (message.tasks === 0) this.queries.emptyClaims += 1;
        }
        break;
      case 'causes':
        this.causesBy.set(message.workerId, message.claimsByCause);
        break;
      case 'error':
        if (this.errors.length < 20) this.errors.push(`${message.workerId} ${message.operation}: ${message.message}`);
        break;
      default:
        break;
    }
  }

  /** Hybrid claims by cause over all workers (`cause: claims/empty`); a SIGKILLed worker counts up to its last report. */
  get claimsByCause(): Record<string, { claims: number; empty: number }> {
    const total: Record<string, { claims: number; empty: number }> = {};
    for (const causes of this.causesBy.values()) {
      for (const [cause, { claims, empty }] of Object.entries(causes)) {
        const t = (total[cause] ??= { claims: 0, empty: 0 });
        t.claims += claims;
        t.empty += empty;
      }
    }
    return total;
  }

  get claimEvents(): number {
    let n = 0;
    for (const list of this.claims.values()) n += list.length;
    return n;
  }

  get reclaimed(): number {
    let n = 0;
    for (const count of this.reclaimedBy.values()) n += count;
    return n;
  }

  /** Claims whose claim time (database clock) is before the task's due time. */
  get earlyClaims(): number {
    let n = 0;
    for (const list of this.claims.values()) for (const c of list) if (c.claimedAtMs < c.dueAtMs) n += 1;
    return n;
  }

  /** Lateness due → claim of the first claim reported per task, in ms (database clock). */
  lateness(): Summary {
    const values: number[] = [];
    for (const list of this.claims.values()) {
      const first = list.reduce((a, b) => (b.attempt < a.attempt ? b : a));
      values.push(first.claimedAtMs - first.dueAtMs);
    }
    return summarize(values);
  }
}
