/**
 * Runs the README's examples of "Queues, kinds and priorities" and "Per-kind concurrency caps" against
 * PostgreSQL, as a reader would one after the other in one database, and checks they end clean: no
 * task left CLAIMED (issue 27 item 10: their direct `claim({ owner: 'ops' })` never finished what it
 * took). Each ```ts block is written to a module under `.cache/readme-run/` (git-ignored) with one
 * change, a schema of its own in `createPgStore({ … })`, and imported; `@postpone/worker` and
 * `@postpone/postgres/pg` are the built packages.
 *
 * Seeded first, so the direct claims take something whoever wins the race with the workers: tasks
 * of `rebuild-report` in queue `reports` (more than its worker of concurrency 1 takes at once), and a
 * task of a kind no example handles in queue `default` (what the capped claim, of any kind, takes).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import { afterAll, describe, expect, it, vi } from 'vitest';

const repo = resolve(import.meta.dirname, '..', '..', '..');
const outDir = resolve(import.meta.dirname, '..', '.cache', 'readme-run');
const schema = uniqueSchemaName('readme_queues');
const STORE_LINE = 'createPgStore({ connectionString: process.env.DATABASE_URL! })';

/** The first ```ts block after the heading `### <title>` of README.md. */
function blockAfter(markdown: string, title: string): string {
  const lines = markdown.split('\n');
  const heading = lines.indexOf(`### ${title}`);
  expect(heading, `README heading ### ${title}`).toBeGreaterThanOrEqual(0);
  const start = lines.findIndex((l, i) => i > heading && l.trim() === '```ts');
  const end = lines.findIndex((l, i) => i > start && l.trim() === '```');
  expect(lines.slice(heading + 1, start).some((l) => l.startsWith('#')), `the block after ### ${title} is in its section`).toBe(false);
  return lines.slice(start + 1, end).join('\n');
}

/** Writes `code` (the store on this test's schema) as a module and runs it to its end. */
async function runBlock(name: string, code: string): Promise<void> {
  expect(code.split(STORE_LINE).length - 1, `${name}: one ${STORE_LINE}`).toBe(1);
  const file = join(outDir, `${name}.ts`);
  writeFileSync(file, `${code.replace(STORE_LINE, `createPgStore({ connectionString: process.env.DATABASE_URL!, schema: ${JSON.stringify(schema)} })`)}\nexport {};\n`);
  await import(pathToFileURL(file).href);
}

let url = '';

afterAll(async () => {
  vi.unstubAllEnvs();
  if (url !== '') await dropSchema(url, schema);
});

describe('README queue and kind-cap examples', () => {
  it('run against PostgreSQL one after the other and leave no task CLAIMED', async () => {
    url = testDatabaseUrl();
    vi.stubEnv('DATABASE_URL', url);
    const readme = readFileSync(join(repo, 'README.md'), 'utf8');
    rmSync(outDir, { recursive: true, force: true });
    mkdirSync(outDir, { recursive: true });
    const store = createPgStore({ connectionString: url, schema });
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      await store.migrate();
      await store.scheduleMany(Array.from({ length: 8 }, (_, i) => ({ kind: 'rebuild-report', payload: { month: `2026-0${i + 1}` }, queue: 'reports' })));
      const other = await store.schedule({ kind: 'resize-image', payload: { image: 7 } });

      await runBlock('queues', blockAfter(readme, 'Queues, kinds and priorities'));
      const afterQueues = await store.listTasks({ states: ['CLAIMED'], limit: 1000 });
      expect(afterQueues.tasks.map((t) => [t.id, t.kind, t.leaseOwner])).toEqual([]);

      await runBlock('kind-caps', blockAfter(readme, 'Per-kind concurrency caps'));
      const afterCaps = await store.listTasks({ states: ['CLAIMED'], limit: 1000 });
      expect(afterCaps.tasks.map((t) => [t.id, t.kind, t.leaseOwner])).toEqual([]);
      // The direct claims did take tasks (so finishing them is what the examples show).
      expect(log.mock.calls).toHaveLength(2);
      expect(log.mock.calls.map((c) => (c[0] as unknown[]).length).every((n) => n > 0)).toBe(true);
      expect((await store.getTask(other.id))?.attempt).toBeGreaterThan(0);
      expect((await store.stats()).claimed).toBe(0);
    } finally {
      log.mockRestore();
      await store.close();
    }
  }, 60_000);
});
