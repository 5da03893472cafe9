/**
 * Throughput as worker processes grow (1, 2, 3, 6): Postpone with the same backlog, `concurrency` 10
 * per process, each count on a fresh database.
 */
import { postponeAdmin, type RunContext, runThroughput, type ThroughputResult } from '@postpone/bench-peers';

export interface ProcessesOptions {
  readonly counts: readonly number[];
  readonly tasks: number;
  readonly capMs: number;
  readonly setting: string;
  readonly onPoint?: (point: ThroughputResult) => void;
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
