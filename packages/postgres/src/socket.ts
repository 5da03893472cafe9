/**
 * A bound on half-open connections (the peer or a middlebox stopped answering, no FIN, no RST):
 * TCP alone notices nothing while the kernel still acknowledges, so a query could wait forever.
 */
import type { Socket } from 'node:net';

/** Default for `replyTimeoutMs` (see {@link guardReplies}). */
export const DEFAULT_REPLY_TIMEOUT_MS = 30_000;

/** The `code` of the error a guarded socket is destroyed with. */
export const REPLY_TIMEOUT_CODE = 'REPLY_TIMEOUT';

/**
 * Destroys `socket` when it waited `replyTimeoutMs` for the server: from creation (connecting)
 * or from a write, until the next byte arrives. An idle connection (nothing written since the last
 * byte read, e.g. a LISTEN connection between notifications) is never timed out. The socket is
 * destroyed with an Error whose `code` is {@link REPLY_TIMEOUT_CODE}, which the driver reports as
 * a lost connection on every query in flight.
 *
 * The bound is on silence, not on a statement's duration: a statement that runs longer than
 * `replyTimeoutMs` without sending anything is cut too; keep `statement_timeout` below it.
 * Works on the raw TCP socket only (not under TLS, where the TLS layer reads the socket).
 *
 * @param replyTimeoutMs positive, milliseconds
 */
export function guardReplies<S extends Socket>(socket: S, replyTimeoutMs: number): S {
  let timer: NodeJS.Timeout | undefined;
  const fire = () => {
    timer = undefined;
    const error = Object.assign(new Error(`no reply from PostgreSQL within ${replyTimeoutMs} ms (half-open connection)`), { code: REPLY_TIMEOUT_CODE });
    socket.destroy(error);
  };
  const arm = () => {
    if (timer !== undefined || socket.destroyed) return;
    timer = setTimeout(fire, replyTimeoutMs);
    timer.unref();
  };
  const disarm = () => {
    if (timer === undefined) return;
    clearTimeout(timer);
    timer = undefined;
  };
  // An accessor, not an assignment: `Socket#connect` resets `this.write` to the prototype's.
  let write = socket.write;
  const guardedWrite = function guardedWrite(this: S, ...args: unknown[]): boolean {
    arm();
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  };
  Object.defineProperty(socket, 'write', {
    configurable: true,
    get: () => guardedWrite,
    set: (fn: S['write']) => {
      write = fn;
    },
  });
  // A 'data' listener would switch the stream to flowing before the driver listens: watch reads below it.
  const push = socket.push;
  socket.push = function guardedPush(this: S, chunk: unknown, encoding?: BufferEncoding) {
    if (chunk !== null) disarm();
    return push.call(this, chunk, encoding);
  };
  socket.once('close', disarm);
  arm();
  return socket;
}
