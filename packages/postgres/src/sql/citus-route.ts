/**
 * Citus routing during a worker node's outage (issue #25, `citus_worker_node_down`): the statements
 * that must keep working in a healthy shard group while ANOTHER worker node is down, sent in forms
 * that Citus 13.2 routes to the group's one node.
 *
 * The cause (measured with `citus.log_remote_commands` and a stopped worker node, docs/sharding.md
 * "A worker node down"): Citus plans an `INSERT … SELECT` that is not the top-level statement — a
 * data-modifying CTE `insert into task_history … select … from gone` of fail, release, snooze,
 * cancel and reclaim, or `taskInsertMany`'s `upserted` — as a Distributed Subplan, and the
 * statement then opens a connection to EVERY worker node to spread the intermediate results, even
 * when all its tables sit in one healthy group: with any node down it fails (08006 "connection to
 * the remote node … failed"). The same `INSERT … SELECT` as the top-level statement is planned
 * "pull to coordinator": the SELECT runs on the group's node, its rows are copied back to that node,
 * and no other node is contacted (why the one-statement complete always kept working). A plain
 * UPDATE or DELETE CTE, a MATERIALIZED `for update` pick, or a CTE read twice are all routed whole
 * to the one node (EXPLAIN: one Task, no Distributed Subplan).
 *
 * So each such statement becomes, in the Citus dialect only, a short sequence of statements of
 * that routable shape, run by {@link CitusRun} on the caller's connection (in its transaction when
 * it has one), with the same parameters and the same result rows as the plain statement:
 * - **live / finish split** ({@link citusMoveSplit}): the plain statement's CTEs `<live>` (an
 *   UPDATE keeping the task live) and `gone` + `moved` (DELETE, then the history INSERT) become two
 *   statements: the live one (`… select * from <live>`, the plain final SELECT unchanged), and the
 *   finish one (the `moved` INSERT as the top-level statement over `gone`). Each keeps the plain
 *   statement's lock pick (`fenced`, `target`, `picked`) and its re-checks, so each is, on its own,
 *   the plain statement restricted to one outcome.
 * - **completeMany** ({@link citusCompleteManySplit}): the `moved` INSERT at top level over `done`;
 *   its ids are mapped back to the input positions.
 * - **cron occurrence** ({@link citusCronSplit}): the task INSERT at top level over the watermark UPDATE.
 * - **schedule** ({@link citusInsertRun}): the ids are drawn first (`nextval` alone runs on the
 *   coordinator), then the upsert is the top-level INSERT over the input read once, and the rows
 *   are matched to the input in the store (by drawn id, or by (kind, key)).
 */
import { literal } from './quote.js';

/** A statement's parameter (as the drivers bind them). */
export type CitusParam = string | number | boolean | null;
/** A query function on one connection (autocommit, or the caller's transaction). */
export type CitusSend = (text: string, params?: readonly CitusParam[]) => Promise<Record<string, unknown>[]>;
/** Runs a statement that Citus must see as several: same parameters (`$1` already bound to now), same rows. */
export type CitusRun = (send: CitusSend, params: readonly CitusParam[]) => Promise<Record<string, unknown>[]>;

/** How each split statement's CTEs are named, and how its two steps combine. */
interface MoveShape {
  /** The CTE keeping the task live (an UPDATE). */
  readonly live: string;
  /** The CTE joining `<live>` and `moved` with `union all`, read by the final SELECT. */
  readonly union: string;
  /** The notice op the plain final SELECT sends for a finished (moved) task, if any. */
  readonly finishNotice?: string;
}

/** The two single-node statements of a live/finish split, already in the Citus dialect. */
export interface MoveSplit {
  /** The plain statement with only its `<live>` UPDATE: the final SELECT reads `<live>` alone. */
  readonly live: string;
  /** The plain statement with only `gone` and `moved`: the history INSERT at top level, reading only the parameters of `finishParams`. */
  readonly finish: string;
  /** The 0-based indexes of the plain parameters bound to `finish`'s `$1`, `$2`, … */
  readonly finishParams: readonly number[];
  /** The 0-based index of the channel parameter left out of `finish`. */
  readonly channelIndex: number;
  /** The notice op the plain statement sends for a finished task, if any. */
  readonly finishNotice: string | undefined;
}

/**
 * `text` reading only the parameters it uses, renumbered in order, and the 0-based indexes of the
 * original parameters to bind: an unread parameter in the middle would leave PostgreSQL unable to
 * infer its type (42P18).
 */
function compactParams(text: string): { text: string; keep: readonly number[] } {
  const used = [...new Set([...text.matchAll(/\$(\d+)(?!\d)/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
  const renumber = new Map(used.map((n, i) => [n, i + 1] as const));
  return { text: text.replace(/\$(\d+)(?!\d)/g, (_all, d: string) => `$${renumber.get(Number(d))}`), keep: used.map((n) => n - 1) };
}

const MOVED = '), moved as (\n  insert into ';

/**
 * The live/finish split of `plain`, or undefined when `plain` is not a statement of that shape.
 * The finish statement returns `{ id, attempt, state, dueatms }` and takes the plain parameters it
 * reads (never the channel: the runner adds the `notified` payload of a finished task, cancel's only).
 * @param plain a statement of `./sql.ts` (plain dialect)
 * @param channelParam the 1-based number of its notify-channel parameter
 */
export function citusMoveSplit(plain: string, channelParam: number): MoveSplit | undefined {
  for (const shape of MOVE_SHAPES) {
    const liveAt = plain.indexOf(`), ${shape.live} as (\n`);
    const goneAt = plain.indexOf('), gone as (\n');
    const movedAt = plain.indexOf(MOVED);
    const unionText = `), ${shape.union} as (\n  select * from ${shape.live} union all select * from moved\n)`;
    const unionAt = plain.indexOf(unionText);
    if (liveAt < 0 || goneAt < liveAt || movedAt < goneAt || unionAt < movedAt) continue;
    const live = `${plain.slice(0, goneAt)}), ${shape.union} as (\n  select * from ${shape.live}\n)${plain.slice(unionAt + unionText.length)}`;
    const insert = plain.slice(movedAt + MOVED.length - 'insert into '.length, unionAt).trimEnd();
    const returningAt = insert.lastIndexOf('\n  returning ');
    if (returningAt < 0) continue;
    // No parameter in the RETURNING of an INSERT pulled to the coordinator: Citus 13.2.2 sends it to
    // the worker node unbound (42P18), so the channel parameter is not read (a finished task's notice,
    // if any, is made by the runner), and the parameters the finish statement does not read are left out.
    const finish = compactParams(`${plain.slice(0, liveAt)}${plain.slice(goneAt, movedAt)})
${insert.slice(0, returningAt)}
returning id::text as id, attempt, state, floor(extract(epoch from due_at) * 1000)::float8 as dueatms`);
    if (finish.keep.includes(channelParam - 1)) continue;
    return { live, finish: finish.text, finishParams: finish.keep, channelIndex: channelParam - 1, finishNotice: shape.finishNotice };
  }
  return undefined;
}

/** The split statements: leaveClaim (`taskFail`, `taskRelease`, `taskSnooze`), `taskCancel`, `taskReclaimExpired`. */
const MOVE_SHAPES: readonly MoveShape[] = [
  { live: 'stay', union: 'left_claim' },
  { live: 'requested', union: 'cancelled', finishNotice: 'cancelled' },
  { live: 'stay', union: 'reclaimed' },
];

/** True for `taskReclaimExpired` (its `$2` is the limit, its rows come ordered by id). */
function isReclaim(plain: string): boolean {
  return plain.startsWith('with gate as materialized (\n  select pg_try_advisory_xact_lock(') && plain.includes('), reclaimed as (\n');
}

/** True for `taskCancel` (one id; the task may be SCHEDULED or CLAIMED). */
function isCancel(plain: string): boolean {
  return plain.startsWith('with target as materialized (') && plain.includes('), cancelled as (\n');
}

/** Orders rows by their decimal-text `id`, as BigInt (ids of shard groups ≥ 1 pass 2⁵³). */
function byId(a: Record<string, unknown>, b: Record<string, unknown>): number {
  const x = BigInt(String(a.id));
  const y = BigInt(String(b.id));
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * The runner of a live/finish split (texts already in the Citus dialect):
 * - fail, release, snooze (one fenced task): the live statement, then — only when it changed
 *   nothing — the finish one. The task's next state can only move away from SCHEDULED while it is
 *   CLAIMED under the same attempt (a cancel request), never back, so the finish statement, which
 *   locks the fenced row again, decides exactly as the one plain statement would have.
 * - reclaim (`$2` limit): the live statement, then the finish one for the rest of the limit; the rows
 *   of both, ordered by id as the plain statement's. Each statement picks with `skip locked` and
 *   re-checks the expiry, so concurrent reclaimers still take disjoint rows.
 * - cancel (one id, SCHEDULED or CLAIMED): the live statement (CLAIMED → cancel requested), the finish
 *   one (SCHEDULED → CANCELLED), and once more the live one when both missed: a claim between the
 *   two (SCHEDULED → CLAIMED) is then still caught; only a task claimed and released again within
 *   those round trips would be reported as the plain statement reports a miss.
 */
export function citusMoveRun(plain: string, split: MoveSplit): CitusRun {
  const finish = async (send: CitusSend, params: readonly CitusParam[]) => {
    const channel = params[split.channelIndex];
    const rows = await send(
      split.finish,
      split.finishParams.map((i) => params[i] ?? null),
    );
    const op = split.finishNotice;
    for (const row of rows) row.notified = op !== undefined && typeof channel === 'string' ? `{"op":"${op}","id":"${String(row.id)}","dueAtMs":${String(row.dueatms)}}` : null;
    return rows;
  };
  if (isReclaim(plain)) {
    return async (send, params) => {
      const limit = Number(params[1]);
      const stayed = await send(split.live, params);
      const rest = limit - stayed.length;
      const ended = rest > 0 ? await finish(send, [params[0] ?? null, rest, ...params.slice(2)]) : [];
      return [...stayed, ...ended].sort(byId);
    };
  }
  if (isCancel(plain)) {
    return async (send, params) => {
      const requested = await send(split.live, params);
      if (requested.length > 0) return requested;
      const cancelled = await finish(send, params);
      if (cancelled.length > 0) return cancelled;
      return await send(split.live, params);
    };
  }
  return async (send, params) => {
    const stayed = await send(split.live, params);
    return stayed.length > 0 ? stayed : await finish(send, params);
  };
}

/**
 * The Citus form of `taskCompleteManyFenced` (plain text), or undefined when `plain` is not it: the
 * `moved` history INSERT as the top-level statement over `done`, returning the ids it finished
 * (its RETURNING cannot read the input's positions; {@link citusCompleteManyRun} maps them).
 */
export function citusCompleteManySplit(plain: string): string | undefined {
  const movedAt = plain.indexOf(MOVED);
  const tail = '\n)\nselect d.ord::int as ord from done d';
  if (!plain.startsWith('with input as (') || movedAt < 0 || !plain.endsWith(tail)) return undefined;
  const insert = plain.slice(movedAt + MOVED.length - 'insert into '.length, plain.length - tail.length);
  const returningAt = insert.lastIndexOf('\n  returning ');
  if (returningAt < 0) return undefined;
  return `${plain.slice(0, movedAt)})\n${insert.slice(0, returningAt)}\nreturning id::text as id`;
}

/** Runs {@link citusCompleteManySplit}'s text (`$2` the items' JSON text) and returns the plain `{ ord }` rows: 1-based item positions. */
export function citusCompleteManyRun(text: string): CitusRun {
  return async (send, params) => {
    const items = JSON.parse(String(params[1])) as { id: string }[];
    const position = new Map(items.map((item, i) => [BigInt(item.id), i + 1] as const));
    const rows = await send(text, params);
    return rows.map((r) => ({ ord: position.get(BigInt(String(r.id))) }));
  };
}

/** The Citus form of `cronScheduleOccurrence` (see {@link citusCronSplit}): the text and the plain parameters it binds. */
export interface CronSplit {
  readonly text: string;
  /** The 0-based indexes of the plain parameters bound to `text`'s `$1`, `$2`, … */
  readonly params: readonly number[];
  /** The 0-based index of the notify channel parameter (not bound: the runner makes the notice). */
  readonly channelIndex: number;
}

const CRON_INSERTED = '), inserted as (\n  insert into ';
const CRON_TAIL = /\n {2}returning id, due_at\n\)\nselect i\.id::text as id, [^\n]* as notified from inserted i$/;

/**
 * The Citus form of `cronScheduleOccurrence` (`./cron-sql.ts`, plain text), or undefined when
 * `plain` is not it: the task INSERT as the top-level statement over the `advanced` watermark
 * UPDATE (one statement still: the occurrence stays exactly-once), returning `{ id, dueatms }`;
 * without the channel parameter, the runner adds the notice payload.
 * @param channelParam the 1-based number of its channel parameter
 */
export function citusCronSplit(plain: string, channelParam: number): CronSplit | undefined {
  const insertedAt = plain.indexOf(CRON_INSERTED);
  const tail = CRON_TAIL.exec(plain);
  if (!plain.startsWith('with advanced as (\n  update ') || insertedAt < 0 || tail === null) return undefined;
  const insert = plain.slice(insertedAt + CRON_INSERTED.length - 'insert into '.length, tail.index);
  const compact = compactParams(`${plain.slice(0, insertedAt)})\n${insert}\nreturning id::text as id, floor(extract(epoch from due_at) * 1000)::float8 as dueatms`);
  if (compact.keep.includes(channelParam - 1)) return undefined;
  return { text: compact.text, params: compact.keep, channelIndex: channelParam - 1 };
}

/** Runs {@link citusCronSplit}'s text and returns the plain `{ id, dueatms, notified }` rows. */
export function citusCronRun(split: CronSplit): CitusRun {
  return async (send, params) => {
    const channel = params[split.channelIndex];
    const rows = await send(
      split.text,
      split.params.map((i) => params[i] ?? null),
    );
    return rows.map((r) => ({ ...r, notified: typeof channel === 'string' ? `{"op":"scheduled","id":"${String(r.id)}","dueAtMs":${String(r.dueatms)}}` : null }));
  };
}

/** `taskInsertMany`'s id draw: `nextval` of the task table's identity sequence. */
const NEXTVAL = /nextval\(pg_get_serial_sequence\('(?:[^']|'')*', 'id'\)::regclass\)/;

/** The two statements of a schedule in the Citus dialect, as plain texts (see {@link citusInsertSplit}). */
export interface InsertSplit {
  /** `$1` count → `{ id }` rows (decimal text): the ids drawn, in order. */
  readonly ids: string;
  /**
   * `$1` now, `$2` tasks (JSON text), `$3` the drawn ids (a JSON array of text) → `{ id, kind, key,
   * state, dueatms }` per row written; one text per mode (`keep`, `replace`), the mode written in as
   * a literal: Citus 13.2.2 sends the `do update` of an INSERT pulled to the coordinator to the
   * worker node without its parameters (42P18 "could not determine data type of parameter").
   */
  readonly upsert: { readonly keep: string; readonly replace: string };
}

/**
 * The Citus form of `taskInsertMany` (plain text), or undefined when `plain` is not it: the ids
 * drawn by a statement of their own, then the plain `upserted` INSERT as the top-level statement
 * over the plain `input` (its `new_id` read from `$3` instead of `nextval`), returning what the
 * store needs to match rows to inputs. The `keylocks` and `holders` CTEs are left out: the Citus
 * dialect already did not read them (`citusStatement`), and a batch of two keys or more takes its
 * key locks by `taskKeyLocks` before, as on PostgreSQL.
 */
export function citusInsertSplit(plain: string): InsertSplit | undefined {
  const inputEnd = plain.indexOf('\n), keylocks as materialized (');
  const upsertStart = plain.indexOf('), upserted as (\n  insert into ');
  const upsertEnd = plain.indexOf('\n), matched as (');
  const draw = NEXTVAL.exec(plain)?.[0];
  if (!plain.startsWith('with input as (') || inputEnd < 0 || upsertStart < inputEnd || upsertEnd < upsertStart || draw === undefined) return undefined;
  const input = plain.slice(0, inputEnd).replace(draw, '(($3::text::jsonb) ->> (x.ord - 1)::int)::bigint');
  const upsert = plain
    .slice(upsertStart + '), upserted as (\n  '.length, upsertEnd)
    .replace('\n   where (select count(*) from holders) >= 0', '')
    .replace(/\n {2}returning t\.id, t\.kind, t\.key, t\.state, t\.due_at$/, '\nreturning t.id::text as id, t.kind, t.key, t.state, floor(extract(epoch from t.due_at) * 1000)::float8 as dueatms');
  if (!upsert.endsWith('as dueatms') || upsert.includes('holders')) return undefined;
  const text = `${input}\n)\n${upsert}`;
  if (!text.includes("$4::text = 'replace'")) return undefined;
  const mode = (m: string) => text.replaceAll('$4::text', literal(m));
  return { ids: `select ${draw}::text as id from generate_series(1, $1::int) g`, upsert: { keep: mode('keep'), replace: mode('replace') } };
}

/** One input of the schedule batch: only what the match reads. */
interface InsertInput {
  readonly kind: string;
  readonly key: string | null;
}

/**
 * The runner of a schedule in the Citus dialect (texts already in the dialect): draws one id per
 * input, upserts, and returns the plain statement's `{ id, dueatms, created, replaced, notified }`
 * rows in input order. An input's row is the one with its drawn id (keyless, or keyed and created)
 * or, keyed, the one holding its (kind, key): no two inputs share one (the store's precondition).
 * `created` when the row carries the input's drawn id; `replaced` as the plain `matched` computes it.
 * `notified` is the plain notice payload for a created or replaced task when a channel is given.
 * @throws Error when a row is missing for an input (the plain statement returns one per input)
 */
export function citusInsertRun(split: InsertSplit): CitusRun {
  return async (send, params) => {
    const [now, json, channel, mode] = params;
    const inputs = JSON.parse(String(json)) as InsertInput[];
    const ids = (await send(split.ids, [inputs.length])).map((r) => String(r.id));
    const rows = await send(mode === 'replace' ? split.upsert.replace : split.upsert.keep, [now ?? null, json ?? null, JSON.stringify(ids)]);
    const byNewId = new Map(rows.map((r) => [String(r.id), r] as const));
    const byKey = new Map(rows.filter((r) => r.key !== null).map((r) => [JSON.stringify([r.kind, r.key]), r] as const));
    return inputs.map((input, i) => {
      const drawn = ids[i] as string;
      const row = byNewId.get(drawn) ?? (input.key === null ? undefined : byKey.get(JSON.stringify([input.kind, input.key])));
      if (row === undefined) throw new Error(`citus schedule: no row for input ${i}`);
      const id = String(row.id);
      const created = id === drawn;
      const replaced = !created && mode === 'replace' && row.state === 'SCHEDULED';
      const notified = (created || replaced) && typeof channel === 'string' ? `{"op":"scheduled","id":"${id}","dueAtMs":${String(row.dueatms)}}` : null;
      return { id, dueatms: row.dueatms, created, replaced, notified };
    });
  };
}
