/**
 * Output of the CLI: aligned text tables for people, JSON for scripts. Every value is printed as
 * text (no terminal control characters pass through: they are shown escaped).
 */
import type { Completion, PausedEntry, RateLimitRecord, StoreStats, TaskRecord, UnclaimedKinds } from '@postpone/core';
import { NOTICE_QUEUE_LIMIT, type VacuumHealth } from '@postpone/postgres';

/** Control characters (C0, C1, DEL) shown as `\uXXXX`, so a payload cannot drive the terminal. */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** An aligned table with a header row; cells are cut to `maxWidth` characters. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], maxWidth = 60): string {
  const cut = (s: string) => {
    const p = printable(s);
    return p.length > maxWidth ? `${p.slice(0, maxWidth - 1)}…` : p;
  };
  const cells = [header, ...rows].map((r) => r.map(cut));
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd()).join('\n');
}

const iso = (d: Date | null) => (d === null ? '-' : d.toISOString());

/**
 * The two counts of a task, as the dashboard says them: `attempt` counts every claim (it is the
 * fencing token: hand-backs and reclaims count too), `failures` counts the attempts used up (fails and
 * reclaimed leases, never a release), and the task goes DEAD when failures reach `maxAttempts`
 * (docs/contract.md#attempts). So `attempt 4, failures 1 of 2 allowed`, never `4/2`.
 */
export function attemptsText(task: Pick<TaskRecord, 'attempt' | 'failures' | 'maxAttempts'>): string {
  return `attempt ${task.attempt}, failures ${task.failures} of ${task.maxAttempts} allowed`;
}

export function taskTable(tasks: readonly TaskRecord[]): string {
  return table(
    ['ID', 'KIND', 'QUEUE', 'PRIORITY', 'KEY', 'STATE', 'DUE', 'ATTEMPT', 'FAILURES', 'RETRY', 'LAST ERROR'],
    tasks.map((t) => [
      t.id,
      t.kind,
      t.queue,
      String(t.priority),
      t.key ?? '-',
      t.state,
      iso(t.dueAt),
      String(t.attempt),
      `${t.failures} of ${t.maxAttempts}`,
      t.retriedAs !== null ? `→ ${t.retriedAs}` : t.retryOf !== null ? `← ${t.retryOf}` : '-',
      t.lastError ?? '-',
    ]),
  );
}

export function taskDetail(task: TaskRecord, completion: Completion | null): string {
  const rows: [string, string][] = [
    ['id', task.id],
    ['kind', task.kind],
    ['queue', task.queue],
    ['priority', String(task.priority)],
    ['key', task.key ?? '-'],
    ['state', task.state + (task.cancelRequested ? ' (cancel requested)' : '')],
    ['due', iso(task.dueAt)],
    ['attempts', attemptsText(task)],
    ['lease', task.leaseOwner === null ? '-' : `${task.leaseOwner} until ${iso(task.leaseUntil)}`],
    ['payload', JSON.stringify(task.payload)],
    ['result', task.result === null ? '-' : JSON.stringify(task.result)],
    ['progress', task.progress === undefined ? '-' : JSON.stringify(task.progress)],
    ['last error', task.lastError ?? '-'],
    ['retry of', task.retryOf ?? '-'],
    ['retried as', task.retriedAs ?? '-'],
    ['completed', completion === null ? '-' : `attempt ${completion.attempt} by ${completion.worker ?? '(unknown: before migration 13)'} at ${iso(completion.finishedAt)}`],
    ['created', iso(task.createdAt)],
    ['updated', iso(task.updatedAt)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${printable(v)}`).join('\n');
}

/**
 * `postpone stats`: the live counts, and per kind; a kind paused (docs/contract.md#pause-and-resume)
 * is marked `(paused)` in the table (`pausedKinds`).
 */
export function statsText(stats: StoreStats, pausedKinds: ReadonlySet<string> = new Set()): string {
  const lateness = stats.oldestDueLatenessMs === null ? 'none due' : `${stats.oldestDueLatenessMs} ms`;
  const head = [
    `now                 ${iso(stats.now)}`,
    `scheduled           ${stats.scheduled} (due ${stats.due})`,
    `claimed             ${stats.claimed}`,
    `dead                ${stats.dead}`,
    `oldest due waiting  ${lateness}`,
  ].join('\n');
  if (stats.byKind.length === 0) return head;
  return `${head}\n\n${table(
    ['KIND', 'SCHEDULED', 'DUE', 'CLAIMED', 'DEAD'],
    stats.byKind.map((k) => [pausedKinds.has(k.kind) ? `${k.kind} (paused)` : k.kind, String(k.scheduled), String(k.due), String(k.claimed), String(k.dead)]),
  )}`;
}

/**
 * The paused queues and kinds (`store.listPaused`, docs/contract.md#pause-and-resume), a section of
 * `postpone stats` and the output of `postpone paused`: a table, or one line saying none is.
 */
export function pausedText(paused: readonly PausedEntry[]): string {
  if (paused.length === 0) return 'paused: none';
  return `paused (no new claims; running tasks finish):\n${table(
    ['SCOPE', 'NAME', 'SINCE', 'BY', 'REASON'],
    paused.map((p) => [p.scope, p.name, iso(p.pausedAt), p.pausedBy ?? '', p.reason ?? '']),
  )}`;
}

/** `postpone health`: one row per table (`task_history` summed over its partitions, their number shown), then the oldest snapshot (docs/contract.md#vacuum). */
export function healthText(health: VacuumHealth): string {
  const when = (d: Date | null) => (d === null ? 'never' : iso(d));
  const tables = table(
    ['TABLE', 'LIVE', 'DEAD', 'HOT/UPDATES', 'AUTOVACUUMS', 'LAST AUTOVACUUM'],
    health.tables.map((t) => [t.partitions === undefined ? t.table : `${t.table} (${t.partitions} partitions)`, String(t.liveRows), String(t.deadRows), `${t.hotUpdates}/${t.updates}`, String(t.autovacuums), when(t.lastAutovacuum)]),
  );
  const s = health.oldestSnapshot;
  const oldest =
    s === null
      ? 'nothing holds back cleanup'
      : `${s.source} ${s.holder}${s.pid === null ? '' : ` (pid ${s.pid}${s.state === null ? '' : `, ${s.state}`})`}: xmin ${s.xminAge} transactions old${s.ageMs === null ? '' : `, open ${s.ageMs} ms`}`;
  const queue = `${(health.notifyQueueUsage * 100).toFixed(1)} % used${
    health.notifyQueueUsage >= NOTICE_QUEUE_LIMIT ? ' — past half full: Postpone sends no notices (workers poll); a session that LISTENs is not reading' : ''
  }`;
  return `now                 ${iso(health.now)}\n${tables}\n\noldest snapshot     ${printable(oldest)}\nnotify queue        ${queue}`;
}

/**
 * The kinds nobody claims (`store.unclaimedKinds`, issue #27), a section of `postpone stats`: a table
 * of the (queue, kind) pairs whose oldest task has been due at least `dueForMs` with none CLAIMED, or
 * one line saying there is none.
 */
export function unclaimedText(unclaimed: UnclaimedKinds): string {
  const title = `kinds due with nobody claiming (due ${unclaimed.dueForMs} ms or more, none CLAIMED)`;
  if (unclaimed.kinds.length === 0) return `${title}: none`;
  return `${title}:\n${table(
    ['QUEUE', 'KIND', 'DUE', 'OLDEST DUE', 'WAITING'],
    unclaimed.kinds.map((k) => [k.queue, k.kind, k.due >= 1_000 ? `${k.due}+` : String(k.due), iso(k.oldestDueAt), `${k.overdueMs} ms`]),
  )}`;
}

/** The row of `postpone health` for the kinds nobody claims: their number, and each as `queue/kind (due, waiting)`. */
export function unclaimedRow(unclaimed: UnclaimedKinds): string {
  const list = unclaimed.kinds.map((k) => `${k.queue}/${k.kind} (${k.due >= 1_000 ? `${k.due}+` : k.due} due, ${k.overdueMs} ms)`);
  return `unclaimed kinds     ${printable(unclaimed.kinds.length === 0 ? `none due ${unclaimed.dueForMs} ms or more without a claim` : `${unclaimed.kinds.length}: ${list.join(', ')}`)}`;
}

/** `postpone limits`: one row per rate limit (docs/contract.md#rate-limits) with its use in the window ending now, or one line when there is none. */
export function rateLimitsText(limits: readonly RateLimitRecord[]): string {
  if (limits.length === 0) return 'no rate limits';
  return table(
    ['SCOPE', 'NAME', 'LIMIT', 'WINDOW MS', 'USED NOW', 'REOPENS AT'],
    limits.map((l) => [l.scope, l.name, String(l.limit), String(l.windowMs), String(l.used), l.used < l.limit ? 'open' : iso(l.reopensAt)]),
  );
}
