/**
 * Entry point of a ceiling process (forked by `ceiling.ts` with an IPC channel): one `pg` client,
 * Postpone's claim (`taskClaim`) and batched fenced completion (the move to history)
 * (`taskCompleteManyFenced`) as named prepared statements, in a tight loop until a claim comes back
 * empty. No handler, no lease renewal, no worker logic. Config in `POSTPONE_CEILING_CHILD` (JSON).
 */
import { statements } from '@postpone/postgres';
import pg from 'pg';
import type { CeilingChildConfig, CeilingChildMessage } from './protocol.js';

const send = (m: CeilingChildMessage) => process.send?.(m);

async function main(): Promise<void> {
  const config = JSON.parse(process.env.POSTPONE_CEILING_CHILD ?? '') as CeilingChildConfig;
  const sql = statements(config.schema);
  const client = new pg.Client({ connectionString: config.url, application_name: 'postpone-bench-ceiling' });
  client.on('error', () => {});
  await client.connect();
  const kinds = JSON.stringify([config.kind]);
  // The store's claim parameters: now (null: the server's), owner, lease ms, limit, queue, kinds.
  const claim = { name: 'ceiling_claim', text: sql.taskClaim };
  // DONE kept: the move to history (with the worker, no effect row since migration 13); not kept: the fenced delete alone ($1 the items).
  const complete = config.keepDone ? { name: 'ceiling_complete_many', text: sql.taskCompleteManyFenced } : { name: 'ceiling_complete_drop', text: sql.taskCompleteManyDrop };
  let stopped = false;
  process.on('disconnect', () => {
    stopped = true;
    void client.end().finally(() => process.exit(0));
  });
  process.on('message', (m: { type: string }) => {
    if (m.type !== 'go') return;
    void (async () => {
      const cpu0 = process.cpuUsage();
      let completed = 0;
      let statementsSent = 0;
      while (!stopped) {
        const claimed = await client.query<{ id: string; attempt: number }>({ ...claim, values: [null, config.owner, config.leaseMs, config.batch, 'default', kinds] });
        statementsSent++;
        if (claimed.rows.length === 0) break;
        const json = config.keepDone
          ? `[${claimed.rows.map((r) => `{"id":${JSON.stringify(String(r.id))},"attempt":${Number(r.attempt)},"owner":${JSON.stringify(config.owner)},"result":null}`).join(',')}]`
          : `[${claimed.rows.map((r) => `{"id":${JSON.stringify(String(r.id))},"attempt":${Number(r.attempt)},"keep":false}`).join(',')}]`;
        const done = await client.query({ ...complete, values: config.keepDone ? [null, json] : [json] });
        statementsSent++;
        if (done.rows.length !== claimed.rows.length) throw new Error(`completeMany completed ${done.rows.length} of ${claimed.rows.length} claimed tasks`);
        completed += done.rows.length;
      }
      const cpu = process.cpuUsage(cpu0);
      send({ type: 'done', completed, statements: statementsSent, cpuMs: (cpu.user + cpu.system) / 1000 });
    })().catch((error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
  });
  send({ type: 'ready' });
}

main().catch((error: unknown) => {
  send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
});
