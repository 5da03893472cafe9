/**
 * Pause and resume a queue or a kind (docs/contract.md#pause-and-resume; `Store.pause`, `resume`,
 * `listPaused` of `@postpone/core`): migration 15 and its statements, once, for both drivers;
 * conventions as in `./sql.ts` (`$1` is `now` or null, times as epoch ms, aliases without underscores).
 * The claim and peek read the table through `pausedLevels` in `./sql.ts`.
 */
import { ms, NOTICE_QUEUE_LIMIT, NOW, quoteIdent } from './sql.js';

/** The migration number of the `pause` table (one constant, so it can be renumbered at a merge). */
export const PAUSE_MIGRATION_VERSION = 15;

/**
 * Migration 15 — `pause`: one row per paused queue (`scope = 'queue'`) or kind (`scope = 'kind'`,
 * every queue), primary key `(scope, name)`, so a second pause of the same target is a conflict
 * (`on conflict do nothing`), never a second row. `paused_at` (the store's now), `paused_by` and
 * `reason` are for operators. The claim's levels probe the primary key (`./sql.ts`), so the table
 * stays tiny: a row per pause, deleted by resume. A new table, additive: code before 15 never reads
 * it (no `minReader`); it also ignores pauses, so pause only once every process runs code of 15.
 * Re-runnable (`if not exists`).
 */
export function pauseMigrationSql(schema: string): string {
  return `create table if not exists ${quoteIdent(schema)}.pause (
  scope text not null check (scope in ('queue', 'kind')),
  name text not null,
  paused_at timestamptz not null default now(),
  paused_by text,
  reason text,
  primary key (scope, name)
);`;
}

/** Row of `pauseList`. */
export interface PauseRow {
  scope: string;
  name: string;
  pausedatms: number;
  pausedby: string | null;
  reason: string | null;
}

/**
 * `pg_notify` of a pause notice `{"op":"paused"|"resumed","scope":…,"name":…}` on `$6`/`$3` for row `r`
 * (parsed by `parsePauseNotice` in `./notice.ts`), left out while the NOTIFY queue is at least
 * {@link NOTICE_QUEUE_LIMIT} full, as every notice of the store: a hybrid worker's fallback re-read
 * finds the change anyway.
 */
function pauseNotice(op: 'paused' | 'resumed', channel: string): string {
  const call = `pg_notify(${channel}, json_build_object('op', '${op}', 'scope', r.scope, 'name', r.name)::text) is null`;
  return `case when (select pg_notification_queue_usage()) < ${NOTICE_QUEUE_LIMIT} then ${call} end`;
}

export function pauseStatements(schema: string) {
  const pause = `${quoteIdent(schema)}.pause`;
  return Object.freeze({
    /**
     * `$1` now, `$2` scope, `$3` name, `$4` paused by or null, `$5` reason or null, `$6` channel → one
     * `{ scope, notified }` row when this call paused it, none when it was paused already (the first
     * row is kept: `on conflict do nothing`, decided by the primary key). The notice is delivered at
     * commit (PostgreSQL 17 NOTIFY), after the row is visible to every claim.
     */
    pauseInsert: `with r as (
  insert into ${pause} (scope, name, paused_at, paused_by, reason)
  values ($2::text, $3::text, ${NOW}, $4::text, $5::text)
  on conflict (scope, name) do nothing
  returning scope, name
)
select r.scope, ${pauseNotice('paused', '$6::text')} as notified from r`,

    /**
     * `$1` scope, `$2` name, `$3` channel → one `{ scope, notified }` row when it was paused, none
     * otherwise. The `resumed` notice makes listening hybrid workers re-read at once: the tasks that
     * fell due meanwhile are placed and claimed without waiting for their fallback re-read.
     */
    pauseDelete: `with r as (
  delete from ${pause} where scope = $1::text and name = $2::text returning scope, name
)
select r.scope, ${pauseNotice('resumed', '$3::text')} as notified from r`,

    /** No parameters → {@link PauseRow} rows: queues first, then kinds, each by name (byte order). */
    pauseList: `select p.scope, p.name, ${ms('p.paused_at')} as pausedatms, p.paused_by as pausedby, p.reason
  from ${pause} p
 order by p.scope = 'queue' desc, p.name collate "C"`,
  });
}

export type PauseStatements = ReturnType<typeof pauseStatements>;
