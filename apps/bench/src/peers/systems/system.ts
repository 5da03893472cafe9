/**
 * What the bench needs from each system it measures, split by where it runs: the parent prepares
 * databases, enqueues tasks and counts what is left ({@link SystemAdmin}); a worker process starts
 * the system's own worker with a no-op handler ({@link StartWorker}).
 */
import type pg from 'pg';
import type { ChildConfig, SystemName } from '../protocol.js';

/** One named configuration of a system, with the settings it changes spelled out for the report. */
export interface SettingInfo {
  readonly name: string;
  /** The exact settings, e.g. "`localQueue.size` 50, `completeJobBatchDelay` 0". */
  readonly description: string;
  /**
   * Measured in the throughput section (and its profile) only: the setting finds tasks exactly as
   * another setting of the system does, so lateness, idle and network would measure that one again.
   */
  readonly throughputOnly?: boolean;
}

/** A task to enqueue: due at `dueMs` (epoch ms), or now when absent. */
export interface BenchTaskSpec {
  readonly dueMs?: number;
}

export interface SystemAdmin {
  readonly system: SystemName;
  /** The settings measured, in report order; the first is the documented default. */
  readonly settings: readonly SettingInfo[];
  /** Creates the system's schema (and queue) in the database at `url`. */
  migrate(url: string): Promise<void>;
  /** Inserts the tasks in as few statements as the system's API allows (one bulk call). */
  enqueue(url: string, tasks: readonly BenchTaskSpec[]): Promise<void>;
  /** Tasks not yet completed, read through `client` (one statement). */
  remaining(client: pg.Client): Promise<number>;
}

/** A worker started inside a worker process. */
export interface RunningWorker {
  /** Stops consuming and waits for in-flight handlers (bounded by the system's own timeout). */
  stop(): Promise<void>;
}

/** Called once per task a handler runs, with its lateness (start − due, ms) when it carries a due time. */
export type OnRan = (latenessMs: number | undefined) => void;

/** A worker process's system, loaded and connected, not yet consuming. */
export interface PreparedWorker {
  /** Starts consuming with a no-op handler that calls `onRan`. */
  start(onRan: OnRan): Promise<RunningWorker>;
}

/**
 * Loads and connects the system's worker in a worker process (the part kept out of timed windows:
 * pools, connections, library start-up), without consuming yet.
 */
export type PrepareWorker = (config: ChildConfig) => Promise<PreparedWorker>;

/** Lateness of a task whose payload may carry `dueMs`, measured now (wall clock, ms). */
export function latenessOf(payload: unknown): number | undefined {
  const dueMs = (payload as { dueMs?: unknown } | null)?.dueMs;
  return typeof dueMs === 'number' ? Date.now() - dueMs : undefined;
}
