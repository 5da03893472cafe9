/**
 * The pure parts of the seed cases and curves: the derived clock_timestamp() claim and the two timer
 * queues on the same input. No database, no timing assertions.
 */
import { describe, expect, it } from 'vitest';
import { runHeap, runWheel, timerQueueInput } from '../../src/curves/timer-queues.js';
import { claimSql, clockTimestampClaimSql } from '../../src/seed/claim-variants.js';

describe('claim variants', () => {
  it('derives the clock_timestamp() claim from the store statement, changing only the due predicate', () => {
    const now = claimSql('bench_x');
    const clock = clockTimestampClaimSql('bench_x');
    expect(now).toMatch(/due_at <= coalesce\(\$1::timestamptz, now\(\)\)/);
    expect(clock).toMatch(/due_at <= coalesce\(\$1::timestamptz, clock_timestamp\(\)\)/);
    expect(clock).not.toMatch(/due_at <= coalesce\(\$1::timestamptz, now\(\)\)/);
    expect(clock.length - now.length).toBe('clock_timestamp()'.length - 'now()'.length);
  });
});

describe('timer queues', () => {
  it('fire exactly the timers not cancelled, on the same seeded input', () => {
    const input = timerQueueInput(5_000, { spanTicks: 10_000, seed: 7 });
    expect(input.cancels.length).toBeGreaterThan(500);
    expect(new Set(input.cancels).size).toBe(input.cancels.length);
    const wheel = runWheel(input);
    const heap = runHeap(input);
    expect(wheel.fired).toBe(5_000 - input.cancels.length);
    expect(heap.fired).toBe(wheel.fired);
    expect(heap.ops).toBe(wheel.ops);
    expect(timerQueueInput(100, { seed: 7 }).dueTicks).toEqual(timerQueueInput(100, { seed: 7 }).dueTicks);
  });
});
