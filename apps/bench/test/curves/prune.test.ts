/**
 * The short form of the bench's "claim while pruning" measurement (issue 15): 20 000 finished tasks
 * pruned in batches of 500 while a probe loop schedules, claims and completes a trickle of due tasks.
 * Invariants only (counts, lock modes, buffers under a fixed bound), never wall-clock figures; the
 * bench reports the timings.
 */
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { afterAll, describe, expect, it } from 'vitest';
import { CLAIM_COMPATIBLE_LOCKS, measureClaimWhilePruning, pruneInvariantsHold } from '../../src/curves/prune.js';

const schemas: string[] = [];

afterAll(async () => {
  for (const schema of schemas) await dropSchema(testDatabaseUrl(), schema);
});

/**
 * Largest claim statement buffers allowed in any probe. A claim of 2 due tasks reads a page or two of
 * `task_claim_idx`, the two heap pages, and writes two new row versions with their index entries
 * (task_claim_idx is not among them: the new rows are CLAIMED); a claim that scanned the history would
 * touch the ~400 heap pages of 20 000 rows.
 */
const MAX_CLAIM_BUFFERS = 80;

describe('claim while pruning', () => {
  it('prune deletes every finished row in bounded batches while claims go on unblocked', async () => {
    const schema = uniqueSchemaName('bench_prune');
    schemas.push(schema);
    const finished = 20_000;
    const batchSize = 500;
    const trickle = 2;
    const r = await measureClaimWhilePruning({
      url: testDatabaseUrl(),
      schema,
      finished,
      batchSize,
      probes: 20,
      maxDuringProbes: 5_000,
      trickle,
      pauseMs: 2,
      slowClaimMs: 50,
    });
    const [before, during, after] = r.phases;
    console.info(
      `prune ${r.deleted} tasks + ${r.effectsDeleted} effects in ${r.batches} batches; claims before/during/after ${before?.claims}/${during?.claims}/${after?.claims}; buffers max ${r.phases.map((p) => p.buffersMax).join('/')}; prune locks ${r.pruneLocks.join(', ')}; ${r.lockSamples} lock reads`,
    );
    // The count returned is the rows deleted: all the history, none of the rest.
    expect(r.finished).toBe(finished);
    expect(r.deleted).toBe(finished);
    // No effect rows since migration 13 (the DONE rows carry their worker): none written, none deleted.
    expect(r.effects).toBe(0);
    expect(r.effectsDeleted).toBe(0);
    expect(r.historyLeft).toBe(0);
    expect(r.historyEffectsLeft).toBe(0);
    // Bounded batches: full ones, then the one that found fewer than batchSize rows.
    expect(r.batches).toBe(finished / batchSize + 1);
    expect(r.notDueUntouched).toBe(true);
    expect(r.dueLeft).toBe(0);
    // Claims ran during the prune, and every claim returned the tasks just made due.
    expect(during?.claims ?? 0).toBeGreaterThan(0);
    for (const p of r.phases) {
      expect(p.emptyClaims).toBe(0);
      expect(p.claimed).toBe(p.claims * trickle);
      expect(p.buffersMax).toBeLessThanOrEqual(MAX_CLAIM_BUFFERS);
    }
    // No lock the claim side waited for; the prune holds only locks compatible with a claim's UPDATE.
    expect(r.lockSamples).toBeGreaterThan(0);
    expect(r.claimLockWaits).toBe(0);
    for (const lock of r.pruneLocks) expect(CLAIM_COMPATIBLE_LOCKS).toContain(lock.split(': ')[1]);
    expect(pruneInvariantsHold(r)).toBe(true);
  });
});
