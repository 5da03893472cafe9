/**
 * The scheduling-throughput measurement: a short real run (2 producers, 1 hybrid worker, 1 s) and
 * the report fragment. Rates are printed by the bench, never asserted here; the run's counts are.
 */
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { describe, expect, it } from 'vitest';
import { runScheduleRateOnce, type ScheduleRateRun, scheduleFragment } from '../../dist/schedule/index.js';

describe('scheduling throughput', () => {
  it('a short coalesced run schedules tasks, announces them with fewer NOTIFYs than schedules, and its worker claims probes no earlier than due', async () => {
    const options = { url: testDatabaseUrl(), producers: 2, workers: 1, durationMs: 1_000, modes: ['coalesced' as const], rounds: 1, probeEvery: 5 };
    const run = await runScheduleRateOnce(options, 'coalesced', 1);
    expect(run.scheduled).toBeGreaterThan(0);
    // Every 5th schedule of each producer (its 1st, 6th, …) is a probe.
    expect(run.probes).toBeLessThanOrEqual(Math.ceil(run.scheduled / 5) + options.producers);
    expect(run.probes).toBeGreaterThan(0);
    expect(run.coalescedNotifies).toBeGreaterThan(0);
    expect(run.coalescedNotifies).toBeLessThanOrEqual(run.scheduled);
    expect(run.probesClaimed).toBeLessThanOrEqual(run.probes);
    if (run.lateness.p50 !== null) expect(run.lateness.p50).toBeGreaterThanOrEqual(0);
    expect(run.perSecond).toBe(Math.round(run.scheduled / 1));
  }, 60_000);

  it('the fragment has one row per run and the coalesced / off ratio of the median rates', () => {
    const run = (mode: ScheduleRateRun['mode'], perSecond: number): ScheduleRateRun => ({
      mode,
      round: 1,
      scheduled: perSecond * 10,
      perSecond,
      coalescedNotifies: mode === 'coalesced' ? 100 : 0,
      probes: 10,
      probesClaimed: 10,
      lateness: { p50: 3, p99: 8, max: 9 },
      claims: 10,
      emptyClaims: 0,
    });
    const text = scheduleFragment({ producers: 8, workers: 3, durationMs: 10_000, modes: ['each', 'coalesced', 'off'], rounds: 1, probeEvery: 50 }, [run('each', 500), run('coalesced', 950), run('off', 1_000)]);
    expect(text).toContain('## Scheduling throughput with notifications');
    expect(text.split('\n').filter((l) => l.startsWith('| `'))).toHaveLength(3);
    expect(text).toContain('coalesced / off (median schedules/s): **0.95**');
    expect(text).toContain('each / off (median schedules/s): **0.50**');
  });
});
