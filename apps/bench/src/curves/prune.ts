/**
 * The claim while `prune` deletes finished history (issue 15: "claim cost stays flat while it runs").
 *
 * One schema: `finished` terminal tasks finished a day ago (80 % DONE with their worker, 10 %
 * CANCELLED, 10 % DEAD; bulk insert, then `VACUUM (ANALYZE)`), 1 000 tasks not yet due, and a
 * trickle of due tasks. A probe schedules `trickle` tasks due now, runs the store's claim statement
 * once under `EXPLAIN (ANALYZE, BUFFERS)` (rolled back), then claims for real (limit 10, timed at the
 * client) and completes what it claimed (`completeMany`), like a polling worker. Probes run
 * (a) before pruning, (b) while `store.prune({ olderThanMs: 1 h })` deletes the whole history in its
 * batches from another connection, (c) after it returned.
 *
 * Why it should stay flat: the claim reads `task_claim_idx`, a partial index of SCHEDULED rows only
 * (PostgreSQL 17 §11.8), which a DELETE of finished rows never touches (a DELETE adds no index
 * entries; VACUUM later removes the old ones, §24.1.2). Each prune batch is its own statement taking
 * `ROW EXCLUSIVE` on `task` and `effect` (the legacy table prune still cleans) — the lock every UPDATE takes, which conflicts only with
 * SHARE and stronger (§13.3.1) — and row locks on finished rows only, with `SKIP LOCKED`, so it never
 * waits for a claim and a claim never waits for it. A sampler reads `pg_locks` during the prune: the
 * lock modes the prune's backend holds, and any lock the claim side's backends wait for.
 */
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import { insertPrunableHistory, vacuumAnalyze } from './db/history.js';
import { delay } from '../peers/util/wait.js';
import { median, percentile } from '../peers/util/stats.js';
import { type ExplainSample, explainOnce } from './claim-probe.js';

export type PrunePhaseName = 'before' | 'during' | 'after';

/** The probes of one phase. */
export interface PrunePhase {
  readonly phase: PrunePhaseName;
  /** Timed claims. */
  readonly claims: number;
  /** Tasks they returned in total. */
  readonly claimed: number;
  /** Claims that returned no task although `trickle` had just been scheduled due (should be 0). */
  readonly emptyClaims: number;
  /** Client-side claim time (round trip), ms. */
  readonly claimP50Ms: number;
  readonly claimP99Ms: number;
  readonly claimMaxMs: number;
  /** Claims slower than {@link PruneUnderLoadResult.slowClaimMs}. */
  readonly slowClaims: number;
  /** Shared buffers of the claim statement (EXPLAIN ANALYZE): median and largest. */
  readonly buffers: number;
  readonly buffersMax: number;
  /** Shared buffers of its scan of `task_claim_idx`, median. */
  readonly scanBuffers: number;
  /** Server execution time of the claim statement, median ms. */
  readonly executionMs: number;
}

export interface PruneUnderLoadResult {
  /** Finished tasks inserted (the history prune should delete). */
  readonly finished: number;
  /** Legacy effect rows inserted with them (0: completions write none since migration 13). */
  readonly effects: number;
  readonly notDue: number;
  /** Tasks scheduled due now before each probe. */
  readonly trickle: number;
  /** Pause between probes, ms. */
  readonly pauseMs: number;
  readonly batchSize: number;
  /** What `prune` returned. */
  readonly deleted: number;
  readonly effectsDeleted: number;
  readonly batches: number;
  /** Wall time of the `prune` call, ms; rows (tasks) per second over it. */
  readonly pruneMs: number;
  readonly rowsPerSecond: number;
  /** before, during, after. */
  readonly phases: readonly PrunePhase[];
  /** The bound that makes a claim count as slow, ms. */
  readonly slowClaimMs: number;
  /** `pg_locks` reads during the prune. */
  readonly lockSamples: number;
  /** Lock waits of the claim side's backends seen in those reads (should be 0). */
  readonly claimLockWaits: number;
  /** Distinct `relation: mode` table locks the prune's backend was seen holding. */
  readonly pruneLocks: readonly string[];
  /** Finished `bench_history` rows / their effect rows left after the prune (should be 0). */
  readonly historyLeft: number;
  readonly historyEffectsLeft: number;
  /** The not-due tasks read the same after as before (ids, state, due time, last update). */
  readonly notDueUntouched: boolean;
  /** Tasks still SCHEDULED and due at the end (the trickle was fully claimed: should be 0). */
  readonly dueLeft: number;
}

export interface PruneUnderLoadOptions {
  readonly url: string;
  readonly schema: string;
  /** Finished tasks to insert and prune. */
  readonly finished: number;
  /** Rows per prune batch (the store's `batchSize`). */
  readonly batchSize: number;
  /** Probes before and after the prune, each. */
  readonly probes: number;
  /** Most probes while the prune runs (they stop earlier when it returns). */
  readonly maxDuringProbes: number;
  /** Tasks due now scheduled before each probe (1..10). */
  readonly trickle: number;
  /** Pause between probes, ms (a worker's poll). */
  readonly pauseMs: number;
  /** A claim slower than this counts as slow, ms. */
  readonly slowClaimMs: number;
  /** Not-yet-due tasks (default 1 000). */
  readonly notDue?: number;
}

/** Lock modes that do not conflict with the ROW EXCLUSIVE lock a claim's UPDATE takes (PostgreSQL 17 Table 13.2). */
export const CLAIM_COMPATIBLE_LOCKS: readonly string[] = ['AccessShareLock', 'RowShareLock', 'RowExclusiveLock'];

const CLAIM_APP = 'postpone-bench-prune-claim';
const PRUNE_APP = 'postpone-bench-prune';
const OWNER = 'bench-prune-probe';
const CLAIM_LIMIT = 10;
const PRUNE_OLDER_THAN_MS = 3_600_000;

interface Sample {
  readonly ms: number;
  readonly claimed: number;
  readonly explain: ExplainSample;
}

/** Measures the claim before, during and after a prune of the whole history. See the module comment. */
export async function measureClaimWhilePruning(options: PruneUnderLoadOptions): Promise<PruneUnderLoadResult> {
  const { url, schema, trickle } = options;
  if (!(Number.isInteger(trickle) && trickle >= 1 && trickle <= CLAIM_LIMIT)) throw new RangeError(`trickle must be 1..${CLAIM_LIMIT}, got ${trickle}`);
  const task = `${pg.escapeIdentifier(schema)}.task`;
  const effect = `${pg.escapeIdentifier(schema)}.effect`;
  const admin = new pg.Client({ connectionString: url, application_name: 'postpone-bench-prune-admin' });
  const explainClient = new pg.Client({ connectionString: url, application_name: CLAIM_APP });
  const sampler = new pg.Client({ connectionString: url, application_name: 'postpone-bench-prune-locks' });
  const claimStore = createPgStore({ connectionString: url, schema, poolConfig: { application_name: CLAIM_APP, max: 2 } });
  const pruneStore = createPgStore({ connectionString: url, schema, poolConfig: { application_name: PRUNE_APP, max: 1 } });
  await Promise.all([admin.connect(), explainClient.connect(), sampler.connect()]);
  try {
    await claimStore.migrate();
    const notDue = options.notDue ?? 1_000;
    await claimStore.scheduleMany(Array.from({ length: notDue }, (_, i) => ({ kind: 'bench_not_due', payload: { n: i }, delayMs: 3_600_000 })));
    const history = await insertPrunableHistory(admin, schema, options.finished);
    await vacuumAnalyze(admin, schema);
    const notDueDigest = async () =>
      (
        await admin.query<{ d: string }>(
          `select count(*)::text || ':' || coalesce(md5(string_agg(id::text || state || due_at::text || updated_at::text, ',' order by id)), '') as d
             from ${task} where kind = 'bench_not_due'`,
        )
      ).rows[0]?.d ?? '';
    const notDueBefore = await notDueDigest();

    const probe = async (): Promise<Sample> => {
      await claimStore.scheduleMany(Array.from({ length: trickle }, () => ({ kind: 'bench_due', payload: {}, delayMs: 0 })));
      const explain = await explainOnce(explainClient, schema);
      const t0 = performance.now();
      const tasks = await claimStore.claim({ owner: OWNER, limit: CLAIM_LIMIT, leaseMs: 60_000 });
      const ms = performance.now() - t0;
      if (tasks.length > 0) await claimStore.completeMany(tasks.map((t) => ({ id: t.id, attempt: t.attempt, owner: OWNER })));
      return { ms, claimed: tasks.length, explain };
    };
    const probeN = async (n: number, until: () => boolean = () => false): Promise<Sample[]> => {
      const out: Sample[] = [];
      for (let i = 0; i < n && !until(); i++) {
        out.push(await probe());
        await delay(options.pauseMs);
      }
      return out;
    };

    await probe(); // warm-up
    const before = await probeN(options.probes);

    let pruneDone = false;
    const pruneStart = performance.now();
    let pruneEnd = pruneStart;
    const pruning = pruneStore.prune({ olderThanMs: PRUNE_OLDER_THAN_MS, batchSize: options.batchSize }).finally(() => {
      pruneDone = true;
      pruneEnd = performance.now();
    });
    const locks = sampleLocks(sampler, () => pruneDone);
    const during = await probeN(options.maxDuringProbes, () => pruneDone);
    const pruned = await pruning;
    const lockResult = await locks;
    const after = await probeN(options.probes);

    const left = (
      await admin.query<{ tasks: number; effects: number; due: number }>(
        `select (select count(*) from ${task}_history where kind = 'bench_history')::int as tasks,
                (select count(*) from ${effect} where worker = 'bench-history')::int as effects,
                (select count(*) from ${task} where state = 'SCHEDULED' and due_at <= now())::int as due`,
      )
    ).rows[0];
    const pruneMs = pruneEnd - pruneStart;
    const slowClaimMs = options.slowClaimMs;
    return {
      finished: history.tasks,
      effects: history.effects,
      notDue,
      trickle,
      pauseMs: options.pauseMs,
      batchSize: options.batchSize,
      deleted: pruned.deleted,
      effectsDeleted: pruned.effectsDeleted,
      batches: pruned.batches,
      pruneMs,
      rowsPerSecond: pruneMs > 0 ? pruned.deleted / (pruneMs / 1000) : Number.NaN,
      phases: [summarize('before', before, slowClaimMs), summarize('during', during, slowClaimMs), summarize('after', after, slowClaimMs)],
      slowClaimMs,
      lockSamples: lockResult.samples,
      claimLockWaits: lockResult.claimWaits,
      pruneLocks: [...lockResult.pruneLocks].sort(),
      historyLeft: left?.tasks ?? Number.NaN,
      historyEffectsLeft: left?.effects ?? Number.NaN,
      notDueUntouched: (await notDueDigest()) === notDueBefore,
      dueLeft: left?.due ?? Number.NaN,
    };
  } finally {
    await Promise.allSettled([admin.end(), explainClient.end(), sampler.end(), claimStore.close(), pruneStore.close()]);
  }
}

function summarize(phase: PrunePhaseName, samples: readonly Sample[], slowClaimMs: number): PrunePhase {
  if (samples.length === 0) {
    const nan = Number.NaN;
    return { phase, claims: 0, claimed: 0, emptyClaims: 0, claimP50Ms: nan, claimP99Ms: nan, claimMaxMs: nan, slowClaims: 0, buffers: nan, buffersMax: nan, scanBuffers: nan, executionMs: nan };
  }
  const times = samples.map((s) => s.ms);
  const buffers = samples.map((s) => s.explain.buffers);
  return {
    phase,
    claims: samples.length,
    claimed: samples.reduce((n, s) => n + s.claimed, 0),
    emptyClaims: samples.filter((s) => s.claimed === 0).length,
    claimP50Ms: percentile(times, 50),
    claimP99Ms: percentile(times, 99),
    claimMaxMs: Math.max(...times),
    slowClaims: times.filter((ms) => ms > slowClaimMs).length,
    buffers: median(buffers),
    buffersMax: Math.max(...buffers),
    scanBuffers: median(samples.map((s) => s.explain.scanBuffers)),
    executionMs: median(samples.map((s) => s.explain.executionMs)),
  };
}

/** Reads `pg_locks` every few ms until `done()`: the prune backend's table locks and the claim side's waits. */
async function sampleLocks(client: pg.Client, done: () => boolean): Promise<{ samples: number; claimWaits: number; pruneLocks: Set<string> }> {
  const pruneLocks = new Set<string>();
  let samples = 0;
  let claimWaits = 0;
  const deadline = performance.now() + 30 * 60_000;
  while (!done() && performance.now() < deadline) {
    const { rows } = await client.query<{ app: string; locktype: string; mode: string; granted: boolean; rel: string | null }>(
      `select a.application_name as app, l.locktype, l.mode, l.granted, c.relname as rel
         from pg_locks l join pg_stat_activity a on a.pid = l.pid left join pg_class c on c.oid = l.relation
        where a.application_name in ($1, $2)`,
      [CLAIM_APP, PRUNE_APP],
    );
    samples++;
    for (const r of rows) {
      if (r.app === CLAIM_APP && !r.granted) claimWaits++;
      if (r.app === PRUNE_APP && r.locktype === 'relation' && r.rel !== null) pruneLocks.add(`${r.rel}: ${r.mode}`);
    }
    await delay(5);
  }
  return { samples, claimWaits, pruneLocks };
}

/** The invariants of a prune under load, true when all hold (reported by the test and the bench). */
export function pruneInvariantsHold(r: PruneUnderLoadResult): boolean {
  const during = r.phases.find((p) => p.phase === 'during');
  return (
    r.deleted === r.finished &&
    r.effectsDeleted === r.effects &&
    r.historyLeft === 0 &&
    r.historyEffectsLeft === 0 &&
    r.notDueUntouched &&
    r.dueLeft === 0 &&
    r.claimLockWaits === 0 &&
    r.pruneLocks.every((l) => CLAIM_COMPATIBLE_LOCKS.includes(l.split(': ')[1] ?? '')) &&
    (during?.claims ?? 0) > 0 &&
    r.phases.every((p) => p.emptyClaims === 0)
  );
}
