/**
 * `@postpone/faultnet/faults` — the database and host faults the evidence cases inject, each on
 * 127.0.0.1 (the TCP proxy that cuts and delays connections is `TcpProxy` of `@postpone/testkit`):
 *
 * - A PostgreSQL server of a case's own, stopped in immediate mode and started again on the same
 *   port and data folder ({@link PgServer}).
 * - A primary and a streaming standby (base backup, synchronous or not) and the failover between
 *   them: the old primary fenced read-only, the standby promoted ({@link PgStandbyPair}).
 * - A fake external HTTP service that applies each idempotency key once ({@link ExternalService},
 *   {@link callExternal}).
 * - Worker hosts as network namespaces on a private bridge, whose links can be cut ({@link NetnsHosts}).
 */

export * from './pg-server.js';
export * from './pg-standby.js';
export * from './external-service.js';
export * from './netns.js';
