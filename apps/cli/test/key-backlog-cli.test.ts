/**
 * `postpone limits keys backlog --kind K` (docs/contract.md#key-backlog): the kind's per-key limit
 * beside its keys' due, not-yet-due and CLAIMED tasks and the oldest due task's wait, most due first;
 * pages with --top and --cursor; --json; control characters of a key shown escaped; bad usage exits 2.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellQuoted } from '../src/key-backlog.js';

const BIN = fileURLToPath(new URL('../bin/postpone.js', import.meta.url));
const schema = uniqueSchemaName('cli_keybacklog');
let url = '';

function postpone(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--schema', schema, ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  url = testDatabaseUrl();
  expect((await postpone(['migrate'])).code).toBe(0);
});
afterAll(async () => {
  await dropSchema(url, schema);
});

describe('postpone limits keys backlog', () => {
  it('prints the limit and the per-key table, pages with --top/--cursor, --json; escapes keys; bad usage exits 2', async () => {
    expect(await postpone(['limits', 'keys', 'backlog', '--kind', 'sync'])).toEqual({
      code: 0,
      stdout: 'kind sync: no per-key limit\nno task with a limit key is scheduled or claimed\n',
      stderr: '',
    });
    const store = createPgStore({ connectionString: url, schema });
    try {
      await store.setKeyConcurrency({ kind: 'sync', limit: 1 });
      await store.scheduleMany([1, 2, 3].map((i) => ({ kind: 'sync', limitKey: 'tenant-big', payload: { i } })));
      await store.scheduleMany([1, 2].map((i) => ({ kind: 'sync', limitKey: 'tenant-small', delayMs: 3_600_000, payload: { i } })));
      await store.schedule({ kind: 'sync', limitKey: 'evil\u001b[31m' });
      expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 60_000, kinds: ['sync'] })).toHaveLength(2); // one per due key
    } finally {
      await store.close();
    }
    const text = await postpone(['limits', 'keys', 'backlog', '--kind', 'sync']);
    expect(text.code).toBe(0);
    expect(text.stderr).toBe('');
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe('kind sync: at most 1 CLAIMED per limit key');
    expect(lines[1]).toMatch(/^LIMIT KEY +DUE +NOT DUE +CLAIMED +OLDEST DUE WAITING$/);
    expect(lines[2]).toMatch(/^tenant-big +2 +0 +1 of 1 +\d+ ms$/);
    expect(lines[3]).toMatch(/^evil\\u001b\[31m +0 +0 +1 of 1 +-$/);
    expect(lines[4]).toMatch(/^tenant-small +0 +2 +0 of 1 +-$/);
    expect(lines.slice(5)).toEqual(['']);

    const first = await postpone(['--json', 'limits', 'keys', 'backlog', '--kind', 'sync', '--top', '2']);
    expect(first.code).toBe(0);
    const page = JSON.parse(first.stdout) as { kind: string; limit: number; entries: { limitKey: string; due: number; notDue: number; claimed: number; latenessMs: number; oldestDueAt: string | null }[]; nextCursor: string };
    expect(page).toMatchObject({ kind: 'sync', limit: 1 });
    expect(page.entries.map((e) => [e.limitKey, e.due, e.notDue, e.claimed])).toEqual([
      ['tenant-big', 2, 0, 1],
      ['evil\u001b[31m', 0, 0, 1],
    ]);
    expect(page.entries[0]?.latenessMs).toBeGreaterThanOrEqual(0);
    expect(Number.isNaN(Date.parse(page.entries[0]?.oldestDueAt as string))).toBe(false);
    const more = await postpone(['limits', 'keys', 'backlog', '--kind', 'sync', '--top', '2']);
    // The cursor holds the last key shown (here one with an escape sequence): printed as one shell word
    // to paste, no control character raw.
    expect(page.nextCursor).toBe('kb1:0:evil\u001b[31m');
    expect(more.stdout).toContain("more keys: --cursor $'kb1:0:evil\\x1b[31m'");
    expect(more.stdout).not.toContain('\u001b');
    expect([shellQuoted('kb1:0:acme'), shellQuoted('kb1:0:acme corp'), shellQuoted("kb1:0:o'neil <b>;")]).toEqual(['kb1:0:acme', "'kb1:0:acme corp'", "'kb1:0:o'\\''neil <b>;'"]);
    const second = await postpone(['--json', 'limits', 'keys', 'backlog', '--kind', 'sync', '--top', '2', '--cursor', page.nextCursor]);
    expect(JSON.parse(second.stdout)).toMatchObject({ entries: [{ limitKey: 'tenant-small', due: 0, notDue: 2, claimed: 0 }], nextCursor: null });

    // The error names the option typed (--top), not the store's field (limit).
    expect(await postpone(['limits', 'keys', 'backlog', '--kind', 'sync', '--top', '0'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION: --top: must be an integer 1\.\.1000, got 0/) });
    expect(await postpone(['limits', 'keys', 'backlog', '--kind', 'sync', '--top', '5000'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION: --top: /) });
    expect(await postpone(['limits', 'keys', 'backlog', '--kind', 'sync', '--cursor', 'nope'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION: --cursor: is not a cursor of keyBacklog/) });
    expect((await postpone(['limits', 'keys', 'backlog'])).code).toBe(2);
  });
});
