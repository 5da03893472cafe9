/**
 * @postpone/core — the one rule set for what users hand to Postpone: task ids, kinds, dedup keys,
 * delays, due times, attempt limits, JSON payloads (size and depth bounded) and W3C trace context.
 * Every store validates through it before writing, so a bad input gets the same typed
 * `ValidationError` everywhere and nothing is written (docs/contract.md#input-errors). No I/O.
 * `@postpone/core` re-exports all of it.
 */
export * from './json.js';
export * from './trace-context.js';
export * from './validate.js';
export * from './json-text.js';
