/**
 * The example of docs/contract.md#bulk-operations runs as written: its ```ts block is transpiled and
 * run by node against the test database (the one change: the store gets this test's schema), and it
 * prints what its comments say.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { Admin } from './support/kits.js';

const pkg = resolve(import.meta.dirname, '..');
const contract = readFileSync(resolve(pkg, '..', '..', 'docs', 'contract.md'), 'utf8');
const admin = Admin.create('bulk_example');

afterAll(async () => {
  await admin.drop();
});

/** The first ```ts block after the heading `## Bulk operations`. */
function example(): string {
  const section = contract.slice(contract.indexOf('\n## Bulk operations\n'));
  const start = section.indexOf('```ts\n');
  return section.slice(start + 6, section.indexOf('\n```', start + 6));
}

describe('docs/contract.md#bulk-operations', () => {
  it('the example runs and prints the counts its comments give', async () => {
    const code = example();
    const wired = code.replace('createPgStore({ connectionString: process.env.DATABASE_URL! })', 'createPgStore({ connectionString: process.env.DATABASE_URL!, schema: process.env.EXAMPLE_SCHEMA })');
    expect(wired).not.toBe(code);
    const js = ts.transpileModule(wired, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    const dir = join(pkg, '.cache');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'bulk-example.mjs');
    writeFileSync(file, js);
    const out = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      execFile(process.execPath, [file], { cwd: pkg, env: { PATH: process.env.PATH ?? '', DATABASE_URL: admin.url, EXAMPLE_SCHEMA: admin.schema }, timeout: 60_000 }, (error, stdout, stderr) =>
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
      );
    });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toBe("3\n{\n  CANCELLED: 3,\n  REQUESTED: 0,\n  TOO_LATE: 0,\n  ALREADY_CANCELLED: 0,\n  NOT_FOUND: 0\n}\n");
    const [row] = await admin.query<{ n: number }>(`select count(*)::int as n from ${admin.t('task_history')} where kind = 'send-newsletter' and state = 'CANCELLED'`);
    expect(row?.n).toBe(3);
  }, 90_000);
});
