/**
 * Dependencies (issue #29, docs/contract.md#dependencies): a task scheduled with `after` becomes due
 * only when every task it depends on is terminal (DONE, DEAD or CANCELLED), at the later of its own
 * due time and the last dependency's finish. Shapes and validation shared by every store.
 */
import type { TaskId } from './input/validate.js';
import { ValidationError } from './errors/index.js';

/**
 * What a dependent does when a dependency ends DEAD or CANCELLED: `'run'` (default) counts it as
 * finished like DONE; `'cancel'` cancels the dependent at once (still waiting), with a `lastError`
 * naming the dependency, and the cancellation cascades to the dependent's own `'cancel'` dependents.
 */
export type DependencyFailurePolicy = 'run' | 'cancel';
export const DEPENDENCY_FAILURE_POLICIES: readonly DependencyFailurePolicy[] = Object.freeze(['run', 'cancel']);

/**
 * One entry of `ScheduleInput.after`: a task id (decimal text or a safe integer: an existing task,
 * live or finished); `{ id, onFailure? }`; or, inside `scheduleMany`, `{ index, onFailure? }` naming
 * an EARLIER input of the same call (so a graph is scheduled in one call and one transaction, and a
 * cycle cannot be written).
 */
export type DependencyRef = TaskId | number | { readonly id: TaskId | number; readonly onFailure?: DependencyFailurePolicy } | { readonly index: number; readonly onFailure?: DependencyFailurePolicy };

/** A validated dependency edge: exactly one of `id` and `index` is set. */
export interface NormalizedDependency {
  readonly id: TaskId | null;
  readonly index: number | null;
  readonly onFailure: DependencyFailurePolicy;
}

/** Most dependencies of one task. */
export const MAX_DEPENDENCIES = 1000;

/**
 * The due time a store gives a task still waiting for dependencies: 9999-12-31T00:00:00Z, a finite
 * timestamp (JavaScript `Date` and PostgreSQL `timestamptz` both hold it), later than any due time
 * schedule accepts (at most 100 years ahead), so no claim reaches it and stats never count it late.
 * Its own due time is kept aside; `getTask` reports that one, with `waitingFor`.
 */
export const HELD_DUE_AT_MS = Date.UTC(9999, 11, 31);

/** The `lastError` of a dependent cancelled because a dependency ended DEAD or CANCELLED (policy `'cancel'`). */
export function dependencyCancelReason(dependency: TaskId, state: string): string {
  return `dependency ${dependency} ended ${state}`;
}

/**
 * Validates `after` of the input at `position` of a `scheduleMany` (undefined for `schedule`, where
 * `{ index }` is refused). Duplicates are refused (INVALID_DEPENDENCY), as is `after` with a `key`
 * (a keyed schedule may return an existing task instead of creating one).
 * `parseTaskId` is core's (passed in: `./input/validate.ts` imports this module).
 * @throws ValidationError INVALID_DEPENDENCY naming `after[i]` (or `tasks[n].after[i]`), INVALID_TASK_ID
 */
export function validateAfter(after: unknown, field: string, position: number | undefined, hasKey: boolean, parseTaskId: (id: unknown, field: string) => TaskId): NormalizedDependency[] | null {
  if (after === undefined || after === null) return null;
  if (!Array.isArray(after)) throw new ValidationError('INVALID_DEPENDENCY', field, `must be an array of task ids or { id | index, onFailure? }, got ${describe(after)}`);
  if (after.length === 0) return null;
  if (hasKey) throw new ValidationError('INVALID_DEPENDENCY', field, 'cannot be combined with a dedup key: a keyed schedule may return an existing task');
  if (after.length > MAX_DEPENDENCIES) throw new ValidationError('INVALID_DEPENDENCY', field, `has ${after.length} entries, at most ${MAX_DEPENDENCIES}`);
  const seen = new Set<string>();
  return after.map((ref: unknown, i) => {
    const f = `${field}[${i}]`;
    let out: NormalizedDependency;
    if (typeof ref === 'string' || typeof ref === 'number' || typeof ref === 'bigint') {
      out = { id: parseTaskId(ref, f), index: null, onFailure: 'run' };
    } else if (typeof ref === 'object' && ref !== null && !Array.isArray(ref)) {
      const r = ref as Record<string, unknown>;
      for (const k of Object.keys(r)) if (k !== 'id' && k !== 'index' && k !== 'onFailure') throw new ValidationError('INVALID_DEPENDENCY', `${f}.${k}`, 'is not a dependency field (id, index, onFailure)');
      const onFailure = r.onFailure === undefined ? 'run' : r.onFailure;
      if (!DEPENDENCY_FAILURE_POLICIES.includes(onFailure as DependencyFailurePolicy)) {
        throw new ValidationError('INVALID_DEPENDENCY', `${f}.onFailure`, `must be 'run' or 'cancel', got ${describe(onFailure)}`);
      }
      if ((r.id === undefined) === (r.index === undefined)) throw new ValidationError('INVALID_DEPENDENCY', f, 'give id or index, exactly one');
      if (r.id !== undefined) out = { id: parseTaskId(r.id, `${f}.id`), index: null, onFailure: onFailure as DependencyFailurePolicy };
      else {
        if (position === undefined) throw new ValidationError('INVALID_DEPENDENCY', `${f}.index`, 'is only valid inside scheduleMany');
        if (typeof r.index !== 'number' || !Number.isInteger(r.index) || r.index < 0 || r.index >= position) {
          throw new ValidationError('INVALID_DEPENDENCY', `${f}.index`, `must name an earlier input of the batch (0..${position - 1}), got ${describe(r.index)}`);
        }
        out = { id: null, index: r.index, onFailure: onFailure as DependencyFailurePolicy };
      }
    } else {
      throw new ValidationError('INVALID_DEPENDENCY', f, `must be a task id or { id | index, onFailure? }, got ${describe(ref)}`);
    }
    const slot = out.id !== null ? `id:${out.id}` : `index:${out.index}`;
    if (seen.has(slot)) throw new ValidationError('INVALID_DEPENDENCY', f, 'repeats an earlier entry');
    seen.add(slot);
    return out;
  });
}

/**
 * Resolves each edge of a batch to a dependency id: `{ index }` to the id the batch gave that input.
 * An `id` entry naming a task this very batch created did not exist when it was called: the store
 * refuses it (DEPENDENCY_NOT_FOUND; else a task could wait for itself).
 */
export function resolveDependencies(
  after: readonly (readonly NormalizedDependency[] | null | undefined)[],
  ids: readonly TaskId[],
): { dependent: TaskId; dependency: TaskId; onFailure: DependencyFailurePolicy; field: string; byIndex: boolean }[] {
  return after.flatMap((edges, n) =>
    (edges ?? []).map((e, i) => ({
      dependent: ids[n] as TaskId,
      dependency: e.id ?? (ids[e.index as number] as TaskId),
      onFailure: e.onFailure,
      byIndex: e.index !== null,
      field: ids.length === 1 ? `after[${i}]` : `tasks[${n}].after[${i}]`,
    })),
  );
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === undefined || v === null) return String(v);
  return Array.isArray(v) ? 'an array' : `a ${typeof v}`;
}
