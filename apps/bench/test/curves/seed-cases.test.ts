/**
 * The short form of the bench's seed measurements, inside `turbo test`: the two CASE lines of
 * docs/contract.md#evidence that the bench owns. Both assert shapes and invariants (plan nodes, rows removed,
 * orderings, counts), never wall-clock figures; the measured values are printed in the CASE line.
 */
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { recordCase } from '@postpone/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { measurePartialDueIndex, partialIndexShapeHolds } from '../../src/seed/partial-index.js';
import { measurePollTradeoff, pollShapeHolds } from '../../src/seed/poll-interval.js';

const schemas: string[] = [];

afterAll(async () => {
  for (const schema of schemas) await dropSchema(testDatabaseUrl(), schema);
});

describe('seed measurements', () => {
  it('boundary_partial_due_index: now() is an index condition, clock_timestamp() a filter over every not-due row', async () => {
    const schema = uniqueSchemaName('bench_pdi');
    schemas.push(schema);
    const r = await measurePartialDueIndex({ url: testDatabaseUrl(), schema, tasks: 40_000, notDue: 20_000 });
    const pass = partialIndexShapeHolds(r);
    recordCase('boundary_partial_due_index', pass, {
      tasks: r.tasks,
      notDue: r.notDue,
      finished: r.finished,
      due: 0,
      nowScan: `${r.now.nodeType}/${r.now.indexName}`,
      nowIndexCond: r.now.indexCond,
      nowBuffers: r.now.buffers,
      clockScan: `${r.clock.nodeType}/${r.clock.indexName}`,
      clockFilter: r.clock.filter === null ? null : 'clock_timestamp',
      clockRowsRemovedByFilter: r.clock.rowsRemovedByFilter,
      clockBuffers: r.clock.buffers,
      nowExecUs: Math.round(r.now.executionMs * 1000),
      clockExecUs: Math.round(r.clock.executionMs * 1000),
    });
    expect(r.now.indexName).toBe('task_claim_idx');
    expect(r.now.indexCond).toMatch(/due_at <= .*now\(\)/);
    expect(r.now.rowsRemovedByFilter).toBe(0);
    expect(r.clock.indexCond ?? '').not.toMatch(/due_at/);
    expect(r.clock.filter).toMatch(/due_at <= .*clock_timestamp\(\)/);
    expect(r.clock.rowsRemovedByFilter).toBe(20_000);
    expect(r.now.buffers).toBeLessThan(r.clock.buffers);
    expect(pass).toBe(true);
  });

  it('poll_interval_tradeoff: 500 ms polling is later at the tail and sends fewer claims than 50 ms', async () => {
    const prefix = uniqueSchemaName('bench_poll');
    schemas.push(`${prefix}_fast`, `${prefix}_slow`);
    const t = await measurePollTradeoff({ url: testDatabaseUrl(), schemaPrefix: prefix, fastMs: 50, slowMs: 500, load: { tasks: 30, spreadMs: 2_000, leadMs: 200 } });
    const pass = pollShapeHolds(t);
    recordCase('poll_interval_tradeoff', pass, {
      tasks: t.fast.tasks,
      spreadMs: 2_000,
      fastPollMs: t.fast.pollIntervalMs,
      fastP50: t.fast.lateness.p50,
      fastP99: t.fast.lateness.p99,
      fastMax: t.fast.lateness.max,
      fastClaimQueries: t.fast.claimQueries,
      fastEmptyClaims: t.fast.emptyClaims,
      slowPollMs: t.slow.pollIntervalMs,
      slowP50: t.slow.lateness.p50,
      slowP99: t.slow.lateness.p99,
      slowMax: t.slow.lateness.max,
      slowClaimQueries: t.slow.claimQueries,
      slowEmptyClaims: t.slow.emptyClaims,
      early: t.fast.early + t.slow.early,
      windowMs: t.fast.windowMs,
    });
    expect(t.fast.lateness.count).toBe(30);
    expect(t.slow.lateness.count).toBe(30);
    expect(t.fast.early + t.slow.early).toBe(0);
    expect(t.fast.lateness.min).toBeGreaterThanOrEqual(0);
    expect(t.slow.lateness.min).toBeGreaterThanOrEqual(0);
    expect(t.slow.lateness.max).toBeGreaterThan(t.fast.lateness.max);
    expect(t.fast.claimQueries).toBeGreaterThan(t.slow.claimQueries);
    expect(pass).toBe(true);
  });
});
