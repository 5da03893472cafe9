/**
 * The listening side of both adapters: ONE connection per pool / `sql` for every `listen` call
 * (docs/contract.md#connection-budget). Each adapter supplies how to open one listening connection
 * ({@link OpenListenConnection}: `pg.ts`, `postgres-js.ts`); {@link sharedListener} does the rest.
 */
import type { ListenOptions, Unlisten } from '../store/driver.js';

/**
 * One listening connection of an adapter, opened by {@link OpenListenConnection}: LISTEN and
 * UNLISTEN on it, and `close` (UNLISTEN everything and hand the connection back, bounded in time).
 * `listen` / `unlisten` reject with the driver error; a failure there also counts as lost.
 */
export interface ListenConnection {
  listen(channel: string): Promise<void>;
  unlisten(channel: string): Promise<void>;
  /** True when the server of this connection is read-only (a standby, the old primary after a failover). Rejects when the connection fails. */
  readOnly(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * What a listening connection asks to learn whether its server takes writes: `on` on a hot standby
 * and on a server whose `default_transaction_read_only` is on (the old primary after a failover,
 * still reached by a connection opened before the switch or through a DNS name that lags). A
 * listener there would hear nothing the writers send: it counts as lost and opens a new connection.
 */
export const READ_ONLY_PROBE = "select current_setting('transaction_read_only') as ro";

/** Thrown when a listening connection opened on a read-only server (see {@link READ_ONLY_PROBE}). */
export class ReadOnlyListenError extends Error {
  /** SQLSTATE 25006 read_only_sql_transaction, as the server says for a refused write. */
  readonly code = '25006';
  constructor() {
    super('the listening connection reached a read-only server (wrong node, e.g. the old primary after a failover); it is opened again');
    this.name = 'ReadOnlyListenError';
  }
}

/**
 * Opens one listening connection: `onNotify(channel, payload)` for each notification on it,
 * `onLost()` at most once when it failed (error, end, or a heartbeat without reply), never after
 * `close()`. @throws the driver error when no connection could be opened
 */
export type OpenListenConnection = (events: {
  readonly onNotify: (channel: string, payload: string) => void;
  readonly onLost: () => void;
}) => Promise<ListenConnection>;

/** First and largest pause between attempts to open the shared listening connection again, in ms. */
export const RELISTEN_FIRST_MS = 100;
export const RELISTEN_MAX_MS = 5_000;

/** The shared LISTEN connection of a driver (see {@link sharedListener}). */
export interface SharedListener {
  /** Adds a subscriber to `channel` (LISTEN once per channel). @throws the driver error when LISTEN failed */
  listen(channel: string, onNotify: (payload: string) => void, options?: ListenOptions): Promise<Unlisten>;
  /** Channels LISTENed right now on the open connection (0 while disconnected). */
  readonly listening: number;
  /**
   * Asks the open connection whether its server is read-only and, when it is (or the question
   * fails), drops it and opens a new one after the usual pause: called when a write met 25006 (a
   * failover), so the listener leaves the old primary with the writers. Concurrent calls coalesce.
   */
  recheck(): void;
  /** Ends every subscription and the connection. Idempotent. */
  closeAll(): Promise<void>;
}

/**
 * At most ONE listening connection per listener, whatever the number of `listen` calls
 * (docs/contract.md#connection-budget): channels are reference-counted (one LISTEN per channel,
 * one UNLISTEN when its last subscriber leaves, the connection handed back when none is left), and
 * each notification fans out to the channel's subscribers. When the connection is lost it is opened
 * again after 100 ms doubling to 5 s, every channel is LISTENed again, and every subscriber's
 * `onReconnect` runs (notifications sent meanwhile are lost: re-read the store there). Operations
 * run one at a time. A subscriber callback that throws is ignored (the others still get the notice).
 */
export function sharedListener(open: OpenListenConnection): SharedListener {
  type Sub = { readonly onNotify: (payload: string) => void; readonly options: ListenOptions };
  const subs = new Map<string, Set<Sub>>();
  let current: { readonly conn: ListenConnection; readonly gen: number; readonly channels: Set<string> } | undefined;
  let generation = 0;
  let lostGen = -1;
  let timer: NodeJS.Timeout | undefined;
  let pauseMs = RELISTEN_FIRST_MS;
  let closed = false;
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn);
    chain = next.catch(() => undefined);
    return next;
  };
  const dispatch = (channel: string, payload: string) => {
    for (const sub of subs.get(channel) ?? []) {
      try {
        sub.onNotify(payload);
      } catch {
        // One subscriber's error must not keep the notice from the others.
      }
    }
  };
  const drop = async () => {
    const held = current;
    current = undefined;
    if (held) await held.conn.close().catch(() => undefined);
  };
  /** Opens a connection and LISTENs every subscribed channel on it. */
  const connect = async () => {
    const gen = ++generation;
    const conn = await open({
      onNotify: dispatch,
      onLost: () => {
        lostGen = gen;
        if (current?.gen !== gen) return;
        current = undefined;
        void conn.close().catch(() => undefined);
        reconnectLater();
      },
    });
    const channels = new Set<string>();
    try {
      if (await conn.readOnly()) throw new ReadOnlyListenError();
      for (const channel of subs.keys()) {
        await conn.listen(channel);
        channels.add(channel);
      }
      if (lostGen === gen) throw new Error('the listening connection was lost while it started');
    } catch (error) {
      await conn.close().catch(() => undefined);
      throw error;
    }
    current = { conn, gen, channels };
  };
  const reconnectLater = () => {
    if (closed || timer !== undefined || subs.size === 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      void serial(async () => {
        if (closed || current !== undefined || subs.size === 0) return;
        try {
          await connect();
        } catch {
          pauseMs = Math.min(pauseMs * 2, RELISTEN_MAX_MS);
          reconnectLater();
          return;
        }
        pauseMs = RELISTEN_FIRST_MS;
        for (const set of subs.values()) {
          for (const sub of set) {
            try {
              sub.options.onReconnect?.();
            } catch {
              // As for notices: one subscriber's error stays its own.
            }
          }
        }
      });
    }, pauseMs);
    timer.unref?.();
  };
  let rechecking = false;
  const recheck = () => {
    if (rechecking || closed) return;
    rechecking = true;
    void serial(async () => {
      try {
        const held = current;
        if (closed || held === undefined) return;
        const readOnly = await held.conn.readOnly().catch(() => true);
        if (!readOnly || current?.gen !== held.gen) return;
        current = undefined;
        await held.conn.close().catch(() => undefined);
        reconnectLater();
      } finally {
        rechecking = false;
      }
    });
  };
  const unsubscribe = (channel: string, sub: Sub) =>
    serial(async () => {
      const set = subs.get(channel);
      if (!set?.delete(sub) || set.size > 0) return;
      subs.delete(channel);
      if (subs.size === 0) {
        clearTimeout(timer);
        timer = undefined;
        await drop();
      } else if (current?.channels.delete(channel)) {
        await current.conn.unlisten(channel).catch(() => undefined);
      }
    });
  return {
    get listening() {
      return current?.channels.size ?? 0;
    },
    recheck,
    listen(channel, onNotify, options = {}) {
      const sub: Sub = { onNotify, options };
      return serial(async () => {
        if (closed) throw new Error('the listener is closed');
        const fresh = !subs.has(channel);
        const set = subs.get(channel) ?? new Set<Sub>();
        subs.set(channel, set);
        set.add(sub);
        try {
          if (current === undefined) {
            // Not connected (first subscriber, or waiting to reconnect): connect now, for every channel.
            clearTimeout(timer);
            timer = undefined;
            await connect();
          } else if (fresh) {
            await current.conn.listen(channel);
            current?.channels.add(channel);
          }
        } catch (error) {
          set.delete(sub);
          if (set.size === 0) subs.delete(channel);
          if (subs.size === 0) await drop();
          else if (current === undefined) reconnectLater();
          throw error;
        }
        let done = false;
        return async () => {
          if (done) return;
          done = true;
          await unsubscribe(channel, sub);
        };
      });
    },
    async closeAll() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      await serial(async () => {
        subs.clear();
        await drop();
      });
    },
  };
}

/** The shared listener of each pool / `sql` in this process (see {@link sharedListenerFor}). */
const byOwner = new WeakMap<object, SharedListener>();

/**
 * The ONE shared listener of `owner` (a `pg.Pool` or a postgres.js `sql`) in this process: every
 * store built on the same pool or `sql` listens over one connection. Each driver ends only its own
 * subscriptions on close; the connection is handed back when the last subscriber leaves.
 */
export function sharedListenerFor(owner: object, open: () => OpenListenConnection): SharedListener {
  let found = byOwner.get(owner);
  if (found === undefined) {
    found = sharedListener(open());
    byOwner.set(owner, found);
  }
  return found;
}
