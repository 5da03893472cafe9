/**
 * A bound on half-open connections (the peer or a middlebox stopped answering, no FIN, no RST):
 * TCP alone notices nothing while the kernel still acknowledges, so a query could wait forever.
 */
import type { Socket } from 'node:net';

/** Default for `replyTimeoutMs` (see {@link guardReplies}). */
export const DEFAULT_REPLY_TIMEOUT_MS = 30_000;

/** The `code` of the error a guarded socket is destroyed with. */
export const REPLY_TIMEOUT_CODE = 'REPLY_TIMEOUT';

const code = (letter: string) => letter.charCodeAt(0);
// What the client waits for after each kind of frontend message (PostgreSQL protocol 3, "Message
// Flow", https://www.postgresql.org/docs/current/protocol-flow.html):
// - a simple query, a Sync (the end of an extended-protocol exchange, whatever it held) and a
//   function call are each answered by exactly one ReadyForQuery ('Z');
// - a Flush asks for what the messages before it produce without a Sync (postgres.js sends
//   Parse + Describe + Flush to learn a new statement's types, and Execute + Flush for cursors): it
//   is answered once a describe or an execution ends: RowDescription, NoData, CommandComplete,
//   PortalSuspended, EmptyQueryResponse or ErrorResponse;
// - a Terminate is answered by the server closing the connection.
const READY = new Set([code('Q'), code('S'), code('F')]);
const FLUSH = code('H');
const TERMINATE = code('X');
const READY_FOR_QUERY = code('Z');
const ENDS_FLUSHED = new Set([code('T'), code('n'), code('C'), code('s'), code('I'), code('E'), READY_FOR_QUERY]);
type Awaited = 'ready' | 'flushed' | 'close';
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
 * `replyTimeoutMs`. The client waits from each request it writes until the message that answers
 * it: from the StartupMessage, a simple query, a Sync or a function call until its ReadyForQuery,
 * from a Flush until the describe or execution before it ends, from a Terminate until the
 * connection closes. The guard follows both directions of the protocol stream, so a reply that
 * arrives in pieces, and a request pipelined behind one that was answered (postgres.js sends the
 * next before the first returns), stay bounded until their own answer. An idle connection (every request answered, e.g. a LISTEN connection between
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
  /** Requests written and not yet answered, oldest first (the server answers in order). */
  const awaiting: Awaited[] = [];
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
  const sent = new MessageFramer(true, (type, requestCode) => {
    if (type === -1) {
      // The StartupMessage is answered by the ReadyForQuery that ends authentication.
      if (ENCRYPTION_REQUEST_CODES.has(requestCode)) unframed = true;
      else if (requestCode !== CANCEL_REQUEST_CODE) awaiting.push('ready');
    } else if (READY.has(type)) awaiting.push('ready');
    else if (type === FLUSH) awaiting.push('flushed');
    else if (type === TERMINATE) awaiting.push('close');
  });
  const received = new MessageFramer(false, (type) => {
    const oldest = awaiting[0];
    if ((oldest === 'ready' && type === READY_FOR_QUERY) || (oldest === 'flushed' && ENDS_FLUSHED.has(type))) awaiting.shift();
  });
  const watchSent = (args: unknown[]) => {
    const bytes = unframed ? undefined : asBuffer(args[0], args[1]);
    if (bytes !== undefined) sent.feed(bytes);
    if (unframed || awaiting.length > 0) arm();
  };

  // Accessors, not assignments: `Socket#connect` resets `this.write` to the prototype's. `end(data)`
  // writes without calling `write` (postgres.js sends its Terminate that way), so both are watched.
  for (const name of ['write', 'end'] as const) {
    let original = socket[name] as (...a: unknown[]) => unknown;
    const watched = function watched(this: S, ...args: unknown[]): unknown {
      if (name === 'write' || (args[0] !== undefined && typeof args[0] !== 'function')) watchSent(args);
      return original.apply(this, args);
    };
    Object.defineProperty(socket, name, {
      configurable: true,
      get: () => watched,
      set: (fn: (...a: unknown[]) => unknown) => {
        original = fn;
      },
    });
  }
  // A 'data' listener would switch the stream to flowing before the driver listens: watch reads below it.
  const push = socket.push;
  socket.push = function guardedPush(this: S, chunk: unknown, encoding?: BufferEncoding) {
    if (chunk !== null) {
      // Any byte is progress: restart the wait, and keep waiting while a request is unanswered.
      disarm();
      const bytes = unframed ? undefined : asBuffer(chunk, encoding);
      if (bytes !== undefined) received.feed(bytes);
      if (!unframed && awaiting.length > 0) arm();
    }
    return push.call(this, chunk, encoding);
  };
  socket.once('close', disarm);
  // Connecting counts as waiting: the StartupMessage is written once the socket connects.
  arm();
  return socket;
}
