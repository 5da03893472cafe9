/**
 * The dialect switch, in one place: a {@link Driver} that sends every statement as the store's
 * dialect needs it. On plain PostgreSQL it is the driver itself; on Citus each statement goes
 * through `citusStatement` (`../sql/citus.ts`), and a time-dependent one whose `$1` (now) is null gets
 * the coordinator's `clock_timestamp()`, read just before it on the same connection (inside a
 * transaction: in that transaction). The dialect is the store's option or, when absent, read from
 * `pg_extension` before the first statement (kept once a read succeeds).
 */
import { CITUS_CLOCK, CITUS_DETECT, CITUS_NOTIFY, citusStatement, type CitusStatement, type Dialect } from '../sql/citus.js';
import type { Driver, Param, QueryFn, Row } from './driver.js';

/** A driver whose statements follow the dialect, and the dialect it resolved. */
export interface DialectDriver<Tx> extends Driver<Tx> {
  /** The dialect: given, or detected once (a failed detection is retried by the next call). @throws the driver's error of the detection */
  dialect(): Promise<Dialect>;
  /** `send` (a query function on a caller's transaction, e.g. an ORM's executor) with its statements in this dialect. */
  wrap(send: QueryFn): QueryFn;
}

/**
 * Wraps `driver` for `given` (or the detected dialect when undefined).
 * @param driver the adapter's driver (`pg`, postgres.js)
 * @param given the store's `dialect` option
 */
export function dialectDriver<Tx>(driver: Driver<Tx>, given: Dialect | undefined): DialectDriver<Tx> {
  let detected: Dialect | undefined;
  // Not shared while in flight: each call that starts before the first detection succeeded reads it
  // itself, so a failure (a pool timeout, a lost connection) is that call's own, reported as it
  // would be for its statement. Once one succeeds, the dialect is kept.
  const dialect = async (): Promise<Dialect> => {
    if (given !== undefined) return given;
    if (detected !== undefined) return detected;
    const rows = await driver.query(CITUS_DETECT);
    detected = rows.length > 0 ? 'citus' : 'postgres';
    return detected;
  };
  const cache = new Map<string, CitusStatement>();
  const citus = (text: string): CitusStatement => {
    let hit = cache.get(text);
    if (hit === undefined) {
      hit = citusStatement(text);
      // Statement texts are the store's own, a bounded set per schema; ad-hoc texts are not kept.
      if (cache.size < 1_000) cache.set(text, hit);
    }
    return hit;
  };
  /** `send` with the Citus form of `text`, the database time bound as `$1` when it was null. */
  const sendCitus = async (send: QueryFn, text: string, params?: readonly Param[]): Promise<Row[]> => {
    const statement = citus(text);
    let bound = params;
    if (statement.needsNow && params !== undefined && params[0] === null) {
      const now = (await send(CITUS_CLOCK))[0]?.now;
      if (typeof now !== 'string') throw new Error('citus dialect: the coordinator returned no clock_timestamp()');
      bound = [now, ...params.slice(1)];
    }
    // A statement Citus must see as several (`../sql/citus-route.ts`) runs its steps on `send`.
    const rows = statement.run === undefined ? await send(statement.text, bound) : await statement.run(send, bound ?? []);
    const channel = statement.channelParam === undefined ? null : bound?.[statement.channelParam];
    if (typeof channel !== 'string') return rows;
    const payloads: string[] = [];
    for (const row of rows) {
      if (typeof row.notified !== 'string') continue;
      payloads.push(row.notified);
      row.notified = true;
    }
    if (payloads.length > 0) await send(CITUS_NOTIFY, [channel, JSON.stringify(payloads)]);
    return rows;
  };
  const through = async (send: QueryFn, text: string, params?: readonly Param[]): Promise<Row[]> =>
    (await dialect()) === 'citus' ? await sendCitus(send, text, params) : await send(text, params);

  return {
    name: driver.name,
    connectionBudget: driver.connectionBudget,
    directListen: driver.directListen,
    dialect,
    query: (text, params) => through((t, p) => driver.query(t, p), text, params),
    isTx: (value: unknown): value is Tx => driver.isTx(value),
    queryIn: (tx, text, params) => through((t, p) => driver.queryIn(tx, t, p), text, params),
    transaction: async (fn) => {
      const d = await dialect();
      return await driver.transaction((query, tx) => fn(d === 'citus' ? (text, params) => sendCitus(query, text, params) : query, tx));
    },
    listen: (channel, onNotify, options) => driver.listen(channel, onNotify, options),
    ...(driver.onConnectionError === undefined ? {} : { onConnectionError: (listener: (error: unknown) => void) => driver.onConnectionError?.(listener) ?? (() => {}) }),
    close: () => driver.close(),
    /** A query function on a caller's transaction (an ORM's executor), sent in this dialect. */
    wrap: (send: QueryFn): QueryFn => (text, params) => through(send, text, params),
  };
}
