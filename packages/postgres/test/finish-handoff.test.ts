/**
 * The finish hand-off (migration 25, `../src/sql/finish-handoff-sql.ts`): every DELETE from `task`
 * hands the finished rows that need anything to the one statement-level trigger `task_finished`,
 * which has no transition table — so a plain completion costs what it did before migrations 18–21
 * (issue #29, "the claim and completion of tasks that use none of these features cost the same as
 * before"). What the trigger then does (batch counts, releases, cascades, finish notices) is covered
 * by the conformance, dependency, batch and progress-wait suites and the differential test; here:
 * - every statement of this code that deletes from `task` carries the hand-off (a statement that did
 *   not would finish tasks without releasing their dependents or settling their batches);
 * - the buffers a completion of 50 plain tasks reads are the same with the trigger as without any,
 *   while a statement-level trigger with a transition table (the kind of 18 and 20) adds about one
 *   per deleted row (the refetch of `ExecARDeleteTriggers`): the measurement can see what it guards;
 * - the hand-off is one aggregate per statement: the failing input of a first version, which
 *   appended row by row (a `set_config` per row, each copying the growing text), is kept — a
 *   completeMany of 8 000 tasks while a `waitFor` caller waits took more than 30 s there (the store's
 *   reply timeout), 2 000 took 1.2 s against 0.09 s;
 * - the cancel cascade is a loop, not a recursion of triggers: the failing input of a fresh user's
 *   attempt is kept — a chain of 390 tasks each cancelled with its dependency (`onFailure: 'cancel'`)
 *   failed with 54001 "stack depth limit exceeded" (about 700 before migration 25), and the fail and
 *   the reclaim that finished its root failed with it, stranding every other expired lease.
 */
import { describe, expect, it } from 'vitest';
import { bulkStatements } from '../src/sql/bulk-sql.js';
import { dependencyStatements } from '../src/sql/dependency-sql.js';
import { withoutFinishHandoff } from '../src/sql/finish-handoff.js';
import { statements } from '../src/sql/sql.js';
import { migratedKit } from './support/kits.js';

const { admin, kit } = migratedKit('finish_handoff');

describe('the finish hand-off (migration 25)', () => {
  it('every statement that deletes from task hands its finished rows over, one hand-off per DELETE', () => {
    const texts: [string, string][] = [];
    for (const [name, text] of Object.entries(statements('h'))) if (typeof text === 'string') texts.push([name, text]);
    for (const [name, text] of Object.entries(dependencyStatements('h', (e) => e))) if (typeof text === 'string') texts.push([`dependency.${name}`, text]);
    texts.push(['bulk.cancel', bulkStatements('h').cancel(null, '[]', null, ['SCHEDULED'], 'c').text]);
    const deletes = (text: string) => text.match(/delete from "h"\.task\b/g)?.length ?? 0;
    const deleting = texts.filter(([, text]) => deletes(text) > 0);
    expect(deleting.map(([name]) => name).sort()).toEqual(
      [
        'bulk.cancel',
        'dependency.dependencyCancel',
        'taskCancel',
        'taskCancelRequestedToCancelled',
        'taskCompleteDrop',
        'taskCompleteFenced',
        'taskCompleteManyDrop',
        'taskCompleteManyFenced',
        'taskFail',
        'taskReclaimExpired',
        'taskRelease',
        'taskSnooze',
      ].sort(),
    );
    for (const [name, text] of deleting) {
      // One hand-off CTE per DELETE, read by the statement (or it would not run), and gone in the Citus form.
      expect([name, text.match(/ finish_handoff as \(/g)?.length ?? 0, text.match(/ cross join finish_handoff\b/g)?.length ?? 0]).toEqual([name, deletes(text), deletes(text)]);
      expect([name, withoutFinishHandoff(text).includes('finish_handoff'), withoutFinishHandoff(text).includes('handoff_')]).toEqual([name, false, false]);
    }
  });

  it('a completion of 50 plain tasks reads the buffers it reads without any trigger; a transition-table trigger adds about one per task', { timeout: 120_000 }, async () => {
    const store = kit.store({ schema: admin.schema });
    const sql = statements(admin.schema);
    const task = admin.t('task');
    const BATCH = 50;
    const ROUNDS = 3;
    const modes = ['none', 'handoff', 'transition'] as const;
    await store.scheduleMany(Array.from({ length: BATCH * ROUNDS * modes.length }, (_, i) => ({ kind: 'plain', payload: { i } })));
    const claimed = await store.claim({ owner: 'w', limit: BATCH * ROUNDS * modes.length, leaseMs: 600_000 });
    expect(claimed).toHaveLength(BATCH * ROUNDS * modes.length);
    await admin.query(`create or replace function ${admin.t('probe_noop')}() returns trigger language plpgsql as $fn$ begin return null; end $fn$`);
    const buffers: Record<(typeof modes)[number], number[]> = { none: [], handoff: [], transition: [] };
    let next = 0;
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of modes) {
          await admin.query(`alter table ${task} ${mode === 'none' ? 'disable' : 'enable'} trigger task_finished`);
          if (mode === 'transition') await admin.query(`create trigger probe_transition after delete on ${task} referencing old table as gone for each statement execute function ${admin.t('probe_noop')}()`);
          const items = claimed.slice(next, next + BATCH).map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w', result: 1 }));
          next += BATCH;
          buffers[mode].push((await admin.explainPlan(sql.taskCompleteManyFenced, [null, JSON.stringify(items)])).buffers);
          if (mode === 'transition') await admin.query(`drop trigger probe_transition on ${task}`);
        }
      }
    } finally {
      await admin.query(`alter table ${task} enable trigger task_finished`);
      await admin.query(`drop trigger if exists probe_transition on ${task}`);
    }
    const [left] = await admin.query<{ n: number }>(`select count(*)::int as n from ${task}`);
    expect(left?.n).toBe(0);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    const m = { none: median(buffers.none), handoff: median(buffers.handoff), transition: median(buffers.transition) };
    console.log(`FINISH_HANDOFF_BUFFERS per completion of ${BATCH}: none=${buffers.none.join('/')} handoff=${buffers.handoff.join('/')} transition=${buffers.transition.join('/')}`);
    expect(Math.abs(m.handoff - m.none)).toBeLessThanOrEqual(5);
    expect(m.transition - m.none).toBeGreaterThanOrEqual(BATCH / 2);
    await store.close();
  });

  it('one completeMany of 8 000 tasks while a waitFor caller waits: every task DONE, every waiter woken by the finish notice', { timeout: 120_000 }, async () => {
    const N = 8_000;
    const worker = kit.store({ schema: admin.schema });
    const waiting = kit.store({ schema: admin.schema, waitFallbackMs: 600_000 });
    await worker.scheduleMany(Array.from({ length: N }, (_, i) => ({ kind: 'wide', payload: { i } })));
    const claimed = await worker.claim({ owner: 'w', limit: N, leaseMs: 600_000, kinds: ['wide'] });
    expect(claimed).toHaveLength(N);
    const watched = claimed.filter((_, i) => i % 1_000 === 0);
    const waits = watched.map((c) => waiting.waitFor(c.id, { timeoutMs: 60_000 }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const outcomes = await worker.completeMany(claimed.map((c) => ({ id: c.id, attempt: c.attempt, owner: 'w', result: c.id })));
    expect(outcomes.filter((o) => o === 'DONE')).toHaveLength(N);
    const done = await Promise.all(waits);
    expect(done.map((t) => [t.state, t.result])).toEqual(watched.map((c) => ['DONE', c.id]));
    expect(waiting.waitStats.fallbackReads).toBe(0);
    expect(waiting.waitStats.notices).toBeGreaterThanOrEqual(1);
    await waiting.close();
    await worker.close();
  });

  it('a cancel cascade down a chain of 2 000 tasks: cancel, fail and reclaim of its root all finish it, and the reclaim takes the other expired leases too', { timeout: 180_000 }, async () => {
    const store = kit.store({ schema: admin.schema });
    const N = 2_000;
    const chain = async (kind: string) =>
      store.scheduleMany([{ kind: `${kind}_root`, maxAttempts: 1 }, ...Array.from({ length: N - 1 }, (_, i) => ({ kind: `${kind}_link`, after: [{ index: i, onFailure: 'cancel' as const }] }))]);
    const cancelledOf = async (kind: string) =>
      (await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task_history')} where kind = $1 and state = 'CANCELLED'`, [`${kind}_link`]))[0]?.n;

    const [root] = await chain('c');
    expect(await store.cancel(root!.id)).toBe('CANCELLED');
    expect(await cancelledOf('c')).toBe(N - 1);

    const [failRoot] = await chain('f');
    const [held] = await store.claim({ owner: 'w', limit: 1, leaseMs: 600_000, kinds: ['f_root'] });
    expect(held?.id).toBe(failRoot?.id);
    expect((await store.fail({ id: held!.id, attempt: held!.attempt, error: 'boom', backoffMs: 0, retryable: false })).outcome).toBe('DEAD');
    expect(await cancelledOf('f')).toBe(N - 1);

    const [lostRoot] = await chain('r');
    await store.schedule({ kind: 'r_other' });
    const leased = await store.claim({ owner: 'w', limit: 2, leaseMs: 50, kinds: ['r_root', 'r_other'] });
    expect(leased.map((c) => c.kind).sort()).toEqual(['r_other', 'r_root']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const reclaimed = await store.reclaimExpired({ limit: 10 });
    expect(reclaimed.map((r) => [r.id, r.outcome]).sort()).toEqual(
      leased.map((c) => [c.id, c.kind === 'r_root' ? 'DEAD' : 'SCHEDULED']).sort(),
    );
    expect((await store.getTask(lostRoot!.id))?.state).toBe('DEAD');
    expect(await cancelledOf('r')).toBe(N - 1);
    await store.close();
  });
});
