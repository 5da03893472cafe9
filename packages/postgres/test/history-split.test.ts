/**
 * Evidence case `history_split_outcomes` (docs/contract.md#live-and-history): on both drivers, every
 * outcome of complete (DONE, DONE again, stale attempt refused), fail (retry, DEAD, stale), cancel
 * (its five outcomes) and getTask, across the move of a finished task from `task` to
 * `task_history`. The line counts each outcome and the rows in the live and history tables, read
 * from the database itself; PASS only when every one is what the contract says.
 */
import { TestClock } from '@postpone/core';
import { recordCase } from '@postpone/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const admin = Admin.create('history_split');
const kits = DRIVERS.map((d) => makeKit(d));

afterAll(async () => {
  await Promise.all(kits.map((k) => k.close()));
  await admin.drop();
});

/** Rows of `table` among `ids`, by state. */
async function rowsIn(table: 'task' | 'task_history', ids: readonly string[]): Promise<Record<string, number>> {
  const rows = await admin.query<{ state: string; n: number }>(`select state, count(*)::int as n from ${admin.t(table)} where id = any($1::bigint[]) group by state`, [ids]);
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

describe('history_split_outcomes', () => {
  it('complete, fail, cancel and getTask give every contract outcome across the move to history, on pg and postgres.js', async () => {
    await kits[0]!.store({ schema: admin.schema }).migrate();
    const tally: Record<string, number> = {};
    const count = (key: string) => {
      tally[key] = (tally[key] ?? 0) + 1;
    };
    const problems: string[] = [];
    const check = (what: string, got: unknown, want: unknown) => {
      if (JSON.stringify(got) !== JSON.stringify(want)) problems.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    };
    const ids: string[] = [];
    for (const [i, kit] of kits.entries()) {
      const driver = DRIVERS[i]!;
      const clock = new TestClock();
      const store = kit.store({ schema: admin.schema, clock });
      await store.migrate();
      const claim = async (kind: string, maxAttempts = 3) => {
        const { id } = await store.schedule({ kind, maxAttempts });
        ids.push(id);
        const [c] = await store.claim({ owner: driver, limit: 1, leaseMs: 1_000, kinds: [kind] });
        if (c?.id !== id) throw new Error(`claim of ${kind} took ${c?.id}, not ${id}`);
        return c;
      };

      // complete: DONE, DONE again, stale attempts refused; getTask finds the DONE row in history.
      const done = await claim(`done-${driver}`);
      const first = await store.complete({ id: done.id, attempt: done.attempt, owner: driver, result: { driver } });
      check(`${driver} complete`, first, 'DONE');
      count(`complete_${first}`);
      const again = await store.complete({ id: done.id, attempt: done.attempt, owner: driver, result: { again: true } });
      check(`${driver} complete again`, again, 'DONE');
      if (again === 'DONE') count('complete_DONE_again');
      const stale = await store.complete({ id: done.id, attempt: done.attempt + 1, owner: driver });
      check(`${driver} complete stale`, stale, 'REJECTED_STALE');
      count(`complete_${stale}`);
      const doneRow = await store.getTask(done.id);
      check(`${driver} getTask DONE`, [doneRow?.state, doneRow?.result], ['DONE', { driver }]);
      if (doneRow?.state === 'DONE') count('getTask_history');
      check(`${driver} one effect`, (await store.getCompletion(done.id))?.attempt, done.attempt);

      // fail: with attempts left → SCHEDULED (live); the last → DEAD (history); after it, stale.
      const failing = await claim(`fail-${driver}`, 2);
      const retry = await store.fail({ id: failing.id, attempt: failing.attempt, error: 'one', backoffMs: 0 });
      check(`${driver} fail retry`, retry.outcome, 'SCHEDULED');
      count(`fail_${retry.outcome}`);
      const live = await store.getTask(failing.id);
      check(`${driver} getTask live`, live?.state, 'SCHEDULED');
      if (live?.state === 'SCHEDULED') count('getTask_live');
      const [second] = await store.claim({ owner: driver, limit: 1, leaseMs: 1_000, kinds: [`fail-${driver}`] });
      const dead = await store.fail({ id: failing.id, attempt: second!.attempt, error: 'two', backoffMs: 0 });
      check(`${driver} fail dead`, dead.outcome, 'DEAD');
      count(`fail_${dead.outcome}`);
      const staleFail = await store.fail({ id: failing.id, attempt: second!.attempt, error: 'three', backoffMs: 0 });
      check(`${driver} fail stale`, staleFail.outcome, 'REJECTED_STALE');
      count(`fail_${staleFail.outcome}`);
      const deadRow = await store.getTask(failing.id);
      check(`${driver} getTask DEAD`, [deadRow?.state, deadRow?.failures], ['DEAD', 2]);
      if (deadRow?.state === 'DEAD') count('getTask_history');

      // cancel: CANCELLED (waiting), REQUESTED (running) then CANCELLED_BEFORE_COMMIT, ALREADY_CANCELLED,
      // TOO_LATE (DONE, DEAD), NOT_FOUND.
      const waiting = await store.schedule({ kind: `cancel-${driver}`, delayMs: 60_000 });
      ids.push(waiting.id);
      const running = await claim(`running-${driver}`);
      const outcomes = [
        await store.cancel(waiting.id),
        await store.cancel(running.id),
        await store.complete({ id: running.id, attempt: running.attempt, owner: driver }),
        await store.cancel(waiting.id),
        await store.cancel(done.id),
        await store.cancel(failing.id),
        await store.cancel(String(10_000_000 + i)),
      ];
      check(`${driver} cancel outcomes`, outcomes, ['CANCELLED', 'REQUESTED', 'CANCELLED_BEFORE_COMMIT', 'ALREADY_CANCELLED', 'TOO_LATE', 'TOO_LATE', 'NOT_FOUND']);
      for (const o of outcomes) count(o === 'CANCELLED_BEFORE_COMMIT' ? `complete_${o}` : `cancel_${o}`);
      const cancelled = await store.getTask(running.id);
      check(`${driver} getTask CANCELLED`, [cancelled?.state, cancelled?.cancelRequested], ['CANCELLED', true]);
      if (cancelled?.state === 'CANCELLED') count('getTask_history');
      check(`${driver} getTask unknown`, await store.getTask(String(10_000_000 + i)), null);
      count('getTask_NOT_FOUND');
      await store.close();
    }

    const live = await rowsIn('task', ids);
    const history = await rowsIn('task_history', ids);
    const perDriver = {
      complete_DONE: 1,
      complete_DONE_again: 1,
      complete_REJECTED_STALE: 1,
      complete_CANCELLED_BEFORE_COMMIT: 1,
      fail_SCHEDULED: 1,
      fail_DEAD: 1,
      fail_REJECTED_STALE: 1,
      cancel_CANCELLED: 1,
      cancel_REQUESTED: 1,
      cancel_ALREADY_CANCELLED: 1,
      cancel_TOO_LATE: 2,
      cancel_NOT_FOUND: 1,
      getTask_live: 1,
      getTask_history: 3,
      getTask_NOT_FOUND: 1,
    };
    const want = Object.fromEntries(Object.entries(perDriver).map(([k, n]) => [k, n * DRIVERS.length]));
    check('outcome counts', Object.fromEntries(Object.keys(want).map((k) => [k, tally[k] ?? 0])), want);
    // Per driver: 4 tasks finished (DONE, DEAD, two CANCELLED), none left live.
    check('live rows', live, {});
    check('history rows', [history.DONE, history.DEAD, history.CANCELLED, Object.keys(history).length], [DRIVERS.length, DRIVERS.length, 2 * DRIVERS.length, 3]);
    const pass = problems.length === 0;
    recordCase('history_split_outcomes', pass, {
      drivers: [...DRIVERS],
      tasks: ids.length,
      ...Object.fromEntries(Object.keys(want).map((k) => [k, tally[k] ?? 0])),
      liveRows: Object.values(live).reduce((a, b) => a + b, 0),
      historyDone: history.DONE ?? 0,
      historyDead: history.DEAD ?? 0,
      historyCancelled: history.CANCELLED ?? 0,
      problems: problems.length,
    });
    expect(problems).toEqual([]);
  });
});

describe('retention on PostgreSQL: partitions dropped whole, the default partition by row', () => {
  it('prune({ retention }) drops the day partitions past retention and deletes default-partition rows past it; ensureHistoryPartitions makes the next days', async () => {
    const kit = kits[0]!;
    const clock = new TestClock(Date.UTC(2031, 2, 1, 1));
    const store = kit.store({ schema: admin.schema, clock });
    await store.migrate();
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');
    const leaves = async () =>
      (await admin.query<{ name: string }>(`select c.relname::text as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = $1::regclass`, [admin.t('task_history_done')])).map((r) => r.name);
    expect(await leaves()).toContain(`task_history_done_${day(clock.now())}`);
    // A DONE task on a day with a partition, and one 30 days on, beyond every partition made ahead (default).
    const first = await store.schedule({ kind: 'ret-pg' });
    const [c1] = await store.claim({ owner: 'w', limit: 1, leaseMs: 1_000, kinds: ['ret-pg'] });
    expect(await store.complete({ id: c1!.id, attempt: c1!.attempt, owner: 'w' })).toBe('DONE');
    clock.tick(30 * 86_400_000);
    const late = await store.schedule({ kind: 'ret-pg' });
    const [c2] = await store.claim({ owner: 'w', limit: 1, leaseMs: 1_000, kinds: ['ret-pg'] });
    expect(await store.complete({ id: c2!.id, attempt: c2!.attempt, owner: 'w' })).toBe('DONE');
    const [where] = await admin.query<{ leaf: string }>(`select tableoid::regclass::text as leaf from ${admin.t('task_history')} where id = $1`, [late.id]);
    expect(where?.leaf).toMatch(/task_history_done_default$/);
    // The late task's day now has its row in the default partition: ensure skips it, makes the others.
    expect(await store.ensureHistoryPartitions(2)).toBe(3 * 3 - 1);
    clock.tick(3 * 86_400_000);
    // Every DONE row of the schema is past a day's retention now (the case above left two more, from 2030).
    const doneRows = async () => (await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task_history')} where state = 'DONE'`))[0]?.n;
    const before = await doneRows();
    expect(before).toBeGreaterThanOrEqual(2);
    const dead = await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task_history')} where state <> 'DONE'`);
    const result = await store.prune({ retention: { DONE: 86_400_000 } });
    expect(result.deleted).toBe(before);
    // No effect rows since migration 13: none to delete.
    expect(result.effectsDeleted).toBe(0);
    expect(await doneRows()).toBe(0);
    // DEAD and CANCELLED have no retention here: untouched.
    expect(await admin.query(`select count(*)::int as n from ${admin.t('task_history')} where state <> 'DONE'`)).toEqual(dead);
    expect(result.partitionsDropped).toBeGreaterThanOrEqual(1);
    expect(await store.getTask(first.id)).toBeNull();
    expect(await store.getTask(late.id)).toBeNull();
    expect(await leaves()).not.toContain(`task_history_done_${day(Date.UTC(2031, 2, 1))}`);
    expect(await leaves()).toContain('task_history_done_default');
    await store.close();
  });
});
