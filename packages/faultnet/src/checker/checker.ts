/**
 * One history per fault case, judged whole (Jepsen's method): every schedule, claim (with the
 * database's `now()` at the claim and the task's `due_at`), renewal, complete / fail / release
 * outcome, cancel outcome, reclaim, then the effect rows and every task's final row read at the end.
 * {@link checkHistory} reports each violation with the offending task id.
 *
 * Times: `claimedAtMs` and `dueAtMs` come from the database clock (epoch ms); a cancel's
 * `invokedAtMs` / `returnedAtMs` from the test process's wall clock, which is the database host's
 * clock here (127.0.0.1; the test process is never under faketime).
 */

/** Every kind of violation the checker knows. */
export const VIOLATION_KINDS = [
  'claim-before-due',
  'claim-after-cancelled',
  'duplicate-effect',
  'effect-not-done-attempt',
  'lost',
  'terminal-changed',
  'attempt-not-by-one',
  'stale-commit-accepted',
] as const;
export type ViolationKind = (typeof VIOLATION_KINDS)[number];

export interface Violation {
  readonly kind: ViolationKind;
  readonly taskId: string;
  readonly detail: string;
}

export type HistoryOp =
  | { readonly type: 'schedule'; readonly id: string; readonly dueAtMs: number }
  | { readonly type: 'claim'; readonly worker: string; readonly id: string; readonly attempt: number; readonly claimedAtMs: number; readonly dueAtMs: number }
  | { readonly type: 'renew'; readonly worker: string; readonly id: string; readonly attempt: number; readonly ok: boolean }
  /** `outcome`: DONE, CANCELLED_BEFORE_COMMIT or REJECTED_STALE. */
  | { readonly type: 'complete'; readonly worker: string; readonly id: string; readonly attempt: number; readonly outcome: string }
  /** `outcome`: SCHEDULED, DEAD, CANCELLED or REJECTED_STALE. */
  | { readonly type: 'fail'; readonly worker: string; readonly id: string; readonly attempt: number; readonly outcome: string }
  /** `outcome`: SCHEDULED, CANCELLED or REJECTED_STALE. */
  | { readonly type: 'release'; readonly worker: string; readonly id: string; readonly attempt: number; readonly outcome: string }
  /** `outcome`: SCHEDULED, DEAD or CANCELLED. */
  | { readonly type: 'reclaim'; readonly worker: string; readonly id: string; readonly attempt: number; readonly outcome: string }
  | { readonly type: 'cancel'; readonly id: string; readonly outcome: string; readonly invokedAtMs: number; readonly returnedAtMs: number };

/** An effect row read at the end: `source` names the table (the handler's `app_effect` with its primary key, the harness's `history_effect` without one). */
export interface EffectRecord {
  readonly source: string;
  readonly id: string;
  readonly attempt: number;
  readonly worker: string;
}

/** A task's row at the end of the run. */
export interface FinalTask {
  readonly id: string;
  readonly state: string;
  readonly attempt: number;
}

export interface History {
  readonly ops: readonly HistoryOp[];
  readonly effects: readonly EffectRecord[];
  readonly final: readonly FinalTask[];
  /**
   * Claims that may have happened without being observed: a SIGKILLed worker's claim can commit
   * before its report leaves the process. Up to this many attempts missing from the observed claims
   * are counted as `unobservedClaims`, not as violations (default 0).
   */
  readonly unobservedClaimsAllowed?: number;
}

export interface HistoryStats {
  readonly tasks: number;
  readonly claims: number;
  readonly renewals: number;
  readonly renewalsRefused: number;
  readonly completes: number;
  readonly fails: number;
  readonly releases: number;
  readonly reclaims: number;
  readonly cancels: number;
  readonly effects: number;
  readonly unobservedClaims: number;
  /** Final states: DONE, DEAD, CANCELLED, and anything else. */
  readonly finalStates: Readonly<Record<string, number>>;
}

export interface HistoryVerdict {
  readonly violations: readonly Violation[];
  readonly counts: Readonly<Record<ViolationKind, number>>;
  readonly stats: HistoryStats;
}

const TERMINAL = new Set(['DONE', 'DEAD', 'CANCELLED']);

/** Collects a history as it happens (test side and children's reports). */
export class HistoryRecorder {
  readonly ops: HistoryOp[] = [];
  effects: EffectRecord[] = [];
  final: FinalTask[] = [];
  unobservedClaimsAllowed = 0;

  add(op: HistoryOp): void {
    this.ops.push(op);
  }

  /** Records scheduled tasks (`id`, `dueAt` from the store's answer). */
  scheduled(tasks: readonly { readonly id: string; readonly dueAt: Date }[]): void {
    for (const t of tasks) this.ops.push({ type: 'schedule', id: t.id, dueAtMs: t.dueAt.getTime() });
  }

  /** Calls `cancel` and records its outcome with the wall-clock times around the call; a thrown error records nothing and rethrows. */
  async cancel(id: string, cancel: (id: string) => Promise<string>): Promise<string> {
    const invokedAtMs = Date.now();
    const outcome = await cancel(id);
    this.ops.push({ type: 'cancel', id, outcome, invokedAtMs, returnedAtMs: Date.now() });
    return outcome;
  }

  history(): History {
    return { ops: this.ops, effects: this.effects, final: this.final, unobservedClaimsAllowed: this.unobservedClaimsAllowed };
  }
}

interface TaskOps {
  schedule?: Extract<HistoryOp, { type: 'schedule' }>;
  claims: Extract<HistoryOp, { type: 'claim' }>[];
  /** complete / fail / release / reclaim answers. */
  ends: Extract<HistoryOp, { type: 'complete' | 'fail' | 'release' | 'reclaim' }>[];
  cancels: Extract<HistoryOp, { type: 'cancel' }>[];
  effects: EffectRecord[];
  final?: FinalTask;
}

/** Is this end an accepted write that moved the attempt out of CLAIMED (not a stale rejection)? */
function accepted(end: TaskOps['ends'][number]): boolean {
  return end.outcome !== 'REJECTED_STALE';
}

/** The terminal state an accepted end leads to, if any. */
function terminalOf(end: TaskOps['ends'][number]): string | undefined {
  if (end.type === 'complete') return end.outcome === 'DONE' ? 'DONE' : end.outcome === 'CANCELLED_BEFORE_COMMIT' ? 'CANCELLED' : undefined;
  return TERMINAL.has(end.outcome) ? end.outcome : undefined;
}

/**
 * Judges a whole history.
 * @returns every violation (with task id and detail), counts per kind, and figures of the run
 */
export function checkHistory(history: History): HistoryVerdict {
  const tasks = new Map<string, TaskOps>();
  const of = (id: string): TaskOps => {
    let t = tasks.get(id);
    if (!t) tasks.set(id, (t = { claims: [], ends: [], cancels: [], effects: [] }));
    return t;
  };
  let renewals = 0;
  let renewalsRefused = 0;
  const n = { complete: 0, fail: 0, release: 0, reclaim: 0, cancel: 0 };
  for (const op of history.ops) {
    switch (op.type) {
      case 'schedule':
        of(op.id).schedule = op;
        break;
      case 'claim':
        of(op.id).claims.push(op);
        break;
      case 'renew':
        if (op.ok) renewals++;
        else renewalsRefused++;
        break;
      case 'cancel':
        n.cancel++;
        of(op.id).cancels.push(op);
        break;
      default:
        n[op.type]++;
        of(op.id).ends.push(op);
    }
  }
  for (const e of history.effects) of(e.id).effects.push(e);
  for (const f of history.final) of(f.id).final = f;

  const violations: Violation[] = [];
  const report = (kind: ViolationKind, taskId: string, detail: string) => violations.push({ kind, taskId, detail });
  let unobserved = 0;
  const unobservedAllowed = history.unobservedClaimsAllowed ?? 0;
  const finalStates: Record<string, number> = {};

  for (const [id, t] of tasks) {
    const final = t.final;
    if (final) finalStates[final.state] = (finalStates[final.state] ?? 0) + 1;

    // Lost: scheduled (or seen) but never terminal by the end.
    if (!final) report('lost', id, 'task row missing at the end');
    else if (!TERMINAL.has(final.state)) report('lost', id, `final state ${final.state} at attempt ${final.attempt}`);

    // Claims: never before due (database clock on both sides).
    for (const c of t.claims) {
      if (c.claimedAtMs < c.dueAtMs) report('claim-before-due', id, `attempt ${c.attempt} by ${c.worker} claimed ${c.dueAtMs - c.claimedAtMs} ms before due`);
    }

    // Claims after a cancel that answered CANCELLED (the task was waiting and is terminal now).
    const cancelled = t.cancels.filter((c) => c.outcome === 'CANCELLED');
    if (cancelled.length > 0) {
      const returnedAt = Math.min(...cancelled.map((c) => c.returnedAtMs));
      for (const c of t.claims) {
        if (c.claimedAtMs > returnedAt) report('claim-after-cancelled', id, `attempt ${c.attempt} by ${c.worker} claimed ${c.claimedAtMs - returnedAt} ms after cancel returned CANCELLED`);
      }
    }

    // Attempts: one claim per attempt, 1..final.attempt, in claim order.
    const attempts = t.claims.map((c) => c.attempt);
    const seen = new Set<number>();
    for (const a of attempts) {
      if (seen.has(a)) report('attempt-not-by-one', id, `attempt ${a} claimed more than once`);
      seen.add(a);
    }
    const byTime = [...t.claims].sort((a, b) => a.claimedAtMs - b.claimedAtMs || a.attempt - b.attempt);
    for (let i = 1; i < byTime.length; i++) {
      if (byTime[i]!.attempt <= byTime[i - 1]!.attempt) {
        report('attempt-not-by-one', id, `attempt ${byTime[i]!.attempt} claimed after attempt ${byTime[i - 1]!.attempt}`);
      }
    }
    if (final) {
      for (const a of seen) if (a < 1 || a > final.attempt) report('attempt-not-by-one', id, `claimed attempt ${a} outside 1..${final.attempt} (final attempt)`);
      for (let a = 1; a <= final.attempt; a++) if (!seen.has(a)) unobserved++;
    }

    // Each attempt leaves CLAIMED once: a second accepted end of one attempt is a stale write
    // accepted (a repeated DONE of the same attempt is the idempotent retry and allowed).
    const acceptedEnds = t.ends.filter(accepted);
    const byAttempt = new Map<number, TaskOps['ends']>();
    for (const e of acceptedEnds) byAttempt.set(e.attempt, [...(byAttempt.get(e.attempt) ?? []), e]);
    for (const [attempt, ends] of byAttempt) {
      const kinds = new Set(ends.map((e) => `${e.type}:${e.outcome}`));
      if (kinds.size > 1) report('stale-commit-accepted', id, `attempt ${attempt} ended ${ends.length} ways: ${[...kinds].join(', ')}`);
    }
    const maxClaimed = attempts.length > 0 ? Math.max(...attempts) : 0;
    for (const e of acceptedEnds) {
      if (e.type === 'complete' && e.outcome === 'DONE') {
        if (e.attempt < maxClaimed) report('stale-commit-accepted', id, `DONE accepted from attempt ${e.attempt} by ${e.worker} while attempt ${maxClaimed} was claimed`);
        else if (final && (final.state !== 'DONE' || final.attempt !== e.attempt)) {
          report('stale-commit-accepted', id, `DONE accepted from attempt ${e.attempt} by ${e.worker}; final ${final.state} at attempt ${final.attempt}`);
        }
      }
    }

    // Terminal states: every terminal answer agrees with the others and with the final row.
    const terminals = new Set<string>();
    for (const e of acceptedEnds) {
      const to = terminalOf(e);
      if (to) terminals.add(to);
    }
    for (const _c of cancelled) terminals.add('CANCELLED');
    if (terminals.size > 1) report('terminal-changed', id, `terminal answers disagree: ${[...terminals].join(', ')}`);
    if (final && terminals.size === 1) {
      const only = [...terminals][0]!;
      if (final.state !== only) report('terminal-changed', id, `answered ${only}, final state ${final.state}`);
    }
    for (const e of acceptedEnds) {
      const to = terminalOf(e);
      const later = to ? t.claims.filter((c) => c.attempt > e.attempt) : [];
      if (to && later.length > 0) report('terminal-changed', id, `${to} at attempt ${e.attempt}, then claimed at attempt ${later[0]!.attempt}`);
    }

    // Effects: at most one per table, and only from the attempt that is DONE.
    const bySource = new Map<string, EffectRecord[]>();
    for (const e of t.effects) bySource.set(e.source, [...(bySource.get(e.source) ?? []), e]);
    for (const [source, rows] of bySource) {
      if (rows.length > 1) report('duplicate-effect', id, `${rows.length} rows in ${source}: ${rows.map((r) => `${r.attempt}:${r.worker}`).join(',')}`);
      for (const r of rows) {
        if (final?.state !== 'DONE' || final.attempt !== r.attempt) {
          report('effect-not-done-attempt', id, `${source} row of attempt ${r.attempt} by ${r.worker}; final ${final ? `${final.state} at attempt ${final.attempt}` : 'missing'}`);
        }
      }
    }
  }

  if (unobserved > unobservedAllowed) {
    // Report each task with a gap, so the ids are there to look at.
    for (const [id, t] of tasks) {
      if (!t.final) continue;
      const seen = new Set(t.claims.map((c) => c.attempt));
      const missing = [];
      for (let a = 1; a <= t.final.attempt; a++) if (!seen.has(a)) missing.push(a);
      if (missing.length > 0) report('attempt-not-by-one', id, `attempts ${missing.join(',')} never claimed (final attempt ${t.final.attempt}); ${unobserved} unobserved > ${unobservedAllowed} allowed`);
    }
  }

  const counts = Object.fromEntries(VIOLATION_KINDS.map((k) => [k, 0])) as Record<ViolationKind, number>;
  for (const v of violations) counts[v.kind]++;
  return {
    violations,
    counts,
    stats: {
      tasks: tasks.size,
      claims: history.ops.filter((o) => o.type === 'claim').length,
      renewals,
      renewalsRefused,
      completes: n.complete,
      fails: n.fail,
      releases: n.release,
      reclaims: n.reclaim,
      cancels: n.cancel,
      effects: history.effects.length,
      unobservedClaims: unobserved,
      finalStates,
    },
  };
}

/** A short text of the first `limit` violations, for a CASE line or an error message. */
export function describeViolations(violations: readonly Violation[], limit = 5): string[] {
  return violations.slice(0, limit).map((v) => `${v.kind}:${v.taskId}`);
}

/** What an asynchronous failover lost, as {@link failoverLoss} finds it on the new primary. */
export interface FailoverLoss {
  /** Schedules the store acknowledged whose task row is not on the new primary. */
  readonly schedules: readonly string[];
  /**
   * DONE transitions a worker saw committed (`complete` answered DONE) whose commit is not on the new
   * primary: the effect rows written in that same transaction (`source`, one per attempt and worker)
   * are not there, or the same attempt was claimed again after it (by the same worker: the claim was
   * lost too, the task ran again there under the same attempt). Each as `id:attempt:worker`.
   */
  readonly done: readonly string[];
  /**
   * Claims a worker saw answered whose commit is not on the new primary: the same attempt of the
   * task was handed out again there. Each as `id:attempt` (once per extra claim).
   */
  readonly claims: readonly string[];
  /** Effect rows on the new primary whose task is not DONE at that attempt there (local effects inconsistent with DONE). */
  readonly effectsWithoutDone: number;
  /** Tasks with more than one row of one effect table on the new primary. */
  readonly duplicateEffects: number;
  /** Checker violations on tasks that lost nothing: what the loss does not explain. */
  readonly unexplained: readonly Violation[];
}

/**
 * Judges a history whose final rows and effects were read on a promoted standby of an asynchronous
 * primary: what the failover lost (acknowledged schedules and DONE transitions not there), whether
 * the local effects that are there agree with DONE (an effect row only with its task DONE at that
 * attempt, at most one per table), and which checker violations are not explained by the loss.
 * @param source the effect table written in each completing transaction (default `app_effect`)
 */
export function failoverLoss(history: History, verdict: HistoryVerdict, source = 'app_effect'): FailoverLoss {
  const rows = new Set(history.final.map((f) => f.id));
  const schedules = history.ops.filter((o) => o.type === 'schedule' && !rows.has(o.id)).map((o) => o.id);
  const effects = new Set(history.effects.filter((e) => e.source === source).map((e) => `${e.id}:${e.attempt}:${e.worker}`));
  const done: string[] = [];
  const claims: string[] = [];
  const claimed = new Set<string>();
  // Per worker the ops are in the order it saw them: a DONE, then a claim of the same attempt by the same worker.
  const doneBefore = new Set<string>();
  for (const o of history.ops) {
    if (o.type === 'claim') {
      const attemptKey = `${o.id}:${o.attempt}`;
      if (claimed.has(attemptKey)) claims.push(attemptKey);
      claimed.add(attemptKey);
      const key = `${attemptKey}:${o.worker}`;
      if (doneBefore.delete(key)) done.push(key);
    } else if (o.type === 'complete' && o.outcome === 'DONE') {
      const key = `${o.id}:${o.attempt}:${o.worker}`;
      doneBefore.add(key);
    }
  }
  for (const key of doneBefore) if (!effects.has(key)) done.push(key);
  const lostIds = new Set([...schedules, ...done.map((k) => k.split(':')[0]!), ...claims.map((k) => k.split(':')[0]!)]);
  return {
    schedules,
    done: [...new Set(done)],
    claims,
    effectsWithoutDone: verdict.counts['effect-not-done-attempt'],
    duplicateEffects: verdict.counts['duplicate-effect'],
    unexplained: verdict.violations.filter((v) => !lostIds.has(v.taskId)),
  };
}
