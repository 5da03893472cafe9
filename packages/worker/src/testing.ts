/**
 * `@postpone/worker/testing` — what a test of an application's handlers and workers needs: a pacing
 * that moves only when the test says ({@link ManualPacing}, passed as the worker's `pacing` option),
 * and a bounded wait for one worker event ({@link waitForEvent}).
 */
export { ManualPacing } from '@postpone/wheel';
export { waitForEvent, type WaitForEventOptions } from './events.js';
