/**
 * @postpone/faults — the network and database faults the evidence cases inject, each on 127.0.0.1:
 *
 * - A TCP proxy in front of PostgreSQL that passes, delays, drops (RST) or blackholes (half-open),
 *   for every connection or one ({@link TcpProxy}).
 * - A PostgreSQL server of a case's own, stopped in immediate mode and started again on the same
 *   port and data folder ({@link PgServer}).
 * - A fake external HTTP service that applies each idempotency key once ({@link ExternalService},
 *   {@link callExternal}).
 * - Worker hosts as network namespaces on a private bridge, whose links can be cut ({@link NetnsHosts}).
 */
export * from './tcp-proxy.js';
export * from './pg-server.js';
export * from './external-service.js';
export * from './netns.js';
