/**
 * Deliberately broken SQL for the negative controls, against the schema `@postpone/postgres`
 * migrated (`<schema>.task`). It lives in the harness only: it shows that the tests can see the
 * defects the product's statements prevent. Never use it outside a negative control.
 *
 * Times come back as epoch milliseconds (floored `float8`), like the store's own statements.
 */
import pg from 'pg';

function ms(expr: string): string {
  return `floor(extract(epoch from ${expr}) * 1000)::float8`;
}

/**
 * The columns a row keeps when it moves between `task` and `task_history` (migration 11; `history`
 * has these and `finished_at`). `state`, the lease, `attempt`, `result` and `updated_at` are set by
 * the statement that moves it.
 */
const KEPT = ['id', 'kind', 'key', 'queue', 'priority', 'payload', 'due_at', 'failures', 'max_attempts', 'cancel_requested', 'last_error', 'created_at', 'trace_context', 'retry', 'retry_of', 'retried_as'];

/** The broken statements of one schema. */
export function negativeStatements(schema: string) {
  const q = pg.escapeIdentifier(schema);
  const task = `${q}.task`;
  const history = `${q}.task_history`;
  const kept = KEPT.join(', ');
  const lease = `clock_timestamp() + ($3::float8 * interval '1 millisecond')`;
  const effectNoUnique = `${q}.effect_nounique`;
  return Object.freeze({
    /** An effect table without a primary or unique key: duplicates are stored, not refused. */
    effectNoUniqueCreate: `create table if not exists ${effectNoUnique} (
  task_id bigint not null,
  attempt integer not null,
  worker text not null,
  created_at timestamptz not null default clock_timestamp()
)`,

    /** `$1` task id, `$2` attempt, `$3` worker. */
    effectNoUniqueInsert: `insert into ${effectNoUnique} (task_id, attempt, worker) values ($1::bigint, $2::int, $3::text)`,

    /** No parameters → `{ effects, tasks }`: rows and distinct tasks in `effect_nounique`. */
    effectNoUniqueCount: `select count(*)::int as effects, count(distinct task_id)::int as tasks from ${effectNoUnique}`,

    /**
     * Naive claim, step 1: `$1` limit → `{ id }` rows. A plain SELECT: no lock, so every concurrent
     * reader sees the same "still SCHEDULED" rows.
     */
    naiveSelectDue: `select id::text as id from ${task}
 where state = 'SCHEDULED' and due_at <= now()
 order by due_at
 limit $1::int`,

    /**
     * Naive claim, step 2: `$1` id, `$2` owner, `$3` lease ms → the claimed row. UPDATE by id with no
     * state guard: a row another worker claimed (or even completed) in between is claimed again —
     * since the live/history split (migration 11) a completed row is in `task_history`, so the
     * naive claim moves it back into `task` as CLAIMED, as its UPDATE once did in place.
     */
    naiveClaimById: `with upd as (
  update ${task}
     set state = 'CLAIMED', attempt = attempt + 1, lease_owner = $2::text, lease_until = ${lease}, updated_at = now()
   where id = $1::bigint
  returning id, attempt, due_at, lease_until
), back as (
  delete from ${history} h where h.id = $1::bigint returning h.*
), ins as (
  insert into ${task} (${kept}, state, attempt, lease_owner, lease_until, result, updated_at) overriding system value
  select ${kept}, 'CLAIMED', attempt + 1, $2::text, ${lease}, result, now() from back
  returning id, attempt, due_at, lease_until
)
select id::text as id, attempt, ${ms('due_at')} as dueatms, ${ms('lease_until')} as leaseuntilms, ${ms('now()')} as claimedatms
  from (select * from upd union all select * from ins) r`,

    /**
     * Unfenced complete: `$1` id, `$2` result JSON text → `{ id }` when the row exists. No attempt
     * guard and no state guard: a late worker overwrites the result of the current attempt. A live
     * row moves to `task_history` as DONE (since migration 12 `task` refuses a DONE row); a row
     * already there gets the result written over.
     */
    unfencedComplete: `with moved as (
  delete from ${task} t where t.id = $1::bigint returning t.*
), ins as (
  insert into ${history} (${kept}, state, attempt, lease_owner, lease_until, result, updated_at, finished_at)
  select ${kept}, 'DONE', attempt, null, null, $2::text::jsonb, now(), now() from moved
  returning id
), upd as (
  update ${history} h set state = 'DONE', result = $2::text::jsonb, updated_at = now() where h.id = $1::bigint
  returning id
)
select id::text as id from ins union all select id::text as id from upd`,
  });
}

export type NegativeStatements = ReturnType<typeof negativeStatements>;
