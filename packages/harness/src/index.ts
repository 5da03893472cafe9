/**
 * @postpone/harness — fault injection on real processes for Postpone's evidence cases.
 *
 * - Child processes running the real worker runtime ({@link spawnHarnessChild}; the program itself
 *   is `@postpone/harness-child`), with events back over IPC and controls to them (`start`, `proceed`
 *   past a fault point, `stop`); real `SIGKILL`, `SIGSTOP`/`SIGCONT` ({@link ChildHandle}); every
 *   child killed with its {@link ProcessGroup}.
 * - Fault runs judged by the history checker of `@postpone/history` ({@link FaultRun}), over the
 *   network and database faults of `@postpone/faults`, and the soak ({@link runSoak}).
 * - Case scaffolding: {@link runCase} with a {@link Verdict} writes one `CASE` line per case.
 *
 * Re-exports `@postpone/harness-child`, `@postpone/faults`, `@postpone/history` and the bounded waits
 * of `@postpone/testkit`, so the cases import from one place.
 */
export { pollUntil, type PollOptions, WaitTimeoutError, withTimeout } from '@postpone/testkit';
export * from './event-log.js';
export * from './child-process.js';
export * from './process-group.js';
export * from './harness-child.js';
export * from '@postpone/harness-child';
export * from '@postpone/faults';
export * from './db-inspect.js';
export * from './claims.js';
export * from './settings.js';
export * from './verdict.js';
export * from './case-context.js';
export * from './run-case.js';
export * from '@postpone/history';
export * from './fault-run.js';
export * from './fault-cases.js';
export * from './soak.js';
