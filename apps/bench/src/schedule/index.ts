/**
 * apps/bench/src/schedule — the bench's scheduling-throughput section (issue 13): producers calling
 * `schedule` while hybrid workers listen, with schedule notices `each`, `coalesced` and `off`; the
 * result is a Markdown fragment of its own that the bench report includes.
 */
export { type ScheduleRateOptions, type ScheduleRateRun, runScheduleRate, runScheduleRateOnce, SCHEDULE_RATE_DEFAULTS } from './measure.js';
export { scheduleFragment, writeScheduleFragment } from './fragment.js';
export type { NoticeMode } from './messages.js';
