/**
 * Text for any thrown value, for `last_error` and logs. It never throws and its cost is bounded:
 * every read of the value (property getters, Proxy traps, `toString`, `Symbol.toPrimitive`) is
 * guarded, cycles are cut, serialization stops at a budget, and the text is at most
 * {@link MAX_ERROR_LENGTH} characters. A revoked Proxy, an `Error` whose `cause` getter throws, or
 * an object whose `toString` throws still gets a description, so a failure is always recorded.
 */

/** Longest `last_error` text kept, in characters (Store contract, FailParams.error; core `errorText`). */
export const MAX_ERROR_LENGTH = 2_000;

/** How deep a chain of `cause`s is followed. */
const MAX_CAUSE_DEPTH = 3;
/** Elements of an array serialized; the rest is replaced by one `…`. */
const MAX_ARRAY_ITEMS = 100;

/**
 * Describes `value`: an `Error` as `Name [code]: message (cause: …)`; anything else as
 * `handler threw a non-Error value (<type>): <JSON or tag>`.
 * @returns 1..2 000 characters; never throws
 */
export function describeThrown(value: unknown): string {
  try {
    return clip(describe(value, 0, true));
  } catch {
    return 'thrown value could not be described';
  }
}

function describe(value: unknown, depth: number, top: boolean): string {
  if (isError(value)) {
    const name = text(read(value, 'name')) ?? 'Error';
    const code = read(value, 'code');
    const message = text(read(value, 'message')) ?? show(read(value, 'message'));
    const head = `${name}${typeof code === 'string' || typeof code === 'number' ? ` [${clip(String(code))}]` : ''}: ${clip(message)}`;
    const cause = readGuarded(value, 'cause');
    if (cause.threw) return `${head} (cause: unreadable, its getter threw)`;
    if (cause.value === undefined) return head;
    return `${head} (cause: ${depth >= MAX_CAUSE_DEPTH ? '…' : describe(cause.value, depth + 1, false)})`;
  }
  const kind = value === null ? 'null' : typeof value;
  return top ? `handler threw a non-Error value (${kind}): ${show(value)}` : show(value);
}

/** True for an `Error` (or a subclass); false for anything whose prototype cannot be read. */
function isError(value: unknown): value is object {
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

function readGuarded(target: object, key: string): { threw: boolean; value: unknown } {
  try {
    return { threw: false, value: (target as Record<string, unknown>)[key] };
  } catch {
    return { threw: true, value: undefined };
  }
}

function read(target: object, key: string): unknown {
  return readGuarded(target, key).value;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** JSON when it serializes within the budget, else a tag such as `[object Object]`. */
function show(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(clip(value));
    case 'bigint':
      return `${value}n`;
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'symbol':
      return value.description === undefined ? 'Symbol()' : `Symbol(${clip(value.description)})`;
    case 'function': {
      const name = text(read(value, 'name'));
      return name ? `[function ${clip(name)}]` : '[function]';
    }
    default:
      return value === null ? 'null' : serialize(value as object);
  }
}

function serialize(value: object): string {
  let budget = MAX_ERROR_LENGTH;
  const seen = new WeakSet<object>();
  try {
    const json = JSON.stringify(value, (_key, v: unknown) => {
      if (budget <= 0) return undefined;
      if (typeof v === 'bigint') return `${v}n`;
      if (typeof v === 'object' && v !== null) {
        if (seen.has(v)) return '[Circular]';
        seen.add(v);
        if (Array.isArray(v) && v.length > MAX_ARRAY_ITEMS) return [...v.slice(0, MAX_ARRAY_ITEMS), '…'];
      }
      budget -= typeof v === 'string' ? v.length : 8;
      return v;
    });
    if (typeof json === 'string') return json;
  } catch {
    // a getter, a toJSON or a Proxy trap threw: fall back to the tag
  }
  try {
    return Object.prototype.toString.call(value);
  } catch {
    return '[object, unreadable]';
  }
}

function clip(s: string): string {
  return s.length <= MAX_ERROR_LENGTH ? s : `${s.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}
