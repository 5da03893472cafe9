/**
 * @postpone/core — what Postpone throws and how it describes what others throw: the typed errors
 * (`PostponeError` with a stable `code`, `ValidationError`, `ConnectionError`…) and
 * `describeThrown`, the bounded text of any thrown value. No dependencies; `@postpone/core`
 * re-exports all of it.
 */
export * from './errors.js';
export * from './describe-thrown.js';
