/**
 * The verdict of one evidence case: the measured values it prints and the invariants it checks.
 * A case passes only when every check holds; each check compares exact values.
 */
import type { CaseValue } from '@postpone/testkit';

export interface Check {
  readonly label: string;
  readonly ok: boolean;
  readonly detail: string;
}

function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export class Verdict {
  readonly fields: Record<string, CaseValue> = {};
  readonly checks: Check[] = [];

  /** Records a measured value for the CASE line (insertion order is print order). */
  set(key: string, value: CaseValue): this {
    this.fields[key] = value;
    return this;
  }

  /** Checks `actual` equals `expected` (deep, by JSON). */
  equal(label: string, actual: unknown, expected: unknown): boolean {
    const ok = JSON.stringify(actual) === JSON.stringify(expected);
    return this.add(label, ok, `expected ${show(expected)}, got ${show(actual)}`);
  }

  /** Checks `actual >= min`. */
  atLeast(label: string, actual: number, min: number): boolean {
    return this.add(label, actual >= min, `expected >= ${min}, got ${actual}`);
  }

  /** Checks `actual <= max`. */
  atMost(label: string, actual: number, max: number): boolean {
    return this.add(label, actual <= max, `expected <= ${max}, got ${actual}`);
  }

  /** Checks a condition described by `detail`. */
  holds(label: string, ok: boolean, detail = 'condition'): boolean {
    return this.add(label, ok, detail);
  }

  /** Records that the case could not finish (a timeout, a crashed child): the case fails. */
  error(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.add('completed without error', false, message);
  }

  get pass(): boolean {
    return this.checks.length > 0 && this.checks.every((c) => c.ok);
  }

  failures(): Check[] {
    return this.checks.filter((c) => !c.ok);
  }

  private add(label: string, ok: boolean, detail: string): boolean {
    this.checks.push({ label, ok, detail });
    return ok;
  }
}
