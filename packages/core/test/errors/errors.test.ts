import { describe, expect, it } from 'vitest';
import {
  ConnectionLostError,
  PostponeError,
  StoreClosedError,
  StoreError,
  UnknownKindError,
  ValidationError,
} from '../../src/errors/index.js';

/** What a second copy of @postpone/core would define: another class, the same global marker. */
const MARKER = Symbol.for('postpone.error');
class CopiedPostponeError extends Error {
  readonly [MARKER] = true;
  readonly code = 'STORE_CLOSED';
}
class CopiedValidationError extends CopiedPostponeError {
  override readonly name = 'ValidationError';
}

describe('PostponeError.isInstance', () => {
  it('recognises every Postpone error', () => {
    const errors = [
      new PostponeError('STORE_ERROR', 'x'),
      new ValidationError('INVALID_KIND', 'kind', 'bad'),
      new UnknownKindError('mail'),
      new StoreClosedError(),
      new ConnectionLostError('gone'),
      new StoreError('boom', '23505'),
    ];
    for (const e of errors) expect(PostponeError.isInstance(e)).toBe(true);
  });

  it('recognises an error from a copied package by its Symbol.for marker, where instanceof fails', () => {
    const copy = new CopiedPostponeError('from another copy');
    expect(copy instanceof PostponeError).toBe(false);
    expect(PostponeError.isInstance(copy)).toBe(true);
  });

  it('refuses other values', () => {
    for (const v of [new Error('plain'), null, undefined, 'PostponeError', { code: 'STORE_CLOSED' }, { [MARKER]: 'yes' }]) {
      expect(PostponeError.isInstance(v)).toBe(false);
    }
  });
});

describe('ValidationError.isInstance', () => {
  it('recognises a ValidationError and a copied one, nothing else', () => {
    expect(ValidationError.isInstance(new ValidationError('INVALID_DELAY', 'delayMs', 'bad'))).toBe(true);
    expect(ValidationError.isInstance(new CopiedValidationError('copy'))).toBe(true);
    expect(ValidationError.isInstance(new CopiedPostponeError('copy'))).toBe(false);
    expect(ValidationError.isInstance(new StoreClosedError())).toBe(false);
    expect(ValidationError.isInstance(Object.assign(new Error('x'), { name: 'ValidationError' }))).toBe(false);
  });
});

describe('error fields', () => {
  it('carry code, name, field, message, cause and extras', () => {
    const cause = new Error('root');
    const v = new ValidationError('INVALID_DELAY', 'tasks[2].delayMs', 'must be finite', { cause });
    expect([v.code, v.name, v.field, v.message, v.cause]).toEqual(['INVALID_DELAY', 'ValidationError', 'tasks[2].delayMs', 'tasks[2].delayMs: must be finite', cause]);
    const u = new UnknownKindError('mail');
    expect([u.code, u.name, u.kind, u.message]).toEqual(['UNKNOWN_KIND', 'UnknownKindError', 'mail', 'no handler registered for kind "mail"']);
    const c = new StoreClosedError();
    expect([c.code, c.name, c.message]).toEqual(['STORE_CLOSED', 'StoreClosedError', 'store is closed']);
    const l = new ConnectionLostError('reset', { cause });
    expect([l.code, l.name, l.cause]).toEqual(['CONNECTION_LOST', 'ConnectionLostError', cause]);
    const s = new StoreError('dup', '23505');
    expect([s.code, s.name, s.sqlState]).toEqual(['STORE_ERROR', 'StoreError', '23505']);
    expect(new StoreError('no state', undefined).sqlState).toBeUndefined();
    expect(v).toBeInstanceOf(Error);
    expect(v).toBeInstanceOf(PostponeError);
  });
});
