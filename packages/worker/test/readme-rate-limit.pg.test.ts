/**
 * Runs the rate-limit examples of README.md ("### Rate limits") and docs/contract.md ("## Rate
 * limits") against PostgreSQL, each on a schema of its own: each ```ts block is written to a module
 * under `.cache/readme-run/` (git-ignored) with one change, its schema in `createPgStore({ … })`,
 * and imported; `@postpone/worker` and `@postpone/postgres/pg` are the built packages. The README's
 * 50 e-mails at 20 a second take at least 2 s and end DONE; the contract's claim takes 2 of 3 and is
 * told it was held back.
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
const schemas = [uniqueSchemaName('readme_rate'), uniqueSchemaName('contract_rate')];
const STORE_LINE = 'createPgStore({ connectionString: process.env.DATABASE_URL! })';

/** The first ```ts block after the line `heading` of `markdown`, inside its section. */
function blockAfter(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const at = lines.indexOf(heading);
  expect(at, heading).toBeGreaterThanOrEqual(0);
  const start = lines.findIndex((l, i) => i > at && l.trim() === '```ts');
  const end = lines.findIndex((l, i) => i > start && l.trim() === '```');
  expect(lines.slice(at + 1, start).some((l) => l.startsWith('#')), `the block after ${heading} is in its section`).toBe(false);
  return lines.slice(start + 1, end).join('\n');
}

async function runBlock(name: string, code: string, schema: string): Promise<void> {
  expect(code.split(STORE_LINE).length - 1, `${name}: one ${STORE_LINE}`).toBe(1);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `${name}.ts`);
  writeFileSync(file, `${code.replace(STORE_LINE, `createPgStore({ connectionString: process.env.DATABASE_URL!, schema: ${JSON.stringify(schema)} })`)}\nexport {};\n`);
  await import(pathToFileURL(file).href);
}

let url = '';
afterAll(async () => {
  vi.unstubAllEnvs();
  if (url !== '') for (const schema of schemas) await dropSchema(url, schema);
});

describe('rate-limit examples of README.md and docs/contract.md', () => {
  it('run against PostgreSQL: the README worker takes at least 2 s for 50 tasks at 20 a second; the contract claim takes 2 of 3 and is told it was held back', async () => {
    url = testDatabaseUrl();
    vi.stubEnv('DATABASE_URL', url);
    rmSync(join(outDir, 'rate-limit-readme.ts'), { force: true });
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      const started = performance.now();
      await runBlock('rate-limit-readme', blockAfter(readFileSync(join(repo, 'README.md'), 'utf8'), '### Rate limits'), schemas[0]!);
      const elapsed = performance.now() - started;
      const [[limits]] = log.mock.calls as [[{ name: string; limit: number; windowMs: number }[]]];
      expect(limits).toMatchObject([{ scope: 'kind', name: 'send-email', limit: 20, windowMs: 1_000 }]);
      expect(elapsed).toBeGreaterThanOrEqual(2_000);
      const store = createPgStore({ connectionString: url, schema: schemas[0]! });
      try {
        expect(await store.countByState()).toMatchObject({ SCHEDULED: 0, CLAIMED: 0, DONE: 50 });
      } finally {
        await store.close();
      }
      log.mockClear();
      await runBlock('rate-limit-contract', blockAfter(readFileSync(join(repo, 'docs', 'contract.md'), 'utf8'), '## Rate limits'), schemas[1]!);
      const [[held], [count]] = log.mock.calls as [[string], [number]];
      expect(held).toMatch(/^held back; the window reopens in \d+ ms$/);
      const inMs = Number(/(\d+) ms$/.exec(held)?.[1]);
      // From the claims' time (the transaction's start) plus the window, less the time since: just under 60 s.
      expect(inMs).toBeGreaterThan(50_000);
      expect(inMs).toBeLessThanOrEqual(60_000);
      expect(count).toBe(2);
    } finally {
      log.mockRestore();
    }
  }, 60_000);
});
