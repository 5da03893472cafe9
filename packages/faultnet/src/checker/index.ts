/**
 * packages/faultnet/src/checker — the history checker of the fault cases (Jepsen's method): record every
 * operation of a run as it happens ({@link HistoryRecorder}), then judge the whole history at the end
 * ({@link checkHistory}) for lost tasks, claims before due or after a cancel, duplicate effects,
 * stale commits accepted, terminal states that changed and attempts that did not count up by one.
 * Pure: no I/O, no dependencies.
 */
export * from './checker.js';
