import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { describe, expect, it } from 'vitest';
import { allReady, CASE_WORKER, ProcessGroup, spawnHarnessChild, startAll, stopAll, withCaseContext } from '../src/index.js';

const worker = { mode: 'worker' as const, worker: CASE_WORKER, handler: { kind: 'job' } };

describe('harness child (worker-main)', () => {
  it('reports an error and exits 1 when the database cannot be reached', async () => {
    const group = new ProcessGroup();
    try {
      const child = spawnHarnessChild(group, { name: 'lost', databaseUrl: 'postgres://postgres:x@127.0.0.1:1/postgres', schema: 's', run: worker });
      const error = await child.waitFor('error', () => true, 15_000);
      expect(error.message).toMatch(/ECONNREFUSED/);
      expect(await child.exited).toEqual({ code: 1, signal: null });
      expect(child.eventsOf('ready')).toHaveLength(0);
    } finally {
      await group.killAll();
    }
  });

  it('waits for start, runs a task with the real worker, and stops gracefully', async () => {
    await withCaseContext(testDatabaseUrl(), 'child', async (ctx) => {
      const child = ctx.spawn({ name: 'life', waitForStart: true, run: worker });
      await allReady([child]);
      const { id } = await ctx.store.schedule({ kind: 'job', payload: {} });
      await startAll([child]);
      await child.waitFor('started');
      const committed = await child.waitFor('committed', (e) => e.id === id);
      expect(committed).toMatchObject({ attempt: 1, outcome: 'DONE' });
      expect((await ctx.db.task(id)).result).toEqual({ by: 'life', attempt: 1 });
      await stopAll([child]);
      expect(child.status).toEqual({ code: 0, signal: null });
      expect(child.eventsOf('stopped')).toHaveLength(1);
    });
  });
});

describe('harness child behind a TCP proxy', () => {
  it('a blackholed worker loses its lease (the store cannot confirm a renewal in time)', async () => {
    await withCaseContext(testDatabaseUrl(), 'proxy', async (ctx) => {
      const proxy = await ctx.proxy();
      const child = ctx.spawn({
        name: 'cut',
        databaseUrl: proxy.rewrite(ctx.databaseUrl),
        run: { ...worker, handler: { kind: 'job', park: [{ point: 'afterClaim' }] } },
      });
      await allReady([child]);
      const { id } = await ctx.store.schedule({ kind: 'job', payload: {} });
      await child.waitFor('parked', (e) => e.id === id);
      await child.waitFor('renewed', (e) => e.id === id);
      proxy.setFault({ mode: 'blackhole' });
      const lost = await child.waitFor('leaseLost', (e) => e.id === id, 10_000);
      expect(lost.reason).toBe('lease-lost');
      expect(proxy.list().every((c) => c.mode === 'blackhole')).toBe(true);
      // The database still shows the claim: only the lease expiry (by its clock) can free the task.
      const task = await ctx.db.task(id);
      expect([task.state, task.attempt, task.leaseOwner]).toEqual(['CLAIMED', 1, 'cut']);
    });
  });
});
