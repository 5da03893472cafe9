/**
 * Dedup keys under a real race (docs/contract.md#dedup-keys, issue 14): 4 processes — 2 on `pg`,
 * 2 on postgres.js — schedule one (kind, key) 1 000 times each, all released at once. The partial
 * unique index `task_key_idx` decides: exactly one task is created, and every one of the 4 000 calls
 * returns its id. Then, once that task is terminal, the key is free again for exactly one new task.
 */
import { fileURLToPath } from 'node:url';
import { recordCase } from '@postpone/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { makeKit, migratedSchema } from './support/kits.js';
import { runTogether, startReportingChild } from './support/reporting-child.js';

const admin = migratedSchema('dedup_race');
const CHILD = fileURLToPath(new URL('./support/dedup-child.mjs', import.meta.url));
const PER_PROCESS = 1_000;
const DEADLINE_MS = 60_000;

interface ChildResult {
  readonly calls: number;
  readonly ids: string[];
  readonly created: number;
}

async function race(key: string): Promise<ChildResult[]> {
  const children = (['pg', 'postgres', 'pg', 'postgres'] as const).map((driver) =>
    startReportingChild<ChildResult>(CHILD, [driver, admin.url, admin.schema, 'close-reservation', key, String(PER_PROCESS)], 'scheduler'),
  );
  return runTogether(children, DEADLINE_MS);
}

describe('dedup key race: 4 processes × 1 000 schedules of one key', () => {
  afterAll(() => admin.truncate());

  it('creates exactly one task, and every call returns its id; after it is terminal, one new task again', { timeout: 2 * DEADLINE_MS + 10_000 }, async () => {
    const liveOf = (key: string) =>
      admin.query<{ id: string }>(`select id::text from ${admin.t('task')} where key = $1 and state in ('SCHEDULED', 'CLAIMED')`, [key]);
    const fields: Record<string, string | number | readonly (string | number)[]> = { processes: 4, drivers: '[pg,postgres,pg,postgres]', schedulesEach: PER_PROCESS };
    let pass = true;
    for (const round of [1, 2]) {
      const results = await race('reservation-42');
      const live = await liveOf('reservation-42');
      const id = live[0]?.id;
      // Every task ever made with the key: live ones in task, terminal ones in task_history (migration 11).
      const all = await admin.query<{ n: number }>(
        `select ((select count(*) from ${admin.t('task')} where key = $1) + (select count(*) from ${admin.t('task_history')} where key = $1))::int as n`,
        ['reservation-42'],
      );
      const calls = results.reduce((sum, r) => sum + r.calls, 0);
      const created = results.reduce((sum, r) => sum + r.created, 0);
      const distinctIds = new Set(results.flatMap((r) => r.ids)).size;
      Object.assign(fields, { [`round${round}Calls`]: calls, [`round${round}Created`]: created, [`round${round}LiveTasks`]: live.length, [`round${round}DistinctIds`]: distinctIds, [`round${round}RowsWithKey`]: all[0]?.n ?? -1 });
      pass &&= live.length === 1 && calls === 4 * PER_PROCESS && created === 1 && distinctIds === 1 && results.every((r) => r.ids[0] === id) && all[0]?.n === round;
      if (round === 2) recordCase('dedup_key_race', pass, fields);
      expect(live).toHaveLength(1);
      expect(results.map((r) => r.calls)).toEqual([PER_PROCESS, PER_PROCESS, PER_PROCESS, PER_PROCESS]);
      expect(results.every((r) => r.ids.length === 1 && r.ids[0] === id)).toBe(true);
      expect(created).toBe(1);
      expect(all[0]?.n).toBe(round);
      // Make the task terminal; the next round must create exactly one new one.
      const kit = makeKit('pg');
      try {
        expect(await kit.store({ schema: admin.schema }).cancel(id as string)).toBe('CANCELLED');
      } finally {
        await kit.close();
      }
    }
  });
});
