/**
 * The retry policy of one failed attempt, resolved field by field (docs/contract.md#retry-policy):
 * the task's own (given at schedule, stored on the row) wins over the worker's policy for its kind,
 * which wins over the worker's default (`backoffBaseMs`, `maxBackoffMs`, `jitter`; for `maxAttempts`
 * the row's `max_attempts`, i.e. the schedule default 5).
 */
import { type ClaimedTask, type Jitter, type RandomSource, type RetryPolicy, retryDelayMs } from '@postpone/core';

/** The worker's side of the policy (the worker's resolved options fit). */
export interface RetryDefaults {
  readonly backoffBaseMs: number;
  readonly maxBackoffMs: number;
  readonly jitter: Jitter;
  /** Policies by kind (`retryByKind`); a kind not listed uses the defaults. */
  readonly retryByKind: Readonly<Record<string, RetryPolicy>>;
  /** Uniform draws in `[0, 1)` for jitter (default `Math.random`; tests pass a seeded one). */
  readonly random: RandomSource;
}

export interface ResolvedRetry {
  /** Failures before DEAD for this task. */
  readonly maxAttempts: number;
  /** The limit to send with `fail` when it is not the row's own (the kind's), else undefined. */
  readonly maxAttemptsOverride: number | undefined;
  readonly baseMs: number;
  readonly capMs: number;
  readonly jitter: Jitter;
}

export function resolveRetry(task: ClaimedTask, defaults: RetryDefaults): ResolvedRetry {
  const own = task.retry ?? {};
  const kind = Object.hasOwn(defaults.retryByKind, task.kind) ? (defaults.retryByKind[task.kind] as RetryPolicy) : {};
  const maxAttemptsOverride = own.maxAttempts === undefined ? kind.maxAttempts : undefined;
  return {
    maxAttempts: maxAttemptsOverride ?? task.maxAttempts,
    maxAttemptsOverride,
    baseMs: own.baseMs ?? kind.baseMs ?? defaults.backoffBaseMs,
    capMs: own.capMs ?? kind.capMs ?? defaults.maxBackoffMs,
    jitter: own.jitter ?? kind.jitter ?? defaults.jitter,
  };
}

/** The delay before the retry after failure number `task.failures + 1`, under the resolved policy (core `retryDelayMs`). */
export function retryDelayFor(task: ClaimedTask, policy: ResolvedRetry, random: RandomSource): number {
  return retryDelayMs(policy.baseMs, task.failures + 1, policy.capMs, policy.jitter, random);
}
