import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeThrown, MAX_ERROR_LENGTH } from '../../src/errors/index.js';

function boom(): never {
  throw new Error('getter threw');
}

/** Values that resist being turned into text: every read of them may throw. */
function hostileValues(): unknown[] {
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const revokedError = Proxy.revocable(new Error('inner'), {});
  revokedError.revoke();
  const causeThrows = new Error('outer');
  Object.defineProperty(causeThrows, 'cause', { get: boom });
  const causeThrowsRevoked = new Error('outer');
  Object.defineProperty(causeThrowsRevoked, 'cause', { get: () => revoked.proxy });
  const everyTrapThrows = new Proxy({}, { get: boom, ownKeys: boom, getPrototypeOf: boom, getOwnPropertyDescriptor: boom, has: boom });
  const errorTrapsThrow = new Proxy(new Error('x'), { get: boom, getPrototypeOf: boom });
  const selfCause = new Error('loop');
  selfCause.cause = selfCause;
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const nameThrows = new Error('n');
  Object.defineProperty(nameThrows, 'name', { get: boom });
  const messageObject = new Error('m');
  Object.defineProperty(messageObject, 'message', { value: { toString: boom } });
  const toStringThrows = { toString: boom, [Symbol.toPrimitive]: boom };
  const toJsonThrows = { toJSON: boom };
  const fnToStringThrows = Object.assign(() => 1, { toString: boom });
  const hugeString = 'x'.repeat(5_000_000);
  const hugeArray = new Array<number>(2_000_000).fill(7);
  const hugeError = new Error('y'.repeat(100_000));
  const bigintInside = { n: 10n };
  return [
    revoked.proxy,
    revokedError.proxy,
    causeThrows,
    causeThrowsRevoked,
    everyTrapThrows,
    errorTrapsThrow,
    selfCause,
    cyclic,
    nameThrows,
    messageObject,
    toStringThrows,
    toJsonThrows,
    fnToStringThrows,
    hugeString,
    hugeArray,
    hugeError,
    bigintInside,
    Symbol('s'),
    Object.create(null),
  ];
}

describe('describeThrown', () => {
  it('describes Errors and plain values as before', () => {
    expect(describeThrown(new TypeError('bad'))).toBe('TypeError: bad');
    expect(describeThrown(Object.assign(new Error('x'), { code: 'E1' }))).toBe('Error [E1]: x');
    expect(describeThrown(new Error('a', { cause: new Error('b') }))).toBe('Error: a (cause: Error: b)');
    expect(describeThrown('boom')).toBe('handler threw a non-Error value (string): "boom"');
    expect(describeThrown(undefined)).toBe('handler threw a non-Error value (undefined): undefined');
    expect(describeThrown({ code: 42 })).toBe('handler threw a non-Error value (object): {"code":42}');
  });

  it('never throws and stays within the last_error limit for values whose every read throws', () => {
    const texts = hostileValues().map((value) => describeThrown(value));
    for (const t of texts) {
      expect(typeof t).toBe('string');
      expect(t.length).toBeGreaterThan(0);
      expect(t.length).toBeLessThanOrEqual(MAX_ERROR_LENGTH);
    }
    expect(texts[0]).toBe('handler threw a non-Error value (object): [object, unreadable]');
    expect(texts[2]).toBe('Error: outer (cause: unreadable, its getter threw)');
    expect(texts[3]).toBe('Error: outer (cause: [object, unreadable])');
    expect(texts[6]).toBe('Error: loop (cause: Error: loop (cause: Error: loop (cause: Error: loop (cause: …))))');
    expect(texts[7]).toBe('handler threw a non-Error value (object): {"a":1,"self":"[Circular]"}');
    expect(texts[8]).toBe('Error: n');
    expect(texts[16]).toBe('handler threw a non-Error value (object): {"n":"10n"}');
  });

  it('never throws for any value fast-check can build, nor for those values nested in Errors', () => {
    // Values travel as thunks: fast-check inspects generated values, and these throw when inspected.
    const values = hostileValues();
    const value = fc.oneof(
      fc.anything({ withBigInt: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true }).map((v) => () => v),
      fc.nat({ max: values.length - 1 }).map((i) => () => values[i]),
    );
    const thrown = fc.oneof(
      value,
      fc.tuple(fc.string(), value).map(([message, cause]) => () => new Error(message, { cause: cause() })),
      fc.tuple(value, value).map(([message, code]) => () => Object.assign(new Error('e'), { message: message(), code: code(), name: message() })),
    );
    fc.assert(
      fc.property(thrown, (make) => {
        const t = describeThrown(make());
        return typeof t === 'string' && t.length > 0 && t.length <= MAX_ERROR_LENGTH;
      }),
      { numRuns: 500 },
    );
  });
});
