/**
 * The transaction handle of the in-memory store: what `store.transaction(fn)`, `complete({ work })`
 * and `schedule(input, { tx })` share. Writes are staged and become visible to others only when the
 * transaction commits; a rollback drops them all.
 */
import { ValidationError } from '@postpone/core';
import type { WriteSet } from './database.js';

const WRITE_SETS = new WeakMap<MemoryTx, WriteSet>();

/**
 * A tiny table API over one in-memory transaction. Tables are created on first write; keys are
 * strings, values anything `structuredClone` can copy (they are copied on write and on read).
 */
export class MemoryTx {
  /** @internal Made by the store; not for callers. */
  constructor(ws: WriteSet) {
    WRITE_SETS.set(this, ws);
  }

  /**
   * INSERT: adds `key` to `table`.
   * @throws StoreError 23505 when the key exists (committed or staged here); 25000 after the transaction ended
   */
  insert(table: string, key: string, value: unknown): void {
    writeSetOf(this).insertRow(name(table, 'table'), name(key, 'key'), value);
  }

  /**
   * UPDATE: replaces the value of `key` in `table`.
   * @returns false when there is no such row (nothing changes), like an UPDATE that matches 0 rows
   * @throws StoreError 25000 after the transaction ended
   */
  update(table: string, key: string, value: unknown): boolean {
    return writeSetOf(this).updateRow(name(table, 'table'), name(key, 'key'), value);
  }

  /** Reads a row as this transaction sees it (its own writes included), or undefined. */
  get(table: string, key: string): unknown {
    return writeSetOf(this).getRow(name(table, 'table'), name(key, 'key'));
  }

  /** False once the transaction committed or rolled back. */
  get isOpen(): boolean {
    return writeSetOf(this).status === 'open';
  }
}

/**
 * The write set behind a transaction handle.
 * @throws ValidationError INVALID_OPTION when `tx` is not a MemoryTx
 */
export function writeSetOf(tx: unknown, field = 'tx'): WriteSet {
  const ws = typeof tx === 'object' && tx !== null ? WRITE_SETS.get(tx as MemoryTx) : undefined;
  if (ws === undefined) throw new ValidationError('INVALID_OPTION', field, 'must be a MemoryTx handed out by the in-memory store');
  return ws;
}

function name(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new ValidationError('INVALID_OPTION', field, 'must be a non-empty string');
  return value;
}
