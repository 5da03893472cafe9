/**
 * What this package gives driver adapters, on the error shapes node-postgres and postgres.js throw
 * (`code`, `severity`, `errors`, `cause`): the one translation into core's typed errors, the option
 * checks of a store factory, and the listener set. The store itself runs against PostgreSQL over
 * both adapters in `@postpone/postgres` (conformance, differential, driver and error tests with
 * the drivers' real errors).
 */
import { ConnectionError, ConnectionLostError, PostponeError, StoreClosedError, StoreError, ValidationError } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { isCachedPlanChanged, isConnectionLoss, isDriverLevelError, listenerSet, SqlState, translateError, validateDriverOptions } from '../../src/store/index.js';

/** A server error as both drivers shape it: a five-character SQLSTATE `code` and a `severity`. */
function serverError(code: string, message = 'server said no'): Error {
  return Object.assign(new Error(message), { code, severity: 'ERROR' });
}

describe('translateError', () => {
  it('passes a PostponeError through and reports a closed store as StoreClosedError', () => {
    const own = new StoreError('x', undefined);
    expect(translateError(own)).toBe(own);
    expect(translateError(new Error('late'), true)).toBeInstanceOf(StoreClosedError);
    expect(translateError(Object.assign(new Error('ended'), { code: 'CONNECTION_ENDED' }))).toBeInstanceOf(StoreClosedError);
  });

  it('names the connect-phase failure, keeping the SQLSTATE the server sent', () => {
    const refused = translateError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
    expect(refused).toBeInstanceOf(ConnectionError);
    expect({ reason: (refused as ConnectionError).reason, transient: (refused as ConnectionError).transient }).toEqual({ reason: 'REFUSED', transient: true });
    const auth = translateError(Object.assign(serverError(SqlState.INVALID_PASSWORD), { severity: 'FATAL' })) as ConnectionError;
    expect({ reason: auth.reason, sqlState: auth.sqlState, transient: auth.transient }).toEqual({ reason: 'AUTHENTICATION', sqlState: '28P01', transient: false });
    const nested = translateError(new AggregateError([Object.assign(new Error('a'), { code: 'ENOTFOUND' })], 'all failed')) as ConnectionError;
    expect(nested.reason).toBe('DNS');
  });

  it('a lost connection is ConnectionLostError; text the database cannot store is INVALID_PAYLOAD', () => {
    expect(translateError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBeInstanceOf(ConnectionLostError);
    expect(translateError(serverError(SqlState.ADMIN_SHUTDOWN))).toBeInstanceOf(ConnectionLostError);
    expect(translateError(new Error('Connection terminated unexpectedly'))).toBeInstanceOf(ConnectionLostError);
    const payload = translateError(serverError(SqlState.UNTRANSLATABLE_CHARACTER));
    expect(ValidationError.isInstance(payload) && payload.code).toBe('INVALID_PAYLOAD');
  });

  it('anything else is StoreError with its SQLSTATE; an unmigrated schema names migrate()', () => {
    const missing = translateError(serverError(SqlState.UNDEFINED_TABLE, 'relation "postpone.task" does not exist')) as StoreError;
    expect(missing).toBeInstanceOf(StoreError);
    expect(missing.sqlState).toBe('42P01');
    expect(missing.message).toContain('store.migrate()');
    const plain = translateError('not an error') as StoreError;
    expect([plain.code, plain.sqlState]).toEqual(['STORE_ERROR', undefined]);
  });
});

describe('a cached plan whose result type changed (0A000, version skew)', () => {
  it('is told apart from other 0A000 by its routine or message, and is transient and driver-level; other 0A000 are neither', () => {
    const byRoutine = Object.assign(serverError('0A000', 'cached plan must not change result type'), { routine: 'RevalidateCachedQuery' });
    const byMessage = serverError('0A000', 'cached plan must not change result type');
    const other = serverError('0A000', 'FOR UPDATE is not allowed with GROUP BY clause');
    expect([isCachedPlanChanged(byRoutine), isCachedPlanChanged(byMessage), isCachedPlanChanged(other)]).toEqual([true, true, false]);
    expect((translateError(byRoutine) as StoreError).transient).toBe(true);
    expect((translateError(other) as StoreError).transient).toBe(false);
    expect([isDriverLevelError(byRoutine), isDriverLevelError(other)]).toEqual([true, false]);
  });
});

describe('error classes', () => {
  it('isDriverLevelError: connection, transaction, resource and prepared-statement classes; not a constraint', () => {
    for (const code of ['08006', '25006', '26000', '40001', '40P01', '53300', '57014', '58000', SqlState.DUPLICATE_PREPARED_STATEMENT]) {
      expect(isDriverLevelError(serverError(code)), code).toBe(true);
    }
    expect(isDriverLevelError(serverError(SqlState.UNIQUE_VIOLATION))).toBe(false);
    expect(isDriverLevelError(new Error('the handler failed'))).toBe(false);
    expect(isDriverLevelError(new PostponeError('TASK_ABORTED', 'x'))).toBe(true);
  });

  it('isConnectionLoss: an established connection lost, not a connection never made', () => {
    expect(isConnectionLoss(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isConnectionLoss(Object.assign(new Error('x'), { code: 'REPLY_TIMEOUT' }))).toBe(true);
    expect(isConnectionLoss(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isConnectionLoss(serverError(SqlState.CHECK_VIOLATION))).toBe(false);
  });
});

describe('validateDriverOptions', () => {
  it('takes exactly one of the connection and connectionString, and known fields only', () => {
    expect(validateDriverOptions({ connectionString: 'postgres://x', replyTimeoutMs: 5_000 }, 'pool', [])).toEqual({ replyTimeoutMs: 5_000 });
    /** The field a refused call names; undefined when the options were taken. */
    const fieldOf = (options: object): string | undefined => {
      try {
        validateDriverOptions(options, 'pool', ['poolConfig']);
        return undefined;
      } catch (error) {
        return ValidationError.isInstance(error) ? error.field : 'not a ValidationError';
      }
    };
    expect(fieldOf({})).toBe('pool');
    expect(fieldOf({ pool: {}, connectionString: 'postgres://x' })).toBe('pool');
    expect(fieldOf({ connectionString: 'postgres://x', pooler: 'session' })).toBe('pooler');
    expect(fieldOf({ connectionString: 'postgres://x', listenConnectionString: ' ' })).toBe('listenConnectionString');
    expect(fieldOf({ connectionString: 'postgres://x', replyTimeoutMs: 0 })).toBe('replyTimeoutMs');
    expect(() => validateDriverOptions({ connectionString: 'postgres://x', sql: 1 } as object, 'pool', [])).toThrow(ValidationError);
    expect(validateDriverOptions({ connectionString: 'postgres://x', poolConfig: {} } as object, 'pool', ['poolConfig'])).toEqual({});
  });
});

describe('listenerSet', () => {
  it('runs each tracked Unlisten once, whether called or closed', async () => {
    const calls: string[] = [];
    const set = listenerSet();
    const a = set.track(async () => void calls.push('a'));
    set.track(async () => void calls.push('b'));
    await a();
    await a();
    await set.closeAll();
    await set.closeAll();
    expect(calls).toEqual(['a', 'b']);
  });
});
