/**
 * @postpone/faultnet — fault injection on real processes for Postpone's evidence cases (private).
 *
 * - `child/`: the program the child processes run — the real worker runtime ({@link spawnHarnessChild}),
 *   with events back over IPC and controls to them (`start`, `proceed` past a fault point, `stop`);
 *   real `SIGKILL`, `SIGSTOP`/`SIGCONT` ({@link ChildHandle}); every child killed with its
 *   {@link ProcessGroup}.
 * - `checker/`: the history checker that judges a fault run ({@link FaultRun}) from its event log.
 * - `faults/`: the database and host faults (a case's own PostgreSQL server, network-namespace
 *   hosts, a fake external service); the TCP proxy is `TcpProxy` of `@postpone/testkit`.
 * - The soak ({@link runSoak}) and case scaffolding: {@link runCase} with a {@link Verdict} writes one
 *   `CASE` line per case.
 *
 * Re-exports the bounded waits and the proxy of `@postpone/testkit`, so the cases import from one place.
 */
export { pollUntil, type PollOptions, TcpProxy, WaitTimeoutError, withTimeout } from '@postpone/testkit';
export * from './event-log.js';
export * from './child-process.js';
export * from './process-group.js';
export * from './harness-child.js';
export * from './child/index.js';
export * from './faults/index.js';
export * from './app-effect.js';
export * from './db-inspect.js';
export * from './claims.js';
export * from './settings.js';
export * from './verdict.js';
export * from './case-context.js';
export * from './run-case.js';
export * from './checker/index.js';
export * from './fault-run.js';
export * from './fault-cases.js';
export * from './soak.js';
export * from './soak-lateness.js';
