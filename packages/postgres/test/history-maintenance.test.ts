/**
 * History maintenance (issue #26 item 9, README "Failure modes", evidence `history_maintenance`):
 * ten days without partition maintenance, a partition name already taken, a reader holding a
 * partition while retention drops it. Completions never fail, the skipped days are reported at
 * every run (`PruneResult.partitionsSkipped`), retention catches up. The store's clock is a
 * TestClock, so the database sees the days the test chooses; every other statement is real.
 */
import { type HistoryPartitionSkip, TestClock } from '@postpone/core';
import { recordCase } from '@postpone/testkit';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../src/index.js';
import { Admin, makeKit } from './support/kits.js';

const DAY = 86_400_000;
const kit = makeKit('pg');
const fields: Record<string, number | string | boolean> = {};
let pass = true;
const admins: Admin[] = [];

afterAll(async () => {
  recordCase('history_maintenance', pass, fields);
  await kit.close();
  for (const a of admins) await a.drop();
});

async function judged(body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    pass = false;
    throw error;
  }
}

const ymd = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const leafOf = (ms: number) => `task_history_done_${ymd(ms).replaceAll('-', '')}`;
const brief = (s: readonly HistoryPartitionSkip[] | undefined) => (s ?? []).map((x) => `${x.action}:${x.partition}:${x.reason}`);

/** Schedules, claims and completes one task; returns its id (throws if the completion is not DONE). */
async function finishOne(store: PostgresStore<any>, kind: string): Promise<string> {
  const { id } = await store.schedule({ kind });
  const [c] = await store.claim({ owner: 'w', limit: 1, leaseMs: 60_000, kinds: [kind] });
  if (c?.id !== id) throw new Error(`claimed ${c?.id}, not ${id}`);
  const outcome = await store.complete({ id, attempt: c.attempt, owner: 'w', result: null });
  if (outcome !== 'DONE') throw new Error(`complete answered ${outcome}`);
  return id;
}

describe('history maintenance', () => {
  it('(a) ten days without maintenance: completions land in the DEFAULT partition, the next prune makes the partitions, reports the days, and retention catches up', () =>
    judged(async () => {
      const admin = Admin.create('hist_gap');
      admins.push(admin);
      const start = Date.UTC(2032, 0, 1, 12);
      const clock = new TestClock(start);
      const store = kit.store({ schema: admin.schema, clock });
      await store.migrate(); // partitions for 2032-01-01 .. 01-08
      await finishOne(store, 'gap');
      let completions = 1;
      // Ten days pass with no maintenance; a task finishes on each.
      for (let d = 1; d <= 10; d++) {
        clock.tick(DAY);
        await finishOne(store, 'gap');
        completions += 1;
      }
      const inDefault = (await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task_history_done_default')}`))[0]?.n;
      // Days 01-09, 01-10, 01-11 had no partition.
      expect(inDefault).toBe(3);
      const first = await store.prune({ retention: { DONE: 2 * DAY } });
      const defaultDays = ['2032-01-09', '2032-01-10', '2032-01-11'];
      expect(brief(first.partitionsSkipped)).toEqual(defaultDays.map((d) => `create:task_history_done_${d.replaceAll('-', '')}:ROWS_IN_DEFAULT`));
      // 01-11 .. 01-18 for each state, but DONE's 01-11 (its rows are in DEFAULT).
      expect(first.partitionsCreated).toBe(3 * 8 - 1);
      // DONE partitions 01-01 .. 01-08 end at or before now − 2 days (01-09 12:00): dropped whole
      // (with the ones migration 11 made for the real days and `_legacy`, all long past in 2032).
      expect(first.partitionsDropped).toBeGreaterThanOrEqual(8);
      const doneLeft = await admin.query<{ name: string }>(`select c.relname::text as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = to_regclass($1) order by 1`, [`${admin.schema}.task_history_done`]);
      expect(doneLeft.map((r) => r.name)).toEqual(['task_history_done_20320112', 'task_history_done_20320113', 'task_history_done_20320114', 'task_history_done_20320115', 'task_history_done_20320116', 'task_history_done_20320117', 'task_history_done_20320118', 'task_history_done_default']);
      expect(first.deleted).toBe(8);
      // Reported again at the next run, as long as those rows are there.
      const second = await store.prune({ retention: { DONE: 2 * DAY } });
      expect(brief(second.partitionsSkipped)).toEqual(brief(first.partitionsSkipped));
      expect(second.partitionsCreated).toBe(0);
      // A day later a task lands in its own partition; three days later retention has deleted the DEFAULT rows by row.
      clock.tick(DAY);
      const id = await finishOne(store, 'gap');
      completions += 1;
      const [where] = await admin.query<{ leaf: string }>(`select tableoid::regclass::text as leaf from ${admin.t('task_history')} where id = $1`, [id]);
      expect(where?.leaf).toMatch(new RegExp(`${leafOf(clock.now())}$`));
      clock.tick(3 * DAY);
      // This prune still reports the days (maintenance runs first) and deletes their rows; the next reports nothing.
      const catchUp = await store.prune({ retention: { DONE: 2 * DAY } });
      expect(brief(catchUp.partitionsSkipped)).toEqual(brief(first.partitionsSkipped));
      expect((await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task_history_done_default')}`))[0]?.n).toBe(0);
      const third = await store.prune({ retention: { DONE: 2 * DAY } });
      expect(brief(third.partitionsSkipped)).toEqual([]);
      fields.a_completions = completions;
      fields.a_inDefault = inDefault ?? -1;
      fields.a_skippedRun1 = first.partitionsSkipped?.length ?? -1;
      fields.a_skippedRun2 = second.partitionsSkipped?.length ?? -1;
      fields.a_skippedAfterCatchUp = third.partitionsSkipped?.length ?? -1;
      fields.a_created = first.partitionsCreated ?? -1;
      fields.a_dropped = first.partitionsDropped ?? -1;
      await store.close();
    }), 60_000);

  it('(b) a partition name already taken (a table not attached; one attached with another range): completions go on, the prune reports NAME_TAKEN / OVERLAP and does its other work', () =>
    judged(async () => {
      const admin = Admin.create('hist_taken');
      admins.push(admin);
      const start = Date.UTC(2033, 5, 1, 12);
      const clock = new TestClock(start);
      const store = kit.store({ schema: admin.schema, clock });
      await store.migrate(); // 06-01 .. 06-08
      const day9 = Date.UTC(2033, 5, 9);
      const day10 = Date.UTC(2033, 5, 10);
      const day11 = Date.UTC(2033, 5, 11);
      // Someone else's table named as 06-09's partition, not attached; and 06-10's name attached over 06-10 .. 06-12.
      await admin.query(`create table ${admin.t(leafOf(day9))} (note text)`);
      await admin.query(`create table ${admin.t(leafOf(day10))} (like ${admin.t('task_history')} including defaults)`);
      await admin.query(`alter table ${admin.t('task_history_done')} attach partition ${admin.t(leafOf(day10))} for values from ('${new Date(day10).toISOString()}') to ('${new Date(day10 + 2 * DAY).toISOString()}')`);
      clock.setTime(day9 + 12 * 3_600_000);
      const result = await store.prune({ retention: { DEAD: 30 * DAY } });
      const done = (result.partitionsSkipped ?? []).filter((s) => s.state === 'DONE');
      expect(brief(done)).toEqual([`create:${leafOf(day9)}:NAME_TAKEN`, `create:${leafOf(day10)}:NAME_TAKEN`, `create:${leafOf(day11)}:OVERLAP`]);
      expect(done[0]?.detail).toMatch(/not a partition/);
      expect(done[1]?.detail).toMatch(/another range/);
      // The other states' days and DONE's later days were made.
      expect(result.partitionsCreated).toBe(2 * 8 + 8 - 3);
      // Completions on the taken day (→ DEFAULT) and on the other-range partition's days succeed.
      const onDay9 = await finishOne(store, 'taken');
      clock.setTime(day11 + 3_600_000);
      const onDay11 = await finishOne(store, 'taken');
      const leaves = await admin.query<{ id: string; leaf: string }>(`select id::text, tableoid::regclass::text as leaf from ${admin.t('task_history')} where id = any($1::bigint[]) order by id`, [[onDay9, onDay11]]);
      expect(leaves.map((l) => l.leaf.replace(/^.*\./, ''))).toEqual(['task_history_done_default', leafOf(day10)]);
      // The stranger's table is left alone.
      expect((await admin.query(`select note from ${admin.t(leafOf(day9))}`)).length).toBe(0);
      fields.b_skipped = brief(done).map((s) => s.split(':')[2]).join(',');
      fields.b_created = result.partitionsCreated ?? -1;
      fields.b_completions = 2;
      await store.close();
    }), 60_000);

  it('(c) a reader holding an old partition while retention drops it: completions never wait for the drop, the drop is reported LOCK_TIMEOUT and done at the next prune', () =>
    judged(async () => {
      const admin = Admin.create('hist_reader');
      admins.push(admin);
      const start = Date.UTC(2034, 2, 1, 12);
      const clock = new TestClock(start);
      const store = kit.store({ schema: admin.schema, clock });
      await store.migrate();
      await finishOne(store, 'old');
      const old = leafOf(start);
      clock.tick(3 * DAY);
      await store.ensureHistoryPartitions();
      // The reader: an open transaction that read the old partition.
      const reader = new pg.Client({ connectionString: admin.url });
      await reader.connect();
      try {
        await reader.query('begin');
        await reader.query(`select count(*) from ${admin.t(old)}`);
        let pruneSettled = false;
        const pruning = store.prune({ retention: { DONE: DAY } }).finally(() => {
          pruneSettled = true;
        });
        // Wait (bounded) until the prune's lock request on the old partition is queued.
        let waiting = false;
        for (let i = 0; i < 200 && !waiting && !pruneSettled; i++) {
          const [row] = await admin.query<{ n: number }>(`select count(*)::int as n from pg_locks where not granted and relation = to_regclass($1)`, [`${admin.schema}.${old}`]);
          waiting = (row?.n ?? 0) > 0;
          if (!waiting) await new Promise((resolve) => setTimeout(resolve, 10));
        }
        expect(waiting).toBe(true);
        // While the drop waits, completions go on: none waits for it.
        let completedWhileWaiting = 0;
        for (let i = 0; i < 5; i++) {
          await finishOne(store, 'now');
          if (!pruneSettled) completedWhileWaiting += 1;
        }
        const result = await pruning;
        expect(completedWhileWaiting).toBe(5);
        expect(brief(result.partitionsSkipped)).toEqual([`drop:${old}:LOCK_TIMEOUT`]);
        expect(await admin.query(`select to_regclass($1)::text as r`, [`${admin.schema}.${old}`])).toEqual([{ r: `${admin.schema}.${old}` }]);
        await reader.query('commit');
        const next = await store.prune({ retention: { DONE: DAY } });
        expect(next.partitionsDropped).toBe(1);
        expect(brief(next.partitionsSkipped)).toEqual([]);
        expect(await admin.query(`select to_regclass($1) as r`, [`${admin.schema}.${old}`])).toEqual([{ r: null }]);
        fields.c_completedWhileDropWaited = completedWhileWaiting;
        fields.c_firstPrune = brief(result.partitionsSkipped).map((s) => s.split(':')[2]).join(',') || 'none';
        fields.c_droppedNextPrune = next.partitionsDropped ?? -1;
      } finally {
        await reader.end();
        await store.close();
      }
    }), 60_000);
});
