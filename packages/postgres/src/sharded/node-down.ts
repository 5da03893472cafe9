/**
 * A Citus worker node's outage as the coordinator reports it (issue #25, docs/sharding.md "A worker
 * node down"): the sharded front sends a keyless schedule that met it to the next group.
 */

/** What the coordinator's ErrorResponse says when a statement needed a worker node that is down (Citus 13.2). */
const REMOTE_NODE_DOWN = /connection to the remote node .* failed|failure on connection marked as essential/;

/**
 * True when `error` (a store error, its causes walked) carries the coordinator's ErrorResponse for a
 * worker node it could not reach: SQLSTATE 08006 or XX000 with one of Citus's messages for it. The
 * coordinator's own session is alive and the statement failed, so its autocommit transaction rolled
 * back: nothing was written, and the same schedule may go to another group. A lost connection to the
 * coordinator itself is not this (its outcome is unknown).
 */
export function isRemoteNodeDown(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; depth < 8 && e !== null && typeof e === 'object'; depth += 1) {
    const { code, message, severity } = e as { code?: unknown; message?: unknown; severity?: unknown };
    if ((code === '08006' || code === 'XX000') && severity === 'ERROR' && typeof message === 'string' && REMOTE_NODE_DOWN.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
