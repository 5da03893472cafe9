/**
 * @postpone/harness — fault injection on real processes for Postpone's evidence cases.
 *
 * - Child processes running the real worker runtime ({@link spawnHarnessChild}), with events back
 *   over IPC and controls to them (`start`, `proceed` past a fault point, `stop`); real `SIGKILL`,
 *   `SIGSTOP`/`SIGCONT` ({@link ChildHandle}); every child killed with its {@link ProcessGroup}.
 * - A TCP proxy in front of PostgreSQL that passes, delays, drops or blackholes ({@link TcpProxy}).
 * - A fake external service that applies each idempotency key once ({@link ExternalService}).
 * - Negative controls: read-then-update claim, unfenced complete, effect table without a unique key
 *   ({@link NegativeControls}) — harness only, never the product.
 * - Case scaffolding: {@link runCase} with a {@link Verdict} writes one `CASE` line per case.
 */
export * from './wait.js';
export * from './event-log.js';
export * from './child-process.js';
export * from './process-group.js';
export * from './harness-child.js';
export * from './child/protocol.js';
export * from './tcp-proxy.js';
export * from './external-service.js';
export * from './negative/sql.js';
export * from './negative/controls.js';
export * from './db-inspect.js';
export * from './claims.js';
export * from './settings.js';
export * from './verdict.js';
export * from './case-context.js';
export * from './run-case.js';
export * from './history.js';
export * from './fault-run.js';
export * from './pg-server.js';
export * from './fault-cases.js';
export * from './soak.js';
