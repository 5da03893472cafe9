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
 *   per deleted row (the refetch of `ExecARDeleteTriggers`): the measurement can see what it guards.
 */
import { describe, expect, it } from 'vitest';
import { bulkStatements } from '../src/sql/bulk-sql.js';
import { dependencyStatements } from '../src/sql/dependency-sql.js';
import { finishHandoffMigrationSql } from '../src/sql/finish-handoff-sql.js';
import { statements } from '../src/sql/sql.js';
import { migratedKit } from './support/kits.js';

const { admin, kit } = migratedKit('finish_handoff');

describe('the finish hand-off (migration 25)', () => {
  it('every statement that deletes from task hands its finished rows over, one hand-off per DELETE', () => {
    const texts: [string, string][] = [];
    for (const [name, text] of Object.entries(statements('h'))) if (typeof text === 'string') texts.push([name, text]);
    for (const [name, text] of Object.entries(dependencyStatements('h', (e) => e))) if (typeof text === 'string') texts.push([`dependency.${name}`, text]);
    texts.push(['bulk.cancel', bulkStatements('h').cancel(null, '[]', null, ['SCHEDULED'], 'c').text]);
    texts.push(['migration 25 (the cascade)', finishHandoffMigrationSql('h')]);
    const deletes = (text: string) => text.match(/delete from "h"\.task\b/g)?.length ?? 0;
    const deleting = texts.filter(([, text]) => deletes(text) > 0);
    expect(deleting.map(([name]) => name).sort()).toEqual(
      [
        'bulk.cancel',
        'dependency.dependencyCancel',
        'migration 25 (the cascade)',
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
    for (const [name, text] of deleting) expect(text.match(/ end as finish_handoff/g)?.length ?? 0, name).toBe(deletes(text));
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
});
