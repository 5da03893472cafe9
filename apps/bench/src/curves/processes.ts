/**
 * Throughput as worker processes grow (1, 2, 3, 6): Postpone with the same backlog, `concurrency` 10
 * per process, each count on a fresh database.
 */
import { postponeAdmin } from '../peers/systems/postpone.js';
import type { RunContext } from '../peers/contender.js';
import { runThroughput, type ThroughputResult } from '../peers/throughput.js';

/** What every curve that runs Postpone's worker takes: its setting, a time cap per point, a callback per point. */
export interface WorkerCurveOptions<P> {
  /** Each point's drain stops after this many ms. */
  readonly capMs: number;
  /** Postpone's setting (`default`, `tuned`, …). */
  readonly setting: string;
  readonly onPoint?: (point: P) => void;
}

export interface ProcessesOptions extends WorkerCurveOptions<ThroughputResult> {
  readonly counts: readonly number[];
  readonly tasks: number;
}

export async function measureProcessesCurve(ctx: RunContext, options: ProcessesOptions): Promise<ThroughputResult[]> {
  const points: ThroughputResult[] = [];
  for (const processes of options.counts) {
    const point = await runThroughput(ctx, { admin: postponeAdmin, setting: options.setting }, { tasks: options.tasks, processes, concurrency: 10, capMs: options.capMs });
    points.push(point);
    options.onPoint?.(point);
  }
  return points;
}
