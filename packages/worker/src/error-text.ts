/**
 * Turns whatever a handler threw into the text recorded in the task's `last_error` (the store
 * truncates it to 2 000 characters). An `Error` gives `Name: message` (plus its `code` when it has
 * one, and the message of its `cause`); anything else is named for what it is, so a `throw "boom"` or
 * a `throw undefined` is as readable as an Error.
 */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const head = `${error.name}${typeof code === 'string' || typeof code === 'number' ? ` [${code}]` : ''}: ${error.message}`;
    const cause = error.cause;
    return cause === undefined ? head : `${head} (cause: ${cause instanceof Error ? `${cause.name}: ${cause.message}` : show(cause)})`;
  }
  return `handler threw a non-Error value (${error === null ? 'null' : typeof error}): ${show(error)}`;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'symbol' || typeof value === 'function' || value === undefined) return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
