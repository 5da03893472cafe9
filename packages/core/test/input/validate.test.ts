import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_PAYLOAD_BYTES,
  MAX_ATTEMPTS_LIMIT,
  MAX_DELAY_MS,
  MAX_KIND_LENGTH,
  MAX_KEY_LENGTH,
  validateKey,
  MAX_RUN_AT_MS,
  compareTaskIds,
  parseTaskId,
  validateAttempt,
  validateDelayMs,
  validateJson,
  MAX_JSON_DEPTH,
  rejectUnknownFields,
  validateScheduleOptions,
  validateKind,
  validateMaxAttempts,
  validateNonNegativeMs,
  validatePositiveInt,
  validatePositiveMs,
  validateDueAt,
  validateRunAt,
  validateSchedule,
  validateScheduleMany,
  findUnsafeInteger,
  isUnsafeIntegerToken,
  validateJsonTextIntegers,
} from '../../src/input/index.js';
import { type ValidationCode, ValidationError } from '../../src/errors/errors.js';
import { validateRetryParams } from '../../src/admin.js';

function thrown(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    expect(ValidationError.isInstance(error), String(error)).toBe(true);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

function expectCode(fn: () => unknown, code: ValidationCode, field?: string): void {
  const error = thrown(fn);
  expect(error.code).toBe(code);
  if (field !== undefined) expect(error.field).toBe(field);
  expect(error.message.startsWith(`${error.field}: `)).toBe(true);
}

const YEAR_1 = (() => {
  const d = new Date(0);
  d.setUTCFullYear(1, 0, 1);
  return d.getTime();
})();

describe('INVALID_DELAY', () => {
  it.each([Number.NaN, -1, 1.5, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, MAX_DELAY_MS + 1, '10', null, 10n])('refuses %s', (delay) => {
    expectCode(() => validateDelayMs(delay), 'INVALID_DELAY', 'delayMs');
  });
  it('refuses delayMs together with runAt', () => {
    expectCode(() => validateSchedule({ kind: 'k', delayMs: 1, runAt: new Date() }), 'INVALID_DELAY', 'delayMs');
  });
  it.each([0, 1, 2 ** 31 - 1, 2 ** 31, MAX_DELAY_MS])('accepts %s', (delay) => {
    expect(validateDelayMs(delay)).toBe(delay);
  });
  it('MAX_DELAY_MS is 100 Julian years', () => {
    expect(MAX_DELAY_MS).toBe(100 * 365.25 * 24 * 3_600_000);
  });
});

describe('INVALID_RUN_AT', () => {
  it.each([
    ['an Invalid Date', new Date(Number.NaN)],
    ['a string', '2030-01-01'],
    ['a number', Date.UTC(2030, 0, 1)],
    ['after year 9999', new Date(MAX_RUN_AT_MS + 1)],
    ['before year 1', new Date(YEAR_1 - 1)],
  ])('refuses %s', (_label, runAt) => {
    expectCode(() => validateRunAt(runAt), 'INVALID_RUN_AT', 'runAt');
  });
  it('accepts years 1 and 9999 and returns a copy', () => {
    const last = new Date(MAX_RUN_AT_MS);
    const copy = validateRunAt(last);
    expect(copy).toEqual(last);
    expect(copy).not.toBe(last);
    expect(validateRunAt(new Date(YEAR_1)).getUTCFullYear()).toBe(1);
  });
});

describe('runAt of a schedule: the 100-year cap of delayMs (issue 27 item 10)', () => {
  const now = Date.UTC(2030, 0, 1);
  it('refuses a runAt more than MAX_DELAY_MS after the given now, naming the field', () => {
    const error = thrown(() => validateSchedule({ kind: 'k', runAt: new Date(now + MAX_DELAY_MS + 1) }, { nowMs: now }));
    expect([error.code, error.field]).toEqual(['INVALID_RUN_AT', 'runAt']);
    expect(error.message).toBe(
      `runAt: must be at most ${MAX_DELAY_MS} ms (100 years) after now (2030-01-01T00:00:00.000Z), as delayMs, got ${new Date(now + MAX_DELAY_MS + 1).toISOString()}`,
    );
    expectCode(() => validateScheduleMany([{ kind: 'k' }, { kind: 'k', runAt: new Date(MAX_RUN_AT_MS) }], { nowMs: now }), 'INVALID_RUN_AT', 'tasks[1].runAt');
    expectCode(() => validateDueAt(new Date(Date.now() + MAX_DELAY_MS + 60_000)), 'INVALID_RUN_AT', 'runAt');
    expectCode(() => validateRetryParams({ id: '1', runAt: new Date(Date.now() + MAX_DELAY_MS + 60_000) }), 'INVALID_RUN_AT', 'runAt');
  });
  it('accepts exactly MAX_DELAY_MS after now, and any past time', () => {
    expect(validateSchedule({ kind: 'k', runAt: new Date(now + MAX_DELAY_MS) }, { nowMs: now }).runAt).toEqual(new Date(now + MAX_DELAY_MS));
    expect(validateSchedule({ kind: 'k', runAt: new Date(YEAR_1) }, { nowMs: now }).runAt).toEqual(new Date(YEAR_1));
  });
});

describe('INVALID_MAX_ATTEMPTS', () => {
  it.each([0, -1, 1.5, MAX_ATTEMPTS_LIMIT + 1, Number.NaN, '3'])('refuses %s', (n) => {
    expectCode(() => validateMaxAttempts(n), 'INVALID_MAX_ATTEMPTS', 'maxAttempts');
  });
  it.each([1, 5, MAX_ATTEMPTS_LIMIT])('accepts %s', (n) => {
    expect(validateMaxAttempts(n)).toBe(n);
  });
});

describe('INVALID_KIND', () => {
  it.each([
    ['empty', ''],
    ['201 characters', 'k'.repeat(MAX_KIND_LENGTH + 1)],
    ['a newline', 'a\nb'],
    ['DEL', 'a\u007fb'],
    ['a lone surrogate', 'a\ud800'],
    ['not a string', 42],
  ])('refuses %s', (_label, kind) => {
    expectCode(() => validateKind(kind), 'INVALID_KIND', 'kind');
  });
  it('accepts 200 characters and non-ASCII', () => {
    expect(validateKind('k'.repeat(MAX_KIND_LENGTH))).toHaveLength(200);
    expect(validateKind('提醒-😀')).toBe('提醒-😀');
  });
});

describe('INVALID_PAYLOAD and PAYLOAD_TOO_LARGE', () => {
  const cycle: Record<string, unknown> = {};
  cycle.me = cycle;
  it.each([
    ['a BigInt', { n: 1n }, 'payload.n'],
    ['a cycle', cycle, 'payload.me'],
    ['\\u0000 in a string', ['ok', 'a\u0000'], 'payload[1]'],
    ['\\u0000 in a key', { 'a\u0000': 1 }, 'payload.a\u0000'],
    ['a lone surrogate', { s: '\udc00' }, 'payload.s'],
    ['NaN', { n: Number.NaN }, 'payload.n'],
    ['Infinity', [Number.POSITIVE_INFINITY], 'payload[0]'],
    ['undefined in an array', [undefined], 'payload[0]'],
    ['undefined at the top', undefined, 'payload'],
    ['a function', { f: () => 1 }, 'payload.f'],
    ['a symbol', Symbol('s'), 'payload'],
    ['a Map', new Map([[1, 2]]), 'payload'],
    ['a class instance', new (class Point {})(), 'payload'],
  ])('refuses %s', (_label, value, field) => {
    expectCode(() => validateJson(value), 'INVALID_PAYLOAD', field);
  });

  it('refuses a toJSON that returns its own object with a typed error, not a stack overflow', () => {
    const selfish = { a: 1, toJSON: () => selfish };
    expectCode(() => validateJson(selfish), 'INVALID_PAYLOAD', 'payload.toJSON');
  });

  it('refuses text one byte over the limit; accepts exactly the limit', () => {
    expectCode(() => validateJson('x'.repeat(DEFAULT_MAX_PAYLOAD_BYTES - 1)), 'PAYLOAD_TOO_LARGE', 'payload');
    expect(validateJson('x'.repeat(DEFAULT_MAX_PAYLOAD_BYTES - 2)).text).toHaveLength(DEFAULT_MAX_PAYLOAD_BYTES);
  });

  it('counts UTF-8 bytes, not characters', () => {
    // "é" is 2 bytes in UTF-8: 4 characters of text, 6 bytes with the quotes.
    expect(validateJson('éé', 'payload', 6).text).toBe('"éé"');
    expectCode(() => validateJson('éé', 'payload', 5), 'PAYLOAD_TOO_LARGE');
  });

  it('uses INVALID_RESULT for results, including size', () => {
    expectCode(() => validateJson({ n: 1n }, 'result', 100, 'INVALID_RESULT'), 'INVALID_RESULT', 'result.n');
    expectCode(() => validateJson('x'.repeat(200), 'result', 100, 'INVALID_RESULT'), 'INVALID_RESULT', 'result');
  });

  it('keeps an own "__proto__" key (JSON.parse makes one) as a key, at any depth, and the copy a plain object', () => {
    // Found by a fresh user: the copy assigned it, which ran the prototype setter and dropped it.
    const input = JSON.parse('{"customer":{"__proto__":{"isAdmin":true},"name":"a"},"__proto__":"x","list":[{"__proto__":null}]}');
    const { value, text } = validateJson(input);
    expect(text).toBe('{"customer":{"__proto__":{"isAdmin":true},"name":"a"},"__proto__":"x","list":[{"__proto__":null}]}');
    expect(JSON.stringify(value)).toBe(text);
    const customer = (value as Record<string, Record<string, unknown>>).customer;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(customer)).toBe(Object.prototype);
    expect(Object.keys(customer as object)).toEqual(['__proto__', 'name']);
    expect((customer as { isAdmin?: unknown }).isAdmin).toBeUndefined();
    expect(validateJson(value).text).toBe(text);
  });

  it('normalizes like JSON.stringify: toJSON, dropped undefined properties, surrogate pairs, null prototype', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { x: 1 });
    const input = { when: new Date(Date.UTC(2030, 0, 1)), skip: undefined, emoji: '😀', bare, shared: [bare, bare] };
    const { value, text } = validateJson(input);
    expect(value).toEqual({ when: '2030-01-01T00:00:00.000Z', emoji: '😀', bare: { x: 1 }, shared: [{ x: 1 }, { x: 1 }] });
    expect(text).toBe(JSON.stringify(input));
  });
});

describe('UNSAFE_INTEGER: integers JSON.parse cannot read back exactly', () => {
  it.each([
    ['2^53', { orderId: 2 ** 53 }, 'payload.orderId', '9007199254740992'],
    ['-(2^53)', [1, -(2 ** 53)], 'payload[1]', '-9007199254740992'],
    ['1e300', { a: { b: [0, 1e300] } }, 'payload.a.b[1]', '1e+300'],
  ])('refuses %s in a payload, naming its path', (_label, value, field, shown) => {
    const error = thrown(() => validateJson(value));
    expect(error.code).toBe('UNSAFE_INTEGER');
    expect(error.field).toBe(field);
    expect(error.message).toContain(shown);
  });

  it('refuses it in a result with the same code, and in schedule / scheduleMany by path', () => {
    expectCode(() => validateJson({ total: 2 ** 60 }, 'result', 100, 'INVALID_RESULT'), 'UNSAFE_INTEGER', 'result.total');
    expectCode(() => validateSchedule({ kind: 'k', payload: { orderId: 2 ** 53 } }), 'UNSAFE_INTEGER', 'payload.orderId');
    expectCode(() => validateScheduleMany([{ kind: 'k' }, { kind: 'k', payload: { orderId: 2 ** 53 } }]), 'UNSAFE_INTEGER', 'tasks[1].payload.orderId');
  });

  it('accepts ±(2^53 − 1) and fractions beyond it (a double is what a fraction is)', () => {
    const value = { max: Number.MAX_SAFE_INTEGER, min: -Number.MAX_SAFE_INTEGER, half: 0.5, big: 1.5e15 + 0.5 };
    expect(validateJson(value).text).toBe(JSON.stringify(value));
  });

  it.each([
    ['9007199254740993', true],
    ['9007199254740992', true],
    ['-9007199254740992', true],
    ['9007199254740991', false],
    ['-9007199254740991', false],
    ['9.007199254740993e15', true],
    ['9007199254740993.0', true],
    ['9007199254740993.5', false],
    ['900719925474099.3e1', true],
    ['90071992547409.93e1', false],
    ['1e16', true],
    ['1e15', false],
    ['1e300', true],
    ['1e-300', false],
    ['0', false],
    ['-0.0e99999', false],
    ['12345678901234567890e-10', false],
    ['90071992547409930e-1', true],
    ['1.5', false],
  ])('the number token %s is an unsafe integer: %s', (token, unsafe) => {
    expect(isUnsafeIntegerToken(token)).toBe(unsafe);
  });

  it('finds the first unsafe integer in JSON text by path, never inside a string', () => {
    const text = ' { "id" : "9007199254740993", "a\\"b": [1, {"x": 2.5e3, "": [ ]}, {}], "order": {"n" : 9007199254740993 }, "m": 1e400 } ';
    expect(JSON.parse(text).order.n).toBe(9007199254740992); // what the check exists for
    expect(findUnsafeInteger(text)).toEqual({ path: 'payload.order.n', token: '9007199254740993' });
    expect(findUnsafeInteger('[0, [1, [2, -9007199254740993]]]', 'result')).toEqual({ path: 'result[1][1][1]', token: '-9007199254740993' });
    expect(findUnsafeInteger('9007199254740993')).toEqual({ path: 'payload', token: '9007199254740993' });
    expect(findUnsafeInteger('{"a": [9007199254740991, "9007199254740993", true, false, null, {"b": {}}]}')).toBeNull();
    expect(findUnsafeInteger('"\\" 9007199254740993"')).toBeNull();
    expectCode(() => validateJsonTextIntegers('{"orderId": 9007199254740993}'), 'UNSAFE_INTEGER', 'payload.orderId');
    expect(() => validateJsonTextIntegers('{"orderId": 9007199254740991}')).not.toThrow();
  });

  it('walks deep nesting without recursion', () => {
    const depth = 100_000;
    const text = `${'['.repeat(depth)}9007199254740993${']'.repeat(depth)}`;
    const found = findUnsafeInteger(text);
    expect(found?.token).toBe('9007199254740993');
    expect(found?.path).toBe(`payload${'[0]'.repeat(depth)}`);
  });
});

describe('compareTaskIds', () => {
  it('orders ids as numbers, exactly past 2^53 where Number ties them', () => {
    const ids = ['9007199254740993', '10', '9', '9007199254740992', '2147483648', '2147483647', '9223372036854775807'];
    expect([...ids].sort(compareTaskIds)).toEqual(['9', '10', '2147483647', '2147483648', '9007199254740992', '9007199254740993', '9223372036854775807']);
    expect(Number('9007199254740993') - Number('9007199254740992')).toBe(0);
    expect(compareTaskIds('9007199254740993', '9007199254740992')).toBe(1);
    expect(compareTaskIds('42', '42')).toBe(0);
  });
});

describe('INVALID_TASK_ID and parseTaskId', () => {
  it.each(['abc', '0', '-1', '', '01', '1.5', ' 1', '1 ', '9223372036854775808', 1.5, 0, -3, 2 ** 53, 0n, 9223372036854775808n, null, undefined, {}])(
    'refuses %s',
    (id) => {
      expectCode(() => parseTaskId(id), 'INVALID_TASK_ID', 'id');
    },
  );
  it('accepts decimal text, safe integers and bigints, as decimal text', () => {
    expect(parseTaskId('1')).toBe('1');
    expect(parseTaskId('9223372036854775807')).toBe('9223372036854775807');
    expect(parseTaskId(42)).toBe('42');
    expect(parseTaskId(Number.MAX_SAFE_INTEGER)).toBe('9007199254740991');
    expect(parseTaskId(9223372036854775807n)).toBe('9223372036854775807');
    expect(() => parseTaskId('x', 'taskId')).toThrow(/^taskId: /);
  });
});

describe('INVALID_OPTION', () => {
  it('refuses a schedule input that is not an object, and a batch that is not an array', () => {
    expectCode(() => validateSchedule(null), 'INVALID_OPTION', 'input');
    expectCode(() => validateSchedule([{ kind: 'k' }]), 'INVALID_OPTION', 'input');
    expectCode(() => validateScheduleMany({ kind: 'k' }), 'INVALID_OPTION', 'tasks');
    expectCode(() => validateScheduleMany([{ kind: 'k' }, 'x']), 'INVALID_OPTION', 'tasks[1]');
  });
  it.each([
    ['attempt 0', () => validateAttempt(0)],
    ['attempt 1.5', () => validateAttempt(1.5)],
    ['attempt 2^31', () => validateAttempt(MAX_ATTEMPTS_LIMIT + 1)],
    ['positive ms 0', () => validatePositiveMs(0, 'leaseMs')],
    ['positive ms over max', () => validatePositiveMs(2 ** 31, 'leaseMs')],
    ['positive ms NaN', () => validatePositiveMs(Number.NaN, 'leaseMs')],
    ['non-negative ms -1', () => validateNonNegativeMs(-1, 'backoffMs')],
    ['non-negative ms 0.5', () => validateNonNegativeMs(0.5, 'backoffMs')],
    ['positive int 0', () => validatePositiveInt(0, 'limit')],
    ['positive int over max', () => validatePositiveInt(11, 'limit', 10)],
  ])('refuses %s', (_label, fn) => {
    expectCode(fn, 'INVALID_OPTION');
  });
  it('accepts the edges', () => {
    expect(validateAttempt(1)).toBe(1);
    expect(validateAttempt(MAX_ATTEMPTS_LIMIT)).toBe(MAX_ATTEMPTS_LIMIT);
    expect(validatePositiveMs(1, 'leaseMs')).toBe(1);
    expect(validatePositiveMs(2 ** 31 - 1, 'leaseMs')).toBe(2 ** 31 - 1);
    expect(validateNonNegativeMs(0, 'backoffMs')).toBe(0);
    expect(validateNonNegativeMs(MAX_DELAY_MS, 'backoffMs')).toBe(MAX_DELAY_MS);
    expect(validatePositiveInt(10, 'limit', 10)).toBe(10);
  });
});

describe('INVALID_KEY', () => {
  it('refuses a key that is not a string of 1..256 characters without \\u0000', () => {
    for (const key of ['', 'x'.repeat(MAX_KEY_LENGTH + 1), 'a\u0000b', 'a\ud800', 42, {}, true]) {
      expectCode(() => validateSchedule({ kind: 'k', key }), 'INVALID_KEY', 'key');
    }
    expectCode(() => validateScheduleMany([{ kind: 'k' }, { kind: 'k', key: '' }]), 'INVALID_KEY', 'tasks[1].key');
  });
  it('accepts 256 characters, non-ASCII, and null or undefined as no key', () => {
    expect(validateKey('x'.repeat(MAX_KEY_LENGTH))).toHaveLength(MAX_KEY_LENGTH);
    expect(validateSchedule({ kind: 'k', key: 'réservation-42 😀' }).key).toBe('réservation-42 😀');
    expect(validateSchedule({ kind: 'k', key: null }).key).toBeNull();
    expect(validateSchedule({ kind: 'k' }).key).toBeNull();
  });
  it('refuses two inputs of one kind and key in a batch, naming the later one; other kinds or keys pass', () => {
    expectCode(() => validateScheduleMany([{ kind: 'k', key: 'a' }, { kind: 'j', key: 'a' }, { kind: 'k', key: 'a' }]), 'INVALID_KEY', 'tasks[2].key');
    expect(validateScheduleMany([{ kind: 'k', key: 'a' }, { kind: 'j', key: 'a' }, { kind: 'k', key: 'b' }, { kind: 'k' }, { kind: 'k' }])).toHaveLength(5);
  });
});

describe('validateSchedule', () => {
  it('fills the defaults', () => {
    expect(validateSchedule({ kind: 'k' })).toEqual({ kind: 'k', payload: null, payloadText: 'null', delayMs: 0, runAt: null, maxAttempts: DEFAULT_MAX_ATTEMPTS, traceContext: null, key: null, limitKey: null, retry: null, queue: 'default', priority: 0 });
  });
  it('keeps runAt, payload text and maxAttempts', () => {
    const runAt = new Date(Date.UTC(2031, 5, 1));
    expect(validateSchedule({ kind: 'k', runAt, payload: { a: [1] }, maxAttempts: 2 })).toEqual({
      kind: 'k',
      payload: { a: [1] },
      payloadText: '{"a":[1]}',
      delayMs: 0,
      runAt,
      maxAttempts: 2,
      traceContext: null,
      key: null,
      limitKey: null,
      retry: { maxAttempts: 2 },
      queue: 'default',
      priority: 0,
    });
  });
  it('honours maxPayloadBytes', () => {
    expectCode(() => validateSchedule({ kind: 'k', payload: 'abc' }, { maxPayloadBytes: 4 }), 'PAYLOAD_TOO_LARGE', 'payload');
    expect(validateSchedule({ kind: 'k', payload: 'ab' }, { maxPayloadBytes: 4 }).payloadText).toBe('"ab"');
  });
  it('names the failing element of a batch and validates all before returning', () => {
    expectCode(() => validateScheduleMany([{ kind: 'k' }, { kind: 'k', maxAttempts: 0 }]), 'INVALID_MAX_ATTEMPTS', 'tasks[1].maxAttempts');
    expectCode(() => validateScheduleMany([{ kind: 'k' }, { kind: 'k', payload: { x: [1n] } }]), 'INVALID_PAYLOAD', 'tasks[1].payload.x[0]');
    expect(validateScheduleMany([{ kind: 'a' }, { kind: 'b', delayMs: 5 }]).map((n) => [n.kind, n.delayMs])).toEqual([
      ['a', 0],
      ['b', 5],
    ]);
    expect(validateScheduleMany([])).toEqual([]);
  });
});

describe('review fixes: depth, unknown fields, C1 controls', () => {
  it('refuses a payload nested deeper than MAX_JSON_DEPTH with a typed error', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 3000; i++) deep = [deep];
    const error = (() => {
      try {
        validateSchedule({ kind: 'k', payload: deep });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(ValidationError.isInstance(error)).toBe(true);
    expect((error as ValidationError).code).toBe('INVALID_PAYLOAD');
    // The path of 1 000 levels is 3 000 characters: the message elides its middle.
    expect((error as ValidationError).message).toMatch(/^payload\[0\][[\]0]*…[[\]0]*: is nested deeper than 1000 levels$/);
    expect((error as ValidationError).message.length).toBeLessThan(160);
    let ok: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH - 1; i++) ok = [ok];
    expect(validateSchedule({ kind: 'k', payload: ok }).payload).toEqual(ok);
  });

  it('refuses an unknown schedule field instead of ignoring it', () => {
    expect(() => validateSchedule({ kind: 'k', delay: 5000 })).toThrow(/delay: is not a schedule field/);
    expect(() => validateScheduleMany([{ kind: 'k' }, { kind: 'k', runat: new Date() }])).toThrow(/tasks\[1\]\.runat/);
  });

  it('refuses C1 control characters in a kind', () => {
    expect(() => validateKind('a\u0085b')).toThrow(ValidationError);
    expect(validateKind('a\u00a0b')).toBe('a\u00a0b');
  });
});

describe('options objects', () => {
  it('validateScheduleOptions takes undefined or { tx, onConflict } and refuses anything else', () => {
    expect(validateScheduleOptions(undefined)).toEqual({ onConflict: 'keep', throttleMs: null });
    expect(validateScheduleOptions({ tx: 1 })).toEqual({ tx: 1, onConflict: 'keep', throttleMs: null });
    expect(validateScheduleOptions({ onConflict: 'replace' })).toEqual({ onConflict: 'replace', throttleMs: null });
    expect(validateScheduleOptions({ onConflict: 'fail', tx: 2 })).toEqual({ onConflict: 'fail', tx: 2, throttleMs: null });
    expect(validateScheduleOptions({ onConflict: 'debounce' })).toEqual({ onConflict: 'debounce', throttleMs: null });
    expect(validateScheduleOptions({ onConflict: 'throttle', throttleMs: 60_000 })).toEqual({ onConflict: 'throttle', throttleMs: 60_000 });
    expectCode(() => validateScheduleOptions({ onConflict: 'throttle' }), 'INVALID_OPTION', 'options.throttleMs');
    expectCode(() => validateScheduleOptions({ onConflict: 'throttle', throttleMs: 0 }), 'INVALID_OPTION', 'options.throttleMs');
    expectCode(() => validateScheduleOptions({ onConflict: 'throttle', throttleMs: 1.5 }), 'INVALID_OPTION', 'options.throttleMs');
    expectCode(() => validateScheduleOptions({ onConflict: 'throttle', throttleMs: MAX_DELAY_MS + 1 }), 'INVALID_OPTION', 'options.throttleMs');
    expectCode(() => validateScheduleOptions({ onConflict: 'keep', throttleMs: 10 }), 'INVALID_OPTION', 'options.throttleMs');
    expectCode(() => validateScheduleOptions({ throttleMs: 10 }), 'INVALID_OPTION', 'options.throttleMs');
    expect(validateScheduleOptions({ onConflict: 'queueBehind' })).toEqual({ onConflict: 'queueBehind', throttleMs: null });
    expectCode(() => validateScheduleOptions({ onConflict: 'ignore' }), 'INVALID_OPTION', 'options.onConflict');
    expectCode(() => validateScheduleOptions({ onConflict: null }), 'INVALID_OPTION', 'options.onConflict');
    expect(() => validateScheduleOptions({ txn: 1 })).toThrow(/options\.txn: is not an option/);
    expect(() => validateScheduleOptions('tx')).toThrow(ValidationError);
  });

  it('rejectUnknownFields names the first unknown field with its prefix', () => {
    expect(() => rejectUnknownFields({ a: 1, b: 2 }, ['a'], 'opts.')).toThrow(/opts\.b: is not an option here \(expected one of a\)/);
    expect(() => rejectUnknownFields({ a: 1 }, ['a'])).not.toThrow();
  });
});
