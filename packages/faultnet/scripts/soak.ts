/**
 * `pnpm soak`: the full soak (100 000 tasks over 5 minutes, 4 worker processes, SIGKILL or
 * SIGSTOP/SIGCONT every 2–5 s, two database restarts, 5 000 cancels). Writes evidence/soak.md and
 * exits 1 when the history checker found a violation. Not part of `pnpm test` (soak_short is).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { evidenceDir } from '@postpone/testkit';
// The built package (`pnpm soak` builds it first), not ../src: the worker processes are then spawned
// from dist as plain `node`, not through tsx, which compiled every module at each spawn and made a
// replacement process take 13–23 s to be ready on the loaded machine (evidence/soak.md).
import { runSoak, soakMarkdown } from '@postpone/faultnet';

const started = new Date();
const report = await runSoak({
  tasks: Number(process.env.SOAK_TASKS ?? 100_000),
  durationMs: Number(process.env.SOAK_DURATION_MS ?? 300_000),
  // The tasks are scheduled ahead (delayed work): 100 000 take 5–20 s to insert on this machine.
  leadMs: Number(process.env.SOAK_LEAD_MS ?? 30_000),
  workers: 4,
  restarts: 2,
  restartOutageMs: 5_000,
  cancels: Number(process.env.SOAK_CANCELS ?? 5_000),
  chaosMinMs: 2_000,
  chaosMaxMs: 5_000,
  settleMs: 180_000,
  seed: Number(process.env.SOAK_SEED ?? 12_345),
  log: (line) => console.log(`[soak ${Math.round((Date.now() - started.getTime()) / 1000)}s] ${line}`),
});
const markdown = soakMarkdown(report, started);
// SOAK_WRITE=0: a trial run (other sizes), evidence/soak.md left as it is.
if (process.env.SOAK_WRITE !== '0') writeFileSync(join(evidenceDir(), 'soak.md'), markdown);
console.log(markdown);
process.exit(report.verdict.violations.length === 0 && report.allTerminal && report.crashed.length === 0 ? 0 : 1);
