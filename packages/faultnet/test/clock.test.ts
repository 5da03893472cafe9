import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureFaultTools } from '@postpone/testkit';
import { beforeAll, describe, it } from 'vitest';
import { ALL_VARIANTS, CASE_WORKER, runCase, runVariant, variantName } from '../src/index.js';

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

beforeAll(() => {
  // Debian's libfaketime, installed by the set-up script when missing.
  if (!existsSync(LIBFAKETIME)) ensureFaultTools();
}, 200_000);

/** Most empty claims (claims that found nothing) reported in any one second, across the workers. */
function emptyClaimBurst(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! > 1_000) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

describe('evidence: wall clock steps', () => {
  it('wall_clock_steps: worker processes under libfaketime, wall clock stepped -60 s then +120 s mid-run', async () => {
    await runCase('wall_clock_steps', async (v, ctx) => {
      v.set('violations', 0).set('steps', ['-60s', '+120s']).set('monotonic', 'unchanged');
      let total = 0;
      const workers = 2;
      // One failed or empty claim per worker per poll interval, doubled: anything above is a burst.
      const burstLimit = 2 * workers * Math.ceil(1_000 / CASE_WORKER.pollIntervalMs) + 10;
      for (const variant of ALL_VARIANTS) {
        const p = `${variantName(variant)}_`;
        const dir = mkdtempSync(join(tmpdir(), 'postpone-faketime-'));
        const file = join(dir, 'offset');
        writeFileSync(file, '+0');
        try {
          const env = {
            LD_PRELOAD: LIBFAKETIME,
            FAKETIME_TIMESTAMP_FILE: file,
            FAKETIME_NO_CACHE: '1',
            // A real step (NTP, a VM resumed) moves the wall clock only; CLOCK_MONOTONIC goes on.
            FAKETIME_DONT_FAKE_MONOTONIC: '1',
          };
          const { run, violations } = await runVariant(
            v,
            ctx,
            variant,
            { workers, tasks: 100, firstDueMs: 300, spreadMs: 5_000, settleMs: 30_000, handler: { workMs: 350 }, env, prefix: p },
            async (_run, startedAt) => {
              await sleep(Math.max(0, startedAt + 1_500 - performance.now()));
              writeFileSync(file, '-60');
              await sleep(Math.max(0, startedAt + 3_000 - performance.now()));
              writeFileSync(file, '+60');
            },
          );
          total += violations;
          const leaseLost = run.children.flatMap((c) => c.eventsOf('leaseLost')).length;
          const empty = run.children.flatMap((c) => c.eventsOf('claimTimed')).filter((e) => e.count === 0).map((e) => e.receivedAt);
          const burst = emptyClaimBurst(empty);
          const late = run.claims().map((c) => c.claimedAtMs - c.dueAtMs);
          const maxLate = late.length === 0 ? -1 : Math.max(...late);
          // The children's wall clock at their stop, against the test's: +60 s when the steps took effect.
          const offsets = run.children.flatMap((c) => c.eventsOf('stopped')).map((e) => Math.round(((e.wallMs ?? 0) - (Date.now() - (performance.now() - e.receivedAt))) / 1_000));
          v.set(`${p}childClockOffsetS`, offsets);
          v.holds(`${p}child clocks stepped`, offsets.length === workers && offsets.every((s) => s >= 58 && s <= 62), `offsets ${JSON.stringify(offsets)} s`);
          v.set(`${p}leaseLost`, leaseLost).set(`${p}emptyClaims`, empty.length).set(`${p}maxEmptyClaimsPerSecond`, burst);
          v.equal(`${p}lease lost`, leaseLost, 0);
          v.equal(`${p}reclaims`, v.fields[`${p}reclaims`], 0);
          v.atMost(`${p}empty claims in one second (no burst)`, burst, burstLimit);
          // A stall from the step would be ~60 000 ms late; polling every 50 ms (hybrid: fallback 1 s) is far below 5 s.
          v.atMost(`${p}max lateness (no stall)`, maxLate, 5_000);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
      v.set('violations', total);
    });
  }, 240_000);
});
