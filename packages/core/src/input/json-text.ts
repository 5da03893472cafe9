/**
 * Integers in JSON text that JavaScript cannot read exactly. `JSON.parse('9007199254740993')` is
 * 9007199254740992: the value is rounded before any check of the parsed value can see what was
 * written (Node 20 has no access to a number's source text in `JSON.parse`), so text from outside
 * (the CLI's `--payload`, a request body) is checked token by token here.
 */
import { ValidationError } from '../errors/errors.js';
import { unsafeInteger } from './validate.js';

/** One number token of JSON (RFC 8259 §6), anchored at `lastIndex`. */
const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
/** Number.MAX_SAFE_INTEGER has 16 digits. */
const SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER).length;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * True when the number token `token` (JSON syntax) denotes an integer beyond ±(2^53 − 1), whatever
 * its notation (`9007199254740993`, `9.007199254740993e15`, `1e300`, `9007199254740993.0`).
 * Exact: decided on the decimal digits, never on a rounded double.
 */
export function isUnsafeIntegerToken(token: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(token);
  if (m === null) return false;
  const fraction = m[2] ?? '';
  let digits = `${m[1]}${fraction}`.replace(/^0+/, '');
  // 10-exponent of the last digit; a huge written exponent stays huge (only its size matters here).
  let exponent = (m[3] === undefined ? 0 : Number(m[3])) - fraction.length;
  const significant = digits.replace(/0+$/, '');
  exponent += digits.length - significant.length;
  digits = significant;
  if (digits.length === 0) return false; // zero
  if (exponent < 0) return false; // a nonzero digit after the point: not an integer
  if (digits.length + exponent > SAFE_DIGITS) return true;
  return BigInt(digits + '0'.repeat(exponent)) > MAX_SAFE;
}

/**
 * Refuses JSON text holding an integer beyond ±(2^53 − 1) anywhere (a value, not text inside a
 * string), naming its path as core's checks do (`payload.orderId`, `payload.items[2]`). Call it on
 * text that `JSON.parse` accepted; text that is not JSON is left to `JSON.parse`.
 * @throws ValidationError UNSAFE_INTEGER naming the path, with the number as written
 */
export function validateJsonTextIntegers(text: string, field = 'payload'): void {
  const unsafe = findUnsafeInteger(text, field);
  if (unsafe !== null) {
    const shown = unsafe.token.length <= 40 ? unsafe.token : `${unsafe.token.slice(0, 40)}…`;
    throw unsafeInteger(unsafe.path.length <= 120 ? unsafe.path : `${unsafe.path.slice(0, 60)}…${unsafe.path.slice(-59)}`, shown);
  }
}

interface Frame {
  readonly array: boolean;
  readonly path: string;
  /** Next element index (arrays). */
  index: number;
  /** Path of the member whose value comes next (objects). */
  member: string;
}

/**
 * The first integer token beyond ±(2^53 − 1) in valid JSON text, with its path, or null. Iterative
 * (no recursion), so deep nesting cannot overflow the stack.
 */
export function findUnsafeInteger(text: string, root = 'payload'): { path: string; token: string } | null {
  const stack: Frame[] = [];
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  /** The path of the value that starts at `i`. */
  const valuePath = (): string => {
    const top = stack[stack.length - 1];
    if (top === undefined) return root;
    if (top.array) return `${top.path}[${top.index}]`;
    return top.member;
  };
  const fail = (): never => {
    throw new ValidationError('INVALID_PAYLOAD', root, `is not JSON (at character ${i})`);
  };
  for (;;) {
    skipSpace();
    const top = stack[stack.length - 1];
    if (top !== undefined && !top.array && top.member === '') {
      // An object awaits a key (or its end).
      if (text[i] === '}') {
        stack.pop();
        i++;
        if (!afterValue()) return null;
        continue;
      }
      const start = i;
      skipString();
      const key = text.slice(start, i);
      skipSpace();
      if (text[i] !== ':') return fail();
      i++;
      top.member = `${top.path}.${JSON.parse(key) as string}`;
      continue;
    }
    // A value starts at i.
    const c = text[i];
    if (c === '{' || c === '[') {
      const array = c === '[';
      stack.push({ array, path: valuePath(), index: 0, member: '' });
      i++;
      skipSpace();
      if (array && text[i] === ']') {
        stack.pop();
        i++;
        if (!afterValue()) return null;
      }
      continue;
    }
    if (c === '"') skipString();
    else if (text.startsWith('true', i)) i += 4;
    else if (text.startsWith('false', i)) i += 5;
    else if (text.startsWith('null', i)) i += 4;
    else {
      NUMBER.lastIndex = i;
      const number = NUMBER.exec(text);
      if (number === null) return fail();
      if (isUnsafeIntegerToken(number[0])) return { path: valuePath(), token: number[0] };
      i = NUMBER.lastIndex;
    }
    if (!afterValue()) return null;
  }

  /** Moves past the string token at `i` (escapes included). */
  function skipString(): void {
    if (text[i] !== '"') fail();
    for (i++; i < text.length; i++) {
      const ch = text[i];
      if (ch === '\\') i++;
      else if (ch === '"') {
        i++;
        return;
      }
    }
    fail();
  }

  /** After a value: a comma, or the ends of containers. False when the whole text was read. */
  function afterValue(): boolean {
    for (;;) {
      skipSpace();
      const top = stack[stack.length - 1];
      if (top === undefined) return false;
      if (text[i] === ',') {
        i++;
        if (top.array) top.index++;
        else top.member = '';
        return true;
      }
      if (text[i] === (top.array ? ']' : '}')) {
        stack.pop();
        i++;
        continue;
      }
      return fail();
    }
  }
}
