/**
 * Claim latency and throughput as the backlog of due tasks grows (1 k → 100 k): for each size, a
 * fresh Postpone database with that many tasks due now; claim latency from real claims of 10 (handed
 * back), then one worker process (Postpone tuned, concurrency 10) draining for at most `capMs`.
 */
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import { POSTPONE_SCHEMA, postponeAdmin } from '../peers/systems/postpone.js';
import type { RunContext } from '../peers/contender.js';
import { runThroughput, type ThroughputResult } from '../peers/throughput.js';
import { type ClaimTiming, explainClaim, type ExplainProbe, timeClaims } from './claim-probe.js';
import type { WorkerCurveOptions } from './processes.js';

export interface BacklogPoint {
  readonly backlog: number;
  readonly explain: ExplainProbe;
  readonly claim: ClaimTiming;
  readonly throughput: ThroughputResult;
}

export interface BacklogOptions extends WorkerCurveOptions<BacklogPoint> {
  readonly sizes: readonly number[];
  readonly probes: number;
  readonly processes: number;
}

export async function measureBacklogCurve(ctx: RunContext, options: BacklogOptions): Promise<BacklogPoint[]> {
  const points: BacklogPoint[] = [];
  for (const backlog of options.sizes) {
    let explain: ExplainProbe | undefined;
    let claim: ClaimTiming | undefined;
    const throughput = await runThroughput(
      ctx,
      { admin: postponeAdmin, setting: options.setting },
      { tasks: backlog, processes: options.processes, concurrency: 10, capMs: options.capMs },
      async (url) => {
        const client = new pg.Client({ connectionString: url, application_name: 'postpone-bench-backlog' });
        await client.connect();
        try {
          await client.query(`analyze ${pg.escapeIdentifier(POSTPONE_SCHEMA)}.task`);
          explain = await explainClaim(client, POSTPONE_SCHEMA, options.probes);
        } finally {
          await client.end();
        }
        const store = createPgStore({ connectionString: url, schema: POSTPONE_SCHEMA });
        try {
          claim = await timeClaims(store, options.probes, 10);
        } finally {
          await store.close();
        }
      },
    );
    if (!explain || !claim) throw new Error('backlog probes did not run');
    const point = { backlog, explain, claim, throughput };
    points.push(point);
    options.onPoint?.(point);
  }
  return points;
}
