/**
 * Input validation shared by every store: one rule set, so a bad input is refused the same way
 * everywhere, before anything is written (docs/contract.md#input-errors).
 */
import { ValidationError } from '../errors/errors.js';
import type { Json } from './json.js';
import { type TraceContext, validateTraceContext } from './trace-context.js';
import { type DependencyRef, type NormalizedDependency, validateAfter } from '../dependencies.js';

/**
 * A task id: the decimal text of a positive PostgreSQL `bigint` (e.g. `"42"`).
 * Text, not number, because ids can exceed `Number.MAX_SAFE_INTEGER`.
 */
export type TaskId = string;

/** Largest accepted `delayMs`: 100 years. Delays above 2³¹−1 ms are valid; they live in the database, never in `setTimeout`. */
export const MAX_DELAY_MS = 3_155_760_000_000;
/** Earliest and latest accepted `runAt` (years 1..9999, well inside PostgreSQL's `timestamptz` range, §8.5). */
export const MAX_RUN_AT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** Largest accepted `maxAttempts`: PostgreSQL `integer` (2³¹−1). */
export const MAX_ATTEMPTS_LIMIT = 2_147_483_647;
/** Default payload size limit: 1 MiB of UTF-8 JSON text. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;
/** Deepest accepted nesting of arrays and objects in a payload or result. */
export const MAX_JSON_DEPTH = 1_000;
/** Longest accepted kind, in characters. */
export const MAX_KIND_LENGTH = 200;
/** Longest accepted dedup key, in characters. */
export const MAX_KEY_LENGTH = 256;
/** Longest accepted queue name, in characters; the default queue is {@link DEFAULT_QUEUE}. */
export const MAX_QUEUE_LENGTH = 200;
export const DEFAULT_QUEUE = 'default';
/** Accepted priorities: PostgreSQL `smallint` (§8.1.1); higher is claimed first, default 0. */
export const MIN_PRIORITY = -32_768;
export const MAX_PRIORITY = 32_767;
/** Most kinds one claim or peek may name (docs/contract.md#queues). */
export const MAX_CLAIM_KINDS = 1_000;
/** Most kinds one claim may cap with `kindLimits`, and the largest cap (docs/contract.md#kind-concurrency). */
export const MAX_KIND_LIMITS = 1_000;
export const MAX_KIND_LIMIT = 1_000_000;
/** Default attempts per task. */
export const DEFAULT_MAX_ATTEMPTS = 5;
/** PostgreSQL `bigint` maximum (§8.1.1). */
const MAX_BIGINT = 9_223_372_036_854_775_807n;

/** What a caller passes to schedule. Give `delayMs` or `runAt`, not both; neither means due now. */
export interface ScheduleInput<P = unknown> {
  /** Handler name, 1..200 characters, no control characters. */
  readonly kind: string;
  /** Any JSON value (default `null`); no `\u0000`, no lone surrogates, at most `maxPayloadBytes` of UTF-8. */
  readonly payload?: P;
  /** Delay from the store's now, in whole milliseconds, 0..{@link MAX_DELAY_MS}. */
  readonly delayMs?: number;
  /** Absolute due time (a valid Date, at most 100 years after the store's now, as `delayMs`). A past time means due now. */
  readonly runAt?: Date;
  /** Attempts before DEAD, integer 1..2³¹−1 (default {@link DEFAULT_MAX_ATTEMPTS}). */
  readonly maxAttempts?: number;
  /**
   * The W3C trace context of the code scheduling the task (see `@postpone/worker`'s
   * `activeTraceContext()`): the worker links each attempt's span to it. Omit it (or pass null) for none.
   */
  readonly traceContext?: TraceContext | null;
  /**
   * Dedup key, 1..{@link MAX_KEY_LENGTH} characters without `\u0000`: at most one SCHEDULED or CLAIMED
   * task per (kind, key); what a second schedule does is `onConflict` of `ScheduleOptions` (core)
   * (docs/contract.md#dedup-keys). Omit it (or pass null) for none.
   */
  readonly key?: string | null;
  /**
   * Flow-control key (a tenant, an API key), 1..{@link MAX_KEY_LENGTH} characters without `\u0000`,
   * checked as a dedup key (`INVALID_KEY` naming `limitKey`): a kind with a per-key concurrency limit
   * claims at most that many CLAIMED tasks per (kind, limitKey) and rotates its claims among the keys
   * with due work (docs/contract.md#per-key-concurrency). Not a dedup key: many tasks may share it.
   * Omit it (or pass null) for none.
   */
  readonly limitKey?: string | null;
  /** Named queue, as {@link validateQueue} (default `'default'`): only a claim of this queue takes the task (docs/contract.md#queues). */
  readonly queue?: string;
  /** Integer {@link MIN_PRIORITY}..{@link MAX_PRIORITY} (default 0): among due tasks a claim takes higher priority first (docs/contract.md#priorities). */
  readonly priority?: number;
  /**
   * This task's own retry policy, stored on the row (docs/contract.md#retry-policy): it wins over the
   * worker's policy for the kind, which wins over the worker's default. `retry.maxAttempts` is the
   * same number as `maxAttempts` (give one, or both equal). Omit it (or pass null) for none.
   */
  readonly retry?: RetryPolicy | null;
  /**
   * Tasks this one waits for (docs/contract.md#dependencies): it becomes due only when every one is
   * terminal, at the later of its own due time and the last one's finish. Ids of existing tasks, or
   * inside `scheduleMany` `{ index }` of an earlier input; each with `onFailure` `'run'` (default) or
   * `'cancel'`. Not with `key`. Omit it (or pass null or []) for none.
   */
  readonly after?: readonly DependencyRef[] | null;
}

/**
 * Jitter of a retry delay, as defined in AWS Architecture Blog, "Exponential Backoff And Jitter"
 * (Marc Brooker, 2015): with `d = min(capMs, baseMs × 2^(n−1))`, `'none'` waits `d`, `'full'` a
 * uniform draw in `[0, d]`, `'equal'` `d/2` plus a uniform draw in `[0, d/2]` (see core `retryDelayMs`).
 */
export type Jitter = 'none' | 'full' | 'equal';
export const JITTERS: readonly Jitter[] = Object.freeze(['none', 'full', 'equal']);

/** A retry policy: every field optional; a missing one falls through to the next policy (docs/contract.md#retry-policy). */
export interface RetryPolicy {
  /** Failures before DEAD, integer 1..2³¹−1. */
  readonly maxAttempts?: number;
  /** Backoff base in whole ms, 0..{@link MAX_DELAY_MS}: failure n waits `baseMs × 2^(n−1)` before jitter. */
  readonly baseMs?: number;
  /** Backoff cap in whole ms, 1..{@link MAX_DELAY_MS}. */
  readonly capMs?: number;
  readonly jitter?: Jitter;
}

const RETRY_FIELDS = ['maxAttempts', 'baseMs', 'capMs', 'jitter'] as const;

/**
 * Validates a retry policy and returns a copy holding only the fields given.
 * @throws ValidationError INVALID_OPTION (INVALID_MAX_ATTEMPTS for `maxAttempts`) naming `<field>.<name>`
 */
export function validateRetryPolicy(policy: unknown, field = 'retry'): RetryPolicy {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    throw new ValidationError('INVALID_OPTION', field, `must be an object { maxAttempts?, baseMs?, capMs?, jitter? }, got ${describe(policy)}`);
  }
  rejectUnknownFields(policy, RETRY_FIELDS, `${field}.`);
  const p = policy as Record<string, unknown>;
  const out: { -readonly [K in keyof RetryPolicy]: RetryPolicy[K] } = {};
  if (p.maxAttempts !== undefined) out.maxAttempts = validateMaxAttempts(p.maxAttempts, `${field}.maxAttempts`);
  if (p.baseMs !== undefined) out.baseMs = validateNonNegativeMs(p.baseMs, `${field}.baseMs`);
  if (p.capMs !== undefined) out.capMs = validatePositiveMs(p.capMs, `${field}.capMs`, MAX_DELAY_MS);
  if (p.jitter !== undefined) {
    if (!JITTERS.includes(p.jitter as Jitter)) throw new ValidationError('INVALID_OPTION', `${field}.jitter`, `must be one of ${JITTERS.join(', ')}, got ${describe(p.jitter)}`);
    out.jitter = p.jitter as Jitter;
  }
  return out;
}

/** A validated schedule input, ready for a store. */
export interface NormalizedSchedule {
  readonly kind: string;
  readonly payload: Json;
  /** The payload as JSON text (what the store sends). */
  readonly payloadText: string;
  /** Delay in ms when `runAt` is null. */
  readonly delayMs: number;
  readonly runAt: Date | null;
  readonly maxAttempts: number;
  /** The validated trace context, or null. */
  readonly traceContext: TraceContext | null;
  /** The dedup key, or null. */
  readonly key: string | null;
  /** The flow-control key (docs/contract.md#per-key-concurrency), or null. */
  readonly limitKey: string | null;
  readonly queue: string;
  readonly priority: number;
  /** The task's own retry policy (with `maxAttempts` when one was given), or null when it has none. */
  readonly retry: RetryPolicy | null;
  /** The validated dependencies (docs/contract.md#dependencies); absent or null for none. */
  readonly after?: readonly NormalizedDependency[] | null;
}

export interface ValidationLimits {
  /** Payload size limit in bytes of UTF-8 JSON (default 1 MiB). */
  readonly maxPayloadBytes?: number;
  /**
   * The store's now in epoch ms, for the cap of `runAt`: at most {@link MAX_DELAY_MS} (100 years)
   * after it, the cap `delayMs` has (default `Date.now()`).
   */
  readonly nowMs?: number;
}

/** C0 and C1 control characters and DEL. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export function validateKind(kind: unknown, field = 'kind'): string {
  if (typeof kind !== 'string') throw new ValidationError('INVALID_KIND', field, `must be a string, got ${describe(kind)}`);
  if (kind.trim().length === 0) throw new ValidationError('INVALID_KIND', field, kind.length === 0 ? 'must not be empty' : 'must not be only white space');
  if (kind.length > MAX_KIND_LENGTH) throw new ValidationError('INVALID_KIND', field, `must be at most ${MAX_KIND_LENGTH} characters, got ${kind.length}`);
  if (CONTROL.test(kind) || hasLoneSurrogate(kind)) throw new ValidationError('INVALID_KIND', field, 'must not contain control characters or lone surrogates');
  return kind;
}

/** A dedup key: 1..256 characters, no `\u0000` (PostgreSQL `text` cannot store it, §8.3). @throws ValidationError INVALID_KEY */
export function validateKey(key: unknown, field = 'key'): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH || key.includes('\u0000') || hasLoneSurrogate(key)) {
    throw new ValidationError('INVALID_KEY', field, `must be a string of 1..${MAX_KEY_LENGTH} characters without \\u0000 or lone surrogates, got ${describe(key)}`);
  }
  return key;
}

/** A queue name: 1..200 characters, no control characters or lone surrogates. @throws ValidationError INVALID_QUEUE */
export function validateQueue(queue: unknown, field = 'queue'): string {
  if (typeof queue !== 'string' || queue.trim().length === 0 || queue.length > MAX_QUEUE_LENGTH || CONTROL.test(queue) || hasLoneSurrogate(queue)) {
    throw new ValidationError('INVALID_QUEUE', field, `must be a string of 1..${MAX_QUEUE_LENGTH} characters, not only white space, without control characters, got ${describe(queue)}`);
  }
  return queue;
}

/** A priority: an integer {@link MIN_PRIORITY}..{@link MAX_PRIORITY}. @throws ValidationError INVALID_PRIORITY */
export function validatePriority(priority: unknown, field = 'priority'): number {
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
    throw new ValidationError('INVALID_PRIORITY', field, `must be an integer ${MIN_PRIORITY}..${MAX_PRIORITY}, got ${describe(priority)}`);
  }
  return priority;
}

/**
 * The task selection of a claim or peek (docs/contract.md#queues): `queue` (default `'default'`) and
 * `kinds`, 1..1 000 kinds (each as {@link validateKind}, duplicates dropped), or null for every kind.
 * @throws ValidationError INVALID_QUEUE, INVALID_KIND
 */
export function validateSelection(params: { readonly queue?: unknown; readonly kinds?: unknown }): { queue: string; kinds: readonly string[] | null } {
  const queue = params.queue === undefined ? DEFAULT_QUEUE : validateQueue(params.queue);
  if (params.kinds === undefined) return { queue, kinds: null };
  const k = params.kinds;
  if (!Array.isArray(k) || k.length === 0 || k.length > MAX_CLAIM_KINDS) {
    throw new ValidationError('INVALID_KIND', 'kinds', `must be an array of 1..${MAX_CLAIM_KINDS} kinds, got ${Array.isArray(k) ? `${k.length} entries` : describe(k)}`);
  }
  return { queue, kinds: [...new Set(k.map((kind, i) => validateKind(kind, `kinds[${i}]`)))] };
}

/**
 * The per-kind concurrency caps of a claim (docs/contract.md#kind-concurrency): an object of
 * 0..{@link MAX_KIND_LIMITS} entries `{ [kind]: cap }`, each kind as {@link validateKind}, each cap an
 * integer 1..{@link MAX_KIND_LIMIT}. `undefined` or `{}` → null (no caps).
 * @throws ValidationError INVALID_OPTION naming `kindLimits` or `kindLimits.<kind>`; INVALID_KIND naming `kindLimits` for a bad kind
 * @returns the caps as a frozen Map, or null
 */
export function validateKindLimits(limits: unknown, field = 'kindLimits'): ReadonlyMap<string, number> | null {
  if (limits === undefined) return null;
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits) || limits instanceof Map) {
    throw new ValidationError('INVALID_OPTION', field, `must be an object { [kind]: cap }, got ${describe(limits)}`);
  }
  const entries = Object.entries(limits);
  if (entries.length > MAX_KIND_LIMITS) throw new ValidationError('INVALID_OPTION', field, `must cap at most ${MAX_KIND_LIMITS} kinds, got ${entries.length}`);
  if (entries.length === 0) return null;
  const caps = new Map<string, number>();
  for (const [kind, cap] of entries) {
    validateKind(kind, field);
    caps.set(kind, integerIn(cap, `${field}.${kind}`, 1, MAX_KIND_LIMIT, 'an integer'));
  }
  return caps;
}

export function validateDelayMs(delayMs: unknown, field = 'delayMs'): number {
  if (typeof delayMs !== 'number') throw new ValidationError('INVALID_DELAY', field, `must be a number of milliseconds, got ${describe(delayMs)}`);
  if (!Number.isFinite(delayMs)) throw new ValidationError('INVALID_DELAY', field, `must be finite, got ${delayMs}`);
  if (delayMs < 0) throw new ValidationError('INVALID_DELAY', field, `must not be negative, got ${delayMs}`);
  if (!Number.isInteger(delayMs)) throw new ValidationError('INVALID_DELAY', field, `must be whole milliseconds, got ${delayMs}`);
  if (delayMs > MAX_DELAY_MS) throw new ValidationError('INVALID_DELAY', field, `must be at most ${MAX_DELAY_MS} ms (100 years), got ${delayMs}`);
  return delayMs;
}

export function validateRunAt(runAt: unknown, field = 'runAt'): Date {
  if (!(runAt instanceof Date)) throw new ValidationError('INVALID_RUN_AT', field, `must be a Date, got ${describe(runAt)}`);
  const ms = runAt.getTime();
  if (Number.isNaN(ms)) throw new ValidationError('INVALID_RUN_AT', field, 'is an invalid Date');
  if (ms < MIN_RUN_AT || ms > MAX_RUN_AT_MS) throw new ValidationError('INVALID_RUN_AT', field, `must lie in years 1..9999, got ${runAt.toISOString()}`);
  return new Date(ms);
}
/**
 * A due time given as an absolute time (`runAt` of schedule and retry): {@link validateRunAt}, and at
 * most {@link MAX_DELAY_MS} (100 years) after `nowMs`, the cap `delayMs` has. A past time is due now.
 * @param nowMs the store's now in epoch ms (default `Date.now()`)
 * @throws ValidationError INVALID_RUN_AT
 */
export function validateDueAt(runAt: unknown, field = 'runAt', nowMs: number = Date.now()): Date {
  const date = validateRunAt(runAt, field);
  if (date.getTime() - nowMs > MAX_DELAY_MS) {
    throw new ValidationError(
      'INVALID_RUN_AT',
      field,
      `must be at most ${MAX_DELAY_MS} ms (100 years) after now (${new Date(nowMs).toISOString()}), as delayMs, got ${date.toISOString()}`,
    );
  }
  return date;
}
const MIN_RUN_AT = (() => {
  const d = new Date(0);
  d.setUTCFullYear(1, 0, 1);
  return d.getTime();
})();

export function validateMaxAttempts(maxAttempts: unknown, field = 'maxAttempts'): number {
  if (typeof maxAttempts !== 'number' || !Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_LIMIT) {
    throw new ValidationError('INVALID_MAX_ATTEMPTS', field, `must be an integer 1..${MAX_ATTEMPTS_LIMIT}, got ${describe(maxAttempts)}`);
  }
  return maxAttempts;
}

/**
 * Checks that `value` is JSON that `jsonb` accepts and returns it with its text.
 * Refused: undefined at the top level or in arrays, functions, symbols, bigints, non-finite numbers,
 * integers beyond ±(2^53 − 1) (UNSAFE_INTEGER, whatever `code` is: JSON.parse would round them), cycles, nesting deeper than {@link MAX_JSON_DEPTH}, class instances without `toJSON`, strings with `\u0000` (jsonb rejects it, §8.14) or
 * lone UTF-16 surrogates, and text longer than `maxBytes` of UTF-8.
 */
export function validateJson(
  value: unknown,
  field = 'payload',
  maxBytes: number = DEFAULT_MAX_PAYLOAD_BYTES,
  code: 'INVALID_PAYLOAD' | 'INVALID_RESULT' | 'INVALID_PROGRESS' = 'INVALID_PAYLOAD',
): { value: Json; text: string } {
  if (value === null && maxBytes >= 4) return { value: null, text: 'null' }; // the common result of a handler: no walk, no stringify
  const normalized = toJson(value, field, code, new Set());
  const text = JSON.stringify(normalized);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw new ValidationError(code === 'INVALID_PAYLOAD' ? 'PAYLOAD_TOO_LARGE' : code === 'INVALID_PROGRESS' ? 'PROGRESS_TOO_LARGE' : code, field, `is ${bytes} bytes of JSON, the limit is ${maxBytes}`);
  }
  return { value: normalized, text };
}

/**
 * The error for an integer JSON cannot carry to JavaScript exactly: beyond ±(2^53 − 1)
 * (`Number.MAX_SAFE_INTEGER`), `JSON.parse` rounds it (9007199254740993 reads back as
 * 9007199254740992), so a worker would see another number than the one meant. Large ids and amounts
 * travel as strings (or `bigint` turned to text by the caller).
 * @param shown the value as the caller wrote it (its JSON text when known)
 */
export function unsafeInteger(field: string, shown: string): ValidationError {
  return new ValidationError(
    'UNSAFE_INTEGER',
    field,
    `is the integer ${shown}, beyond ±${Number.MAX_SAFE_INTEGER} (Number.MAX_SAFE_INTEGER), which JSON.parse cannot read back exactly; send it as a string`,
  );
}

/** `viaToJson`: `value` came from a `toJSON()` call, whose result is not replaced again (ECMA-262 SerializeJSONProperty). */
/** A field path as errors show it: at most about 120 characters (a 1 000-level path is 3 000), the middle elided. */
function shortPath(path: string): string {
  return path.length <= 120 ? path : `${path.slice(0, 60)}…${path.slice(-59)}`;
}

function toJson(value: unknown, path: string, code: 'INVALID_PAYLOAD' | 'INVALID_RESULT' | 'INVALID_PROGRESS', seen: Set<object>, viaToJson = false): Json {
  switch (typeof value) {
    case 'string':
      if (value.includes('\u0000')) throw new ValidationError(code, shortPath(path), 'contains \\u0000, which jsonb cannot store');
      if (hasLoneSurrogate(value)) throw new ValidationError(code, shortPath(path), 'contains a lone UTF-16 surrogate, which jsonb cannot store');
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new ValidationError(code, shortPath(path), `is not a finite number (${value}); JSON has no NaN or Infinity`);
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) throw unsafeInteger(shortPath(path), String(value));
      return value;
    case 'boolean':
      return value;
    case 'undefined':
      throw new ValidationError(code, shortPath(path), 'is undefined, which JSON cannot represent');
    case 'bigint':
    case 'function':
    case 'symbol':
      throw new ValidationError(code, shortPath(path), `is a ${typeof value}, which JSON cannot represent`);
    case 'object': {
      if (value === null) return null;
      if (seen.has(value)) throw new ValidationError(code, shortPath(path), 'contains a cycle');
      if (seen.size >= MAX_JSON_DEPTH) throw new ValidationError(code, shortPath(path), `is nested deeper than ${MAX_JSON_DEPTH} levels`);
      const withToJson = value as { toJSON?: unknown };
      if (!viaToJson && typeof withToJson.toJSON === 'function') {
        return toJson((withToJson.toJSON as () => unknown).call(value), path, code, seen, true);
      }
      seen.add(value);
      try {
        if (Array.isArray(value)) return value.map((v, i) => toJson(v, `${path}[${i}]`, code, seen));
        const proto = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) {
          throw new ValidationError(code, shortPath(path), `is a ${proto?.constructor?.name ?? 'class'} instance, not a plain object`);
        }
        const out: Record<string, Json> = {};
        for (const [k, v] of Object.entries(value)) {
          if (v === undefined) continue; // JSON.stringify drops undefined properties; so do we.
          if (k.includes('\u0000') || hasLoneSurrogate(k)) throw new ValidationError(code, shortPath(`${path}.${k}`), 'key contains \\u0000 or a lone surrogate');
          const json = toJson(v, `${path}.${k}`, code, seen);
          // An own "__proto__" key (JSON.parse makes one) must stay a key: assigning it would run the
          // prototype setter, dropping the member and giving `out` a prototype no store accepts.
          if (k === '__proto__') Object.defineProperty(out, k, { value: json, enumerable: true, writable: true, configurable: true });
          else out[k] = json;
        }
        return out;
      } finally {
        seen.delete(value);
      }
    }
  }
  throw new ValidationError(code, shortPath(path), 'is not JSON');
}

function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return true;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

const SCHEDULE_FIELDS: ReadonlySet<string> = new Set(['kind', 'payload', 'delayMs', 'runAt', 'maxAttempts', 'traceContext', 'key', 'retry', 'queue', 'priority', 'limitKey', 'after']);

/**
 * Validates one schedule input. A field it does not know (say `delay` for `delayMs`) is refused
 * rather than ignored, so a typo never makes a task due at once.
 * @throws ValidationError (INVALID_KIND, INVALID_DELAY, INVALID_RUN_AT, INVALID_MAX_ATTEMPTS, INVALID_PAYLOAD, PAYLOAD_TOO_LARGE, INVALID_KEY, INVALID_OPTION)
 */
export function validateSchedule(input: unknown, limits: ValidationLimits = {}, prefix = '', position?: number): NormalizedSchedule {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationError('INVALID_OPTION', prefix || 'input', `must be an object, got ${describe(input)}`);
  }
  const i = input as Record<string, unknown>;
  const f = (name: string) => (prefix ? `${prefix}.${name}` : name);
  for (const key of Object.keys(i)) {
    if (!SCHEDULE_FIELDS.has(key)) {
      throw new ValidationError('INVALID_OPTION', f(key), `is not a schedule field (expected one of ${[...SCHEDULE_FIELDS].join(', ')})`);
    }
  }
  const kind = validateKind(i.kind, f('kind'));
  if (i.delayMs !== undefined && i.runAt !== undefined) {
    throw new ValidationError('INVALID_DELAY', f('delayMs'), 'give delayMs or runAt, not both');
  }
  const runAt = i.runAt === undefined ? null : validateDueAt(i.runAt, f('runAt'), limits.nowMs);
  const delayMs = i.delayMs === undefined ? 0 : validateDelayMs(i.delayMs, f('delayMs'));
  const own = i.retry === undefined || i.retry === null ? {} : validateRetryPolicy(i.retry, f('retry'));
  const given = i.maxAttempts === undefined ? undefined : validateMaxAttempts(i.maxAttempts, f('maxAttempts'));
  if (given !== undefined && own.maxAttempts !== undefined && given !== own.maxAttempts) {
    throw new ValidationError('INVALID_MAX_ATTEMPTS', f('retry.maxAttempts'), `differs from maxAttempts (${given}); give one, or both equal`);
  }
  const maxAttempts = given ?? own.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const policy = given === undefined ? own : { ...own, maxAttempts };
  const retry = Object.keys(policy).length === 0 ? null : policy;
  const maxBytes = limits.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const { value, text } = validateJson(i.payload === undefined ? null : i.payload, f('payload'), maxBytes);
  const traceContext = i.traceContext === undefined || i.traceContext === null ? null : validateTraceContext(i.traceContext, f('traceContext'));
  const key = i.key === undefined || i.key === null ? null : validateKey(i.key, f('key'));
  const limitKey = i.limitKey === undefined || i.limitKey === null ? null : validateKey(i.limitKey, f('limitKey'));
  const queue = i.queue === undefined ? DEFAULT_QUEUE : validateQueue(i.queue, f('queue'));
  const priority = i.priority === undefined ? 0 : validatePriority(i.priority, f('priority'));
  const after = validateAfter(i.after, f('after'), position, key !== null, parseTaskId);
  const base = { kind, payload: value, payloadText: text, delayMs, runAt, maxAttempts, traceContext, key, limitKey, retry, queue, priority };
  return after === null ? base : { ...base, after };
}

/**
 * Validates a batch: every input checked before any is written (all-or-nothing). Two inputs of one
 * kind and dedup key are refused (INVALID_KEY naming the later one): a batch never conflicts with itself.
 * @throws ValidationError naming the first bad field as `tasks[i].field`
 */
export function validateScheduleMany(inputs: unknown, limits: ValidationLimits = {}): NormalizedSchedule[] {
  if (!Array.isArray(inputs)) throw new ValidationError('INVALID_OPTION', 'tasks', `must be an array, got ${describe(inputs)}`);
  const keys = new Map<string, number>();
  return inputs.map((input, idx) => {
    const task = validateSchedule(input, limits, `tasks[${idx}]`, idx);
    const slot = task.key === null ? undefined : JSON.stringify([task.kind, task.key]);
    const first = slot === undefined ? undefined : keys.get(slot);
    if (first !== undefined) throw new ValidationError('INVALID_KEY', `tasks[${idx}].key`, `repeats the kind and key of tasks[${first}]`);
    if (slot !== undefined) keys.set(slot, idx);
    return task;
  });
}

/**
 * Parses a task id: a positive integer within PostgreSQL `bigint`, given as decimal text or a safe integer.
 * @throws ValidationError INVALID_TASK_ID
 */
export function parseTaskId(id: unknown, field = 'id'): TaskId {
  if (typeof id === 'number') {
    if (Number.isSafeInteger(id) && id > 0) return String(id);
    throw new ValidationError('INVALID_TASK_ID', field, `must be a positive safe integer or decimal text, got ${describe(id)}`);
  }
  if (typeof id === 'bigint') {
    if (id > 0n && id <= MAX_BIGINT) return id.toString();
    throw new ValidationError('INVALID_TASK_ID', field, `is out of bigint range: ${id}`);
  }
  if (typeof id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(id) || BigInt(id) > MAX_BIGINT) {
    throw new ValidationError('INVALID_TASK_ID', field, `must be decimal text of a positive bigint, got ${describe(id)}`);
  }
  return id;
}

/**
 * Orders two task ids as the numbers they are (a shorter id is smaller; equal lengths compare as
 * text), exactly past 2⁵³ where `Number` would tie them: −1, 0 or 1 for `Array.prototype.sort`.
 * Takes ids as {@link parseTaskId} returns them (decimal text, no leading zero).
 */
export function compareTaskIds(a: TaskId, b: TaskId): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** `value` when it is an integer in `min..max`, else a ValidationError INVALID_OPTION saying "must be <what> min..max". */
function integerIn(value: unknown, field: string, min: number, max: number, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError('INVALID_OPTION', field, `must be ${what} ${min}..${max}, got ${describe(value)}`);
  }
  return value;
}

/** Validates an attempt (fencing token) passed back by a worker. */
export function validateAttempt(attempt: unknown, field = 'attempt'): number {
  return integerIn(attempt, field, 1, MAX_ATTEMPTS_LIMIT, 'an integer');
}

/** Validates a positive whole number of milliseconds (lease, poll interval...). */
export function validatePositiveMs(ms: unknown, field: string, max = 2_147_483_647): number {
  return integerIn(ms, field, 1, max, 'whole milliseconds');
}

/** Validates a non-negative whole number of milliseconds. */
export function validateNonNegativeMs(ms: unknown, field: string, max = MAX_DELAY_MS): number {
  return integerIn(ms, field, 0, max, 'whole milliseconds');
}

/** Validates a positive integer count (claim limit, concurrency...). */
export function validatePositiveInt(n: unknown, field: string, max = 1_000_000): number {
  return integerIn(n, field, 1, max, 'an integer');
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === undefined || v === null) return String(v);
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
  return Array.isArray(v) ? 'an array' : `a ${typeof v}`;
}

/**
 * Refuses fields an options object does not know (say `schem` for `schema`, `txn` for `tx`), so a
 * typo is never silently a default.
 * @throws ValidationError INVALID_OPTION naming `<prefix><field>`
 */
export function rejectUnknownFields(value: object, known: readonly string[], prefix = ''): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new ValidationError('INVALID_OPTION', `${prefix}${key}`, `is not an option here (expected one of ${known.join(', ')})`);
    }
  }
}

/**
 * What a schedule does with its dedup key (docs/contract.md#dedup-keys): `'keep'`, `'replace'` and
 * `'fail'` decide what happens when a SCHEDULED or CLAIMED task holds (kind, key); `'debounce'`
 * replaces a SCHEDULED holder's payload and due time (the due time pushed to the new schedule's) and
 * queues a new task behind a CLAIMED one; `'queueBehind'` keeps a SCHEDULED holder and queues a new
 * task behind a CLAIMED one; `'throttle'` creates at most one task per key per `throttleMs`, counted
 * from the last task it created, even after that task finished.
 */
export type OnConflict = 'keep' | 'replace' | 'fail' | 'debounce' | 'queueBehind' | 'throttle';
export const ON_CONFLICT: readonly OnConflict[] = Object.freeze(['keep', 'replace', 'fail', 'debounce', 'queueBehind', 'throttle']);
/** The modes in which a CLAIMED holder hands its key to a new task queued behind it. */
export const HANDS_OVER_KEY: readonly OnConflict[] = Object.freeze(['debounce', 'queueBehind']);

/** The validated options of schedule / scheduleMany. */
export interface NormalizedScheduleOptions {
  readonly tx?: unknown;
  readonly onConflict: OnConflict;
  /** With `onConflict: 'throttle'` the throttle period in ms; null otherwise. */
  readonly throttleMs: number | null;
}

/**
 * Checks the options of schedule / scheduleMany: `undefined`, or an object with `tx` and
 * `onConflict` (default `'keep'`). Whether `tx` is really the store's transaction handle is the store's check.
 * @throws ValidationError INVALID_OPTION
 */
/** Checks `cancel`'s options (`{ tx }`). @throws ValidationError INVALID_OPTION naming the field */
export function validateCancelOptions(options: unknown): { readonly tx?: unknown } {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError('INVALID_OPTION', 'options', `must be an object such as { tx }, got ${describe(options)}`);
  }
  rejectUnknownFields(options, ['tx'], 'options.');
  const { tx } = options as { tx?: unknown };
  return tx === undefined ? {} : { tx };
}

/**
 * Checks the options of schedule / scheduleMany: `undefined`, or an object with `tx`, `onConflict`
 * (default `'keep'`) and, with `onConflict: 'throttle'` only and then required, `throttleMs` (whole
 * ms, 1..{@link MAX_DELAY_MS}). Whether `tx` is really the store's transaction handle is the store's check.
 * @throws ValidationError INVALID_OPTION naming `options.onConflict` or `options.throttleMs`
 */
export function validateScheduleOptions(options: unknown): NormalizedScheduleOptions {
  if (options === undefined) return { onConflict: 'keep', throttleMs: null };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError('INVALID_OPTION', 'options', `must be an object such as { tx }, got ${describe(options)}`);
  }
  rejectUnknownFields(options, ['tx', 'onConflict', 'throttleMs'], 'options.');
  const { tx, onConflict = 'keep', throttleMs } = options as { tx?: unknown; onConflict?: unknown; throttleMs?: unknown };
  if (!ON_CONFLICT.includes(onConflict as OnConflict)) {
    throw new ValidationError('INVALID_OPTION', 'options.onConflict', `must be one of ${ON_CONFLICT.join(', ')}, got ${describe(onConflict)}`);
  }
  let period: number | null = null;
  if (onConflict === 'throttle') {
    if (throttleMs === undefined) throw new ValidationError('INVALID_OPTION', 'options.throttleMs', "is required with onConflict: 'throttle'");
    period = validatePositiveMs(throttleMs, 'options.throttleMs', MAX_DELAY_MS);
  } else if (throttleMs !== undefined) {
    throw new ValidationError('INVALID_OPTION', 'options.throttleMs', `is only for onConflict: 'throttle', got onConflict ${describe(onConflict)}`);
  }
  const out = { onConflict: onConflict as OnConflict, throttleMs: period };
  return tx === undefined ? out : { tx, ...out };
}
