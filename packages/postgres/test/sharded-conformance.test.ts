/**
 * The shared Store conformance suite (`@postpone/conformance`) against the sharded front
 * (`createShardedStore`, docs/sharding.md) over two groups: two Postpone schemas of the test server,
 * each store with the test's TestClock. Every case runs, on both drivers, except the ones listed in
 * {@link FRONT_DIFFERENCES}: each meets a difference of the front that docs/sharding.md documents
 * (the reason is printed with the skipped case); the batch cases are not registered (the front has no
 * batches). Drivers: see {@link FRONT_DRIVERS}.
 *
 * `emptyBackoffMs: 0`: the suite moves a TestClock between an empty claim and the claim that must
 * take a task; the front's empty-group skip runs on local monotonic time, so with it a case would
 * wait on the wall clock, not on the store clock. The skip itself is counted in `sharded.test.ts`.
 */
import { describeStoreConformance, type ConformanceHarness } from '@postpone/conformance';
import { TestClock } from '@postpone/core';
import { afterAll, beforeAll } from 'vitest';
import { createShardedStore, shardOfId, translateError } from '../src/index.js';
import { Admin, DRIVERS, type DriverName, makeKit } from './support/kits.js';

const groups = [Admin.create('shconf0'), Admin.create('shconf1')] as const;
const kits = Object.fromEntries(DRIVERS.map((d) => [d, makeKit(d)])) as Record<DriverName, ReturnType<typeof makeKit>>;
const marker = groups[0].t('conformance_marker');
/** The store's tables emptied after each case (as `Admin.truncate`). */
const TABLES = ['effect', 'task', 'task_history', 'cron_schedule', 'pause', 'dedup_throttle', 'rate_limit', 'key_limit', 'task_dependency', 'task_batch'];

/**
 * The cases the front does not pass as one store does, each with the documented difference it meets
 * (docs/sharding.md "Design" and "Differences from one store"). Keys are the cases' full names.
 */
const ORDER = 'claim order (priority desc, due time, id) holds within each group; one claim visits the groups in turn (docs/sharding.md, claims)';
const IDS = 'ids are ordered by group, then by creation within a group, not by creation across groups (docs/sharding.md, where a task lives)';
const CAPS = 'per-kind caps and per-key limits are exact per group: the deployment bound is N x the figure (docs/sharding.md, per-kind caps)';
const RATES = 'rate limits are exact per group, each with its own room, and listRateLimits shows group 0 (docs/sharding.md, rate limits)';
const COUNTS = "prune's batches are counted per group and added up (docs/sharding.md, admin reads)";
const UNCLAIMED = 'a (queue, kind) pair is unclaimed per group: one group CLAIMED, another not, lists it (docs/sharding.md, admin reads)';
const FAIL = "onConflict 'fail' in a batch spanning groups refuses the group holding the key; the other group's part is written (docs/sharding.md, scheduleMany)";
const DEPS = 'dependencies are kept per group: a task with after goes to the group of its first dependency (docs/sharding.md, dependencies)';

export const FRONT_DIFFERENCES: Readonly<Record<string, string>> = {
  'claim > claims one at a time in due order with limit 1': ORDER,
  'claim > with a single claimer, earlier-due tasks come first': ORDER,
  'queues, kinds and priorities > due tasks are claimed by priority desc, then due time, then id; a task not yet due waits whatever its priority': ORDER,
  'queues, kinds and priorities > one claim returns its batch in claim order, each task with its priority': ORDER,
  'per-key concurrency and fair share (setKeyConcurrency) > the claimed tasks come back in claim order (priority desc, due time, id); a higher priority level is taken first': ORDER,
  'per-key concurrency and fair share (setKeyConcurrency) > fair share: the claim rotates among the keys with due work, one per key per round, however many one key has': ORDER,
  'listTasks > filters by state, kind, due range and lastError; newest or oldest first': IDS,
  'listTasks > pages by keyset: every task once, in order, pages of `limit`, stable when newer tasks arrive': IDS,
  'live and history apart > retry() of a DEAD task makes a new live task with a new id; listTasks and stats read the finished ones': IDS,
  'per-kind concurrency caps (kindLimits) > one claim takes at most the cap of a capped kind, in claim order, and fills its limit with other kinds': CAPS,
  'per-kind concurrency caps (kindLimits) > the cap holds across claims and owners while tasks stay CLAIMED, and counts CLAIMED tasks of every queue': CAPS,
  'per-key concurrency and fair share (setKeyConcurrency) > at most `limit` CLAIMED per (kind, limitKey); the rest stays SCHEDULED with no attempt used; a finished task frees its key': CAPS,
  'per-key concurrency and fair share (setKeyConcurrency) > counts CLAIMED tasks of the key in every queue; kinds without a declaration ignore their limit keys': CAPS,
  'per-key concurrency and fair share (setKeyConcurrency) > with a kind cap too: the cap bounds the kind, the key limit each key, in fair order': CAPS,
  'per-key concurrency and fair share (setKeyConcurrency) > a changed limit applies to the next claim; a deleted declaration limits nothing; list is by kind': CAPS,
  "per-key concurrency and fair share (setKeyConcurrency) > one claim keeps a key's room across priority levels: a key with tasks at two priorities gives one claim at most `limit` of them": CAPS,
  'rate limits (setRateLimit) > a kind limit lets at most `limit` claims of the kind through per window; the rest stays SCHEDULED with no attempt used': RATES,
  'rate limits (setRateLimit) > the window slides: in every interval of windowMs at most `limit` claims, whatever the claims per call': RATES,
  'rate limits (setRateLimit) > a queue limit counts every kind of the queue and no other queue; a claim of any kind is held back when the queue is full': RATES,
  'rate limits (setRateLimit) > a claim that may take other kinds takes them and is not reported as held back; a rate limit and a kind cap apply together': RATES,
  'rate limits (setRateLimit) > a changed limit applies at the next claim; a deleted one no longer holds anything back': RATES,
  'pause and resume > a rate-limited claim leaves paused work out too: a paused kind or queue with a rate limit is not claimed and uses none of its room': RATES,
  'prune > deletes history finished before the cut-off with its completions, in batches; live and newer rows stay': COUNTS,
  'prune > takes a cut-off relative to the store clock; a retry survives its pruned original': COUNTS,
  'dedup key modes > prune deletes the throttle rows whose window reopened, and only those': COUNTS,
  'unclaimedKinds > reports the pairs due for at least dueForMs with none CLAIMED, longest waiting first, by the store clock': UNCLAIMED,
  'dedup keys > fail: DuplicateKeyError naming the holder; nothing written, the batch neither': FAIL,
  'dependencies > fan-in: released only when the last dependency finishes, at max(own due time, last finish)': DEPS,
  'dependencies > dependencies already terminal: due at once; a DEAD one on a cancel edge cancels the new task at schedule': DEPS,
  'dependencies > a held task keeps its own due time: cancelled while it waits (history), rescheduled while it waits (still held)': DEPS,
};

beforeAll(async () => {
  const front = createShardedStore({ stores: groups.map((a) => kits.pg.store({ schema: a.schema })) });
  await front.migrate();
  await front.close();
  await groups[0].query(`create table ${marker} (task_id bigint primary key)`);
});
afterAll(async () => {
  await Promise.all(DRIVERS.map((d) => kits[d].close()));
  for (const a of groups) await a.drop();
});

async function makeHarness(driver: DriverName): Promise<ConformanceHarness<any>> {
  const kit = kits[driver];
  const clock = new TestClock();
  // Migrated once, in beforeAll: the cleanup's truncate keeps each sequence (and so each group's id
  // range), and each store checks the schema on its first call.
  const store = createShardedStore({ stores: groups.map((a) => kit.store({ schema: a.schema, clock })), emptyBackoffMs: 0 });
  return {
    store,
    clock,
    async forceRow(id, patch) {
      const g = shardOfId(id);
      try {
        await kit.query(`update ${groups[g]!.t('task')} set state = $2::text, lease_owner = $3::text, lease_until = $4::timestamptz where id = $1::bigint`, [
          id,
          patch.state,
          patch.leaseOwner,
          patch.leaseUntil?.toISOString() ?? null,
        ]);
      } catch (error) {
        throw translateError(error);
      }
    },
    inTransaction: (fn, end) => kit.inTransaction(fn, end),
    async writeMarker(tx, taskId) {
      await kit.queryIn(tx, `insert into ${marker} (task_id) values ($1::bigint)`, [taskId]);
    },
    async readMarker(taskId) {
      return (await kit.query(`select 1 from ${marker} where task_id = $1::bigint`, [taskId])).length === 1;
    },
    async cleanup() {
      await store.close();
      // One statement for both groups (half the cost of a truncate per group), sequences kept.
      await groups[0].query(`truncate ${[...TABLES.map((t) => groups[0].t(t)), ...TABLES.map((t) => groups[1].t(t)), marker].join(', ')} cascade`);
    },
  };
}

/**
 * The front under `pnpm test`: the `pg` driver only. The front passes each call unchanged to one
 * group's `PostgresStore`, whose behaviour on both drivers the plain conformance run covers
 * (conformance.test.ts), and the front's own driver-facing paths (the caller's `tx`, ids past 2⁵³,
 * notices) are tested on both drivers in sharded.test.ts; the suite over the front costs about as much
 * as the plain one per driver. `POSTPONE_SHARDED_CONFORMANCE=all` runs it on postgres.js too.
 */
const FRONT_DRIVERS: readonly DriverName[] = process.env.POSTPONE_SHARDED_CONFORMANCE === 'all' ? DRIVERS : ['pg'];

for (const driver of FRONT_DRIVERS) describeStoreConformance(`sharded front, 2 groups (${driver})`, () => makeHarness(driver), {
    // Batches (docs/contract.md#batches) are not offered by the front: one batch's members and its
    // callback live under one row's lock in one group.
    // Per-key rate limits (docs/contract.md#per-key-rate-limits, merged after the front was wired):
    // not offered by the front yet (docs/sharding.md "Not done"); nor is the per-key backlog
    // (docs/contract.md#key-backlog: the front has no `keyBacklog`).
    without: ['batchCases', 'keyRateLimitCases', 'keyBacklogCases'],
    withoutCases: FRONT_DIFFERENCES,
  });
