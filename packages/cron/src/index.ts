/**
 * @postpone/cron — recurring schedules for Postpone (docs/contract.md#recurring-schedules): cron
 * expressions in a time zone (parsed by croner), each occurrence turned into exactly one task even
 * when many processes run the scheduler.
 *
 * ```ts
 * import { createCronScheduler } from '@postpone/cron';
 * const cron = createCronScheduler({
 *   store,
 *   schedules: [{ name: 'nightly-report', cron: '30 2 * * *', timeZone: 'America/New_York', kind: 'report' }],
 * });
 * await cron.start();
 * ```
 *
 * Terminology: an *occurrence* is one time the expression names; a schedule's *watermark* is the
 * latest occurrence already turned into a task (the store moves it in the same transaction as the
 * insert); the *horizon* is how far ahead occurrences become tasks.
 */
export { type CronPassReport, type CronSchedule, CronScheduler, type CronSchedulerOptions, createCronScheduler, type MissedPolicy } from './scheduler.js';
export { Occurrences } from './occurrences.js';
export type { CronScheduleRecord, CronStore, ReconcileCronResult, ScheduleCronOccurrenceResult } from '@postpone/core';
export { isCronStore } from '@postpone/core';
