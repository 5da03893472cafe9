#!/usr/bin/env node
/**
 * `postpone-bench-schedule [--seconds n] [--rounds n] [--out file]`: runs the scheduling-throughput
 * measurement on `DATABASE_URL` (or an embedded PostgreSQL 17) and writes its report fragment
 * (default `evidence/bench/fragments/schedule.md`) and the runs as JSON beside it.
 */
import { resolveDatabase } from '@postpone/embedded';
import { parseArgs } from 'node:util';
import { scheduleFragment, writeScheduleFragment } from './fragment.js';
import { runScheduleRate, SCHEDULE_RATE_DEFAULTS } from './measure.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string' }, rounds: { type: 'string' }, out: { type: 'string' }, producers: { type: 'string' } },
});
const positive = (v: string | undefined, fallback: number) => {
  const n = v === undefined ? fallback : Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`expected a positive integer, got ${v}`);
  return n;
};
const options = {
  ...SCHEDULE_RATE_DEFAULTS,
  producers: positive(values.producers, SCHEDULE_RATE_DEFAULTS.producers),
  durationMs: positive(values.seconds, SCHEDULE_RATE_DEFAULTS.durationMs / 1_000) * 1_000,
  rounds: positive(values.rounds, SCHEDULE_RATE_DEFAULTS.rounds),
};
const out = values.out ?? 'evidence/bench/fragments/schedule.md';
const db = await resolveDatabase();
try {
  const runs = await runScheduleRate({ ...options, url: db.url }, (r) => process.stderr.write(`${r.mode} round ${r.round}: ${r.perSecond} schedules/s, probe p99 ${r.lateness.p99} ms\n`));
  const text = scheduleFragment(options, runs);
  writeScheduleFragment(out, text);
  writeScheduleFragment(out.replace(/\.md$/, '.json'), `${JSON.stringify({ options, runs }, null, 2)}\n`);
  process.stdout.write(text);
} finally {
  await db.stop();
}
