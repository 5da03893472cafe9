/**
 * Entry point of a feature-cost process (forked by `./measure.ts` with an IPC channel): one `pg`
 * client runs the claim and the batched completion it is given as TEXT (the statements of the code
 * under test: this commit's `taskClaim` / `taskCompleteManyFenced`, or the pre-feature commit's) as
 * named prepared statements in a tight loop until a claim comes back empty — as the SQL-only
 * ceiling (`../ceiling/child.ts`), but with the statement texts handed in, so both schemas run the
 * same loop. Config in `POSTPONE_FEATURE_COST_CHILD` (JSON, {@link FeatureCostChildConfig}).
 */
import pg from 'pg';

export interface FeatureCostChildConfig {
  readonly url: string;
  /** `$1` now (null), `$2` owner, `$3` lease ms, `$4` limit, `$5` queue, `$6` kinds JSON. */
  readonly claimSql: string;
  /** `$1` now (null), `$2` items `[{id, attempt, owner, result}]` as JSON text. */
  readonly completeSql: string;
  readonly kind: string;
  readonly batch: number;
  readonly owner: string;
  readonly leaseMs: number;
}

export type FeatureCostChildMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'done'; readonly completed: number; readonly claims: number; readonly completes: number }
  | { readonly type: 'error'; readonly message: string };

const send = (m: FeatureCostChildMessage) => process.send?.(m);

async function main(): Promise<void> {
  const config = JSON.parse(process.env.POSTPONE_FEATURE_COST_CHILD ?? '') as FeatureCostChildConfig;
  const client = new pg.Client({ connectionString: config.url, application_name: 'postpone-bench-feature-cost' });
  client.on('error', () => {});
  await client.connect();
  const kinds = JSON.stringify([config.kind]);
  const claim = { name: 'fc_claim', text: config.claimSql };
  const complete = { name: 'fc_complete_many', text: config.completeSql };
  let stopped = false;
  process.on('disconnect', () => {
    stopped = true;
    void client.end().finally(() => process.exit(0));
  });
  process.on('message', (m: { type: string }) => {
    if (m.type !== 'go') return;
    void (async () => {
      let completed = 0;
      let claims = 0;
      let completes = 0;
      // Bounded: at most one claim per task plus one empty claim would drain any queue this bench fills.
      for (let i = 0; i < 1_000_000 && !stopped; i++) {
        const claimed = await client.query<{ id: string; attempt: number }>({ ...claim, values: [null, config.owner, config.leaseMs, config.batch, 'default', kinds] });
        claims++;
        if (claimed.rows.length === 0) break;
        const json = `[${claimed.rows.map((r) => `{"id":${JSON.stringify(String(r.id))},"attempt":${Number(r.attempt)},"owner":${JSON.stringify(config.owner)},"result":null}`).join(',')}]`;
        const done = await client.query({ ...complete, values: [null, json] });
        completes++;
        if (done.rows.length !== claimed.rows.length) throw new Error(`completeMany completed ${done.rows.length} of ${claimed.rows.length} claimed tasks`);
        completed += done.rows.length;
      }
      send({ type: 'done', completed, claims, completes });
    })().catch((error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
  });
  send({ type: 'ready' });
}

main().catch((error: unknown) => {
  send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
});
