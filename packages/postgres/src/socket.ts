/**
 * A bound on half-open connections (the peer or a middlebox stopped answering, no FIN, no RST):
 * TCP alone notices nothing while the kernel still acknowledges, so a query could wait forever.
 */
import type { Socket } from 'node:net';

/** Default for `replyTimeoutMs` (see {@link guardReplies}). */
export const DEFAULT_REPLY_TIMEOUT_MS = 30_000;

/** The `code` of the error a guarded socket is destroyed with. */
export const REPLY_TIMEOUT_CODE = 'REPLY_TIMEOUT';

// Frontend messages each answered by exactly one ReadyForQuery ('Z'): a simple query, a Sync (the end
// of an extended-protocol exchange, whatever it held) and a function call. PostgreSQL protocol 3,
// "Message Flow" (https://www.postgresql.org/docs/current/protocol-flow.html).
const ANSWERED_BY_READY = new Set(['Q'.charCodeAt(0), 'S'.charCodeAt(0), 'F'.charCodeAt(0)]);
const READY_FOR_QUERY = 'Z'.charCodeAt(0);
// Untyped first messages that are not a StartupMessage: CancelRequest (answered by nothing),
// SSLRequest and GSSENCRequest (answered by one untyped byte, which the framing below cannot follow).
const CANCEL_REQUEST_CODE = 80877102;
const ENCRYPTION_REQUEST_CODES = new Set([80877103, 80877104]);

/**
 * Splits a PostgreSQL protocol byte stream, cut anywhere into chunks, into messages: a type byte
 * and an Int32 length that counts itself, then the body. With `untypedFirst`, the first message has
 * no type byte (the frontend's StartupMessage and its kin); `onMessage` gets type -1 and the Int32
 * after the length (the protocol or request code) for it.
 */
class MessageFramer {
  private readonly header: Buffer;
  private headerFilled = 0;
  private bodyLeft = 0;
  private untyped: boolean;

  constructor(
    untypedFirst: boolean,
    private readonly onMessage: (type: number, code: number) => void,
  ) {
    this.untyped = untypedFirst;
    this.header = Buffer.alloc(8);
  }

  feed(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.bodyLeft > 0) {
        const skip = Math.min(this.bodyLeft, chunk.length - at);
        this.bodyLeft -= skip;
        at += skip;
        continue;
      }
      // Header: type (1) + length (4); untyped: length (4) + code (4).
      const need = this.untyped ? 8 : 5;
      const take = Math.min(need - this.headerFilled, chunk.length - at);
      chunk.copy(this.header, this.headerFilled, at, at + take);
      this.headerFilled += take;
      at += take;
      if (this.headerFilled < need) return;
      this.headerFilled = 0;
      if (this.untyped) {
        this.untyped = false;
        this.bodyLeft = Math.max(0, this.header.readInt32BE(0) - 8);
        this.onMessage(-1, this.header.readInt32BE(4));
      } else {
        this.bodyLeft = Math.max(0, this.header.readInt32BE(1) - 4);
        this.onMessage(this.header[0]!, 0);
      }
    }
  }
}

function asBuffer(data: unknown, encoding: unknown): Buffer | undefined {
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (typeof data === 'string') return Buffer.from(data, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return undefined;
}

/**
 * Destroys `socket` when the client waits for the server and the server has sent nothing for
 * `replyTimeoutMs`. The client waits from the StartupMessage, and from every simple query, Sync or
 * function call it writes, until the ReadyForQuery that answers it: the guard counts both in the
 * protocol stream, so a reply that arrives in pieces, and queries pipelined behind one that was
 * answered (postgres.js sends the next before the first returns), stay bounded until their own
 * answer. An idle connection (every request answered, e.g. a LISTEN connection between
 * notifications) is never timed out. The socket is destroyed with an Error whose `code` is
 * {@link REPLY_TIMEOUT_CODE}, which the driver reports as a lost connection on every query in flight.
 *
 * The bound is on silence, not on a statement's duration: a statement that runs longer than
 * `replyTimeoutMs` without sending anything is cut too; keep `statement_timeout` below it.
 * Works on the raw TCP socket only, without TLS (where the TLS layer reads the socket); if the
 * client asks for encryption anyway, the guard falls back to timing from a write to the next byte.
 *
 * @param replyTimeoutMs positive, milliseconds
 */
export function guardReplies<S extends Socket>(socket: S, replyTimeoutMs: number): S {
  let timer: NodeJS.Timeout | undefined;
  /** Requests written and not yet answered by a ReadyForQuery. */
  let awaiting = 0;
  /** Set when the stream cannot be framed (an encryption request): time from a write to the next byte. */
  let unframed = false;
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
  const sent = new MessageFramer(true, (type, code) => {
    if (type === -1) {
      if (ENCRYPTION_REQUEST_CODES.has(code)) unframed = true;
      else if (code !== CANCEL_REQUEST_CODE) awaiting += 1;
    } else if (ANSWERED_BY_READY.has(type)) awaiting += 1;
  });
  const received = new MessageFramer(false, (type) => {
    if (type === READY_FOR_QUERY && awaiting > 0) awaiting -= 1;
  });

  // An accessor, not an assignment: `Socket#connect` resets `this.write` to the prototype's.
  let write = socket.write;
  const guardedWrite = function guardedWrite(this: S, ...args: unknown[]): boolean {
    const bytes = unframed ? undefined : asBuffer(args[0], args[1]);
    if (bytes !== undefined) sent.feed(bytes);
    if (unframed || awaiting > 0) arm();
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
    if (chunk !== null) {
      // Any byte is progress: restart the wait, and keep waiting while a request is unanswered.
      disarm();
      const bytes = unframed ? undefined : asBuffer(chunk, encoding);
      if (bytes !== undefined) received.feed(bytes);
      if (!unframed && awaiting > 0) arm();
    }
    return push.call(this, chunk, encoding);
  };
  socket.once('close', disarm);
  // Connecting counts as waiting: the StartupMessage is written once the socket connects.
  arm();
  return socket;
}
