/**
 * The per-key backlog on PostgreSQL (docs/contract.md#key-backlog; the cases every store runs are
 * `keyBacklogCases` of `@postpone/conformance`):
 * - a schedule with a limit key is ONE statement (`taskInsertManyKeyed` writes `limit_key` in the
 *   insert), and one without sends `taskInsertMany` unchanged;
 * - `keyBacklog` over 100 000 keyed SCHEDULED tasks on 1 000 keys (beside 20 000 keyed tasks of
 *   another kind, 50 000 unkeyed ones and 100 CLAIMED) reads the partial index `task_limit_key_idx`
 *   (index-only, no heap fetch once vacuumed) and `task_claimed_idx`, never a sequential scan of
 *   `task`, and agrees with a plain aggregate. Prints the measured figure (`FIGURE key_backlog …`);
 * - the example of docs/contract.md#key-backlog runs as written (as ./bulk-example.test.ts runs its own).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { citusInsertSplit } from '../src/sql/citus-route.js';
import { citusStatement, keyBacklogStatements, statements } from '../src/sql/index.js';
import { Admin, migratedKit } from './support/kits.js';

const { admin, kit } = migratedKit('keybacklog');
const exampleSchema = Admin.create('keybacklog_example');
afterAll(() => exampleSchema.drop());

describe('keyBacklog on PostgreSQL', () => {
  it('a schedule with a limit key is one statement that writes limit_key; one without sends taskInsertMany unchanged', async () => {
    const store = kit.store({ schema: admin.schema });
    const sql = statements(admin.schema);
    const client = new pg.Client({ connectionString: admin.url });
    await client.connect();
    const sent: string[] = [];
    const query = client.query.bind(client);
    try {
      await client.query('begin');
      client.query = ((text: string, params?: unknown[]) => {
        sent.push(text);
        return query(text, params);
      }) as never;
      const keyed = await store.scheduleMany([{ kind: 'one', limitKey: 'tenant-a' }, { kind: 'one' }], { tx: client });
      const plain = await store.schedule({ kind: 'one' }, { tx: client });
      client.query = query;
      await client.query('commit');
      expect(sent).toEqual([sql.taskInsertManyKeyed, sql.taskInsertMany]);
      const rows = await admin.query<{ id: string; key: string | null }>(`select id::text, limit_key as key from ${admin.t('task')} where kind = 'one' order by id`);
      expect(rows).toEqual([
        { id: keyed[0]?.id, key: 'tenant-a' },
        { id: keyed[1]?.id, key: null },
        { id: plain.id, key: null },
      ]);
    } finally {
      client.query = query;
      await client.end();
    }
  });

  it('the Citus dialect: the keyed insert is routed as the unkeyed one (an id draw, then a top-level upsert writing limit_key); keyBacklog reads the coordinator clock as $1', () => {
    const sql = statements('postpone');
    expect(citusStatement(sql.taskInsertManyKeyed).run).toBeDefined();
    const split = citusInsertSplit(sql.taskInsertManyKeyed);
    if (split === undefined) throw new Error('taskInsertManyKeyed has no split');
    for (const text of [split.upsert.keep, split.upsert.replace]) {
      expect(text).toContain('priority smallint, "limitKey" text))');
      expect(text).toMatch(/\ninsert into "postpone"\.task as t \([^)]*, queue, priority, limit_key\)/);
      expect([text.includes('nextval'), text.includes('holders'), text.includes('$4')]).toEqual([false, false, false]);
    }
    const backlog = citusStatement(keyBacklogStatements('postpone').keyBacklog);
    expect(backlog.needsNow).toBe(true);
    expect(backlog.run).toBeUndefined();
    expect(backlog.text).not.toContain('now()');
    expect(backlog.text).toContain("floor(extract(epoch from ($1::timestamptz - timestamptz 'epoch')) * 1000)");
  });

  it('100 000 keyed tasks over 1 000 keys: the partial index only, no sequential scan of task; the figure', { timeout: 300_000 }, async () => {
    const store = kit.store({ schema: admin.schema });
    const task = admin.t('task');
    const insert = (kind: string, n: number, key: string, due: string) =>
      admin.query(
        `insert into ${task} (kind, payload, state, due_at, attempt, max_attempts, cancel_requested, created_at, updated_at, queue, priority, limit_key)
         select $1::text, 'null'::jsonb, 'SCHEDULED', ${due}, 0, 3, false, now(), now(), 'default', 0, ${key}
           from generate_series(1, $2::int) g`,
        [kind, n],
      );
    // 1 000 keys × 100 tasks; key k has (k % 100) + 1 due tasks, the rest due in an hour.
    await insert('tenant', 100_000, `'t' || lpad(((g - 1) % 1000)::text, 4, '0')`, `case when (g - 1) / 1000 <= (g - 1) % 100 then now() - make_interval(secs => (g % 600)) else now() + interval '1 hour' end`);
    await insert('other-keyed', 20_000, `'o' || (g % 50)::text`, 'now()');
    await insert('plain', 50_000, 'null', 'now()');
    const claimed = await store.claim({ owner: 'w', limit: 100, leaseMs: 600_000, kinds: ['tenant'] });
    expect(claimed).toHaveLength(100);
    const indexPages = async () =>
      Number((await admin.query<{ pages: number }>(`select relpages::int as pages from pg_class where oid = $1::regclass`, [`${admin.t('task_limit_key_idx')}`]))[0]?.pages);
    const heapPages = await admin.vacuumPages('task');
    const indexSize = await indexPages();
    const text = keyBacklogStatements(admin.schema).keyBacklog;
    const params = [null, 'tenant', null, null, 101];
    // Twice: the first run may read pages from disk; the second is the steady state.
    await admin.explainPlan(text, params);
    const { nodes, buffers, root } = await admin.explainPlan(text, params);
    const timing = await admin.query<{ 'QUERY PLAN': [{ 'Execution Time': number }] }>(`explain (analyze, format json) ${text}`, params);
    const executionMs = timing[0]?.['QUERY PLAN'][0]['Execution Time'] as number;
    expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'task')).toEqual([]);
    // The per-queue range of this kind: the index-only scan with kind in its index condition.
    const scan = nodes.find((n) => n['Index Name'] === 'task_limit_key_idx' && (n['Index Cond'] ?? '').includes('kind'));
    expect(scan?.['Node Type']).toBe('Index Only Scan');
    expect((scan as { 'Heap Fetches'?: number })['Heap Fetches']).toBe(0);
    expect(nodes.some((n) => n['Index Name'] === 'task_claimed_idx')).toBe(true);
    // The whole keyed part of the index at most, plus the CLAIMED rows' pages: never the table.
    expect(buffers).toBeLessThanOrEqual(indexSize + 200);
    expect(buffers).toBeLessThan(heapPages);
    console.log(
      `FIGURE key_backlog tasks=170100 keyed_tenant=100000 keys=1000 claimed=100 buffers=${buffers} index_pages=${indexSize} heap_pages=${heapPages} execution_ms=${executionMs.toFixed(1)} rows=${root['Actual Rows']}`,
    );

    // The answer agrees with a plain aggregate of the same rows.
    const page = await store.keyBacklog({ kind: 'tenant', limit: 1_000 });
    expect(page.entries).toHaveLength(1_000);
    expect(page.nextCursor).toBeNull();
    const reference = await admin.query<{ key: string; due: number; notdue: number; claimed: number }>(
      `select limit_key as key, count(*) filter (where state = 'SCHEDULED' and due_at <= now())::int as due,
              count(*) filter (where state = 'SCHEDULED' and due_at > now())::int as notdue, count(*) filter (where state = 'CLAIMED')::int as claimed
         from ${task} where kind = 'tenant' group by limit_key order by due desc, limit_key collate "C"`,
    );
    expect(page.entries.map((e) => ({ key: e.limitKey, due: e.due, notdue: e.notDue, claimed: e.claimed }))).toEqual(reference);
    expect(page.entries.reduce((n, e) => n + e.due + e.notDue + e.claimed, 0)).toBe(100_000);
    expect(page.entries.every((e) => (e.due === 0) === (e.oldestDueAt === null) && e.latenessMs >= 0)).toBe(true);
  });

  it('the example of docs/contract.md#key-backlog runs and prints what its comments say', async () => {
    const pkg = resolve(import.meta.dirname, '..');
    const contract = readFileSync(resolve(pkg, '..', '..', 'docs', 'contract.md'), 'utf8');
    const section = contract.slice(contract.indexOf('<a id="key-backlog"></a>'));
    const start = section.indexOf('```ts\n');
    const code = section.slice(start + 6, section.indexOf('\n```', start + 6));
    const wired = code.replace('createPgStore({ connectionString: process.env.DATABASE_URL! })', 'createPgStore({ connectionString: process.env.DATABASE_URL!, schema: process.env.EXAMPLE_SCHEMA })');
    expect(wired).not.toBe(code);
    const js = ts.transpileModule(wired, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    const dir = join(pkg, '.cache');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'key-backlog-example.mjs');
    writeFileSync(file, js);
    const out = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      execFile(process.execPath, [file], { cwd: pkg, env: { PATH: process.env.PATH ?? '', DATABASE_URL: exampleSchema.url, EXAMPLE_SCHEMA: exampleSchema.schema }, timeout: 60_000 }, (error, stdout, stderr) =>
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
      );
    });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^big 2 0 1 \d+\nsmall 0 1 0 0\nnull\n$/);
  }, 90_000);
});
