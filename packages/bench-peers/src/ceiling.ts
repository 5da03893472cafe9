/**
 * The ceiling: the store's own "complete" transaction — BEGIN; the fenced UPDATE to DONE
 * (`taskCompleteFenced`); the effect INSERT (`effectInsert`); COMMIT — driven as fast as possible by
 * plain `pg` clients in a loop over tasks claimed beforehand. Nothing else runs: no claim, no
 * handler, no lease renewal, no IPC. It is the rate at which this database on this machine can
 * commit fenced completions one task per transaction, the physical limit for any worker that keeps
 * Postpone's guarantees without batching.
 *
 * The statements are imported from `@postpone/postgres`, never copied.
 */
import { statements } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import type { RunContext } from './contender.js';
import { POSTPONE_SCHEMA, postponeAdmin } from './systems/postpone.js';

export interface CeilingParams {
  readonly tasks: number;
  /** Client counts to try; the best rate is the ceiling. */
  readonly clients: readonly number[];
}

export interface CeilingResult {
  readonly byClients: readonly { readonly clients: number; readonly tasksPerSecond: number }[];
  readonly tasksPerSecond: number;
  readonly bestClients: number;
}

interface Claimed {
  readonly id: string;
  readonly attempt: number;
}

const OWNER = 'bench-ceiling';

async function claimAll(url: string, total: number): Promise<Claimed[]> {
  const store = createPgStore({ connectionString: url, schema: POSTPONE_SCHEMA });
  try {
    const out: Claimed[] = [];
    while (out.length < total) {
      const batch = await store.claim({ owner: OWNER, limit: Math.min(10_000, total - out.length), leaseMs: 3_600_000 });
      if (batch.length === 0) break;
      for (const t of batch) out.push({ id: t.id, attempt: t.attempt });
    }
    return out;
  } finally {
    await store.close();
  }
}

async function completeLoop(url: string, tasks: readonly Claimed[], clients: number): Promise<number> {
  const sql = statements(POSTPONE_SCHEMA);
  const conns = await Promise.all(
    Array.from({ length: clients }, async () => {
      const c = new pg.Client({ connectionString: url, application_name: 'postpone-bench-ceiling' });
      await c.connect();
      return c;
    }),
  );
  let next = 0;
  let done = 0;
  try {
    const t0 = performance.now();
    await Promise.all(
      conns.map(async (c) => {
        for (;;) {
          const i = next++;
          const task = tasks[i];
          if (task === undefined) return;
          await c.query('begin');
          const hit = await c.query(sql.taskCompleteFenced, [null, task.id, task.attempt, 'null']);
          if (hit.rowCount === 1) await c.query(sql.effectInsert, [null, task.id, task.attempt, OWNER]);
          await c.query('commit');
          if (hit.rowCount === 1) done++;
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    if (done !== tasks.length) throw new Error(`ceiling completed ${done} of ${tasks.length} tasks`);
    return done / seconds;
  } finally {
    await Promise.all(conns.map((c) => c.end()));
  }
}

/** Measures the ceiling once per client count, each on its own share of freshly claimed tasks. */
export async function runCeiling(ctx: RunContext, params: CeilingParams): Promise<CeilingResult> {
  return await ctx.databases.withFresh(postponeAdmin, 'ceiling', async (url) => {
    const total = params.tasks * params.clients.length;
    await postponeAdmin.enqueue(url, Array.from({ length: total }, () => ({})));
    const claimed = await claimAll(url, total);
    if (claimed.length !== total) throw new Error(`ceiling claimed ${claimed.length} of ${total} tasks`);
    const byClients: { clients: number; tasksPerSecond: number }[] = [];
    for (const [k, clients] of params.clients.entries()) {
      const share = claimed.slice(k * params.tasks, (k + 1) * params.tasks);
      byClients.push({ clients, tasksPerSecond: await completeLoop(url, share, clients) });
    }
    const best = byClients.reduce((a, b) => (b.tasksPerSecond > a.tasksPerSecond ? b : a));
    return { byClients, tasksPerSecond: best.tasksPerSecond, bestClients: best.clients };
  });
}
