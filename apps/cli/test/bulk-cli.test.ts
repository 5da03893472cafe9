/**
 * The bulk forms of `postpone cancel`, `retry`, `reschedule` and `delete` (docs/contract.md#bulk-operations),
 * the built binary as a child process against the real PostgreSQL: without `--yes` the count is
 * printed and, standard input not being a terminal, nothing is done (exit 1, CONFIRMATION_REQUIRED);
 * with `--yes` the counts per outcome; `--json`; an empty filter is bad usage (exit 2).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/postpone.js', import.meta.url));
const schema = uniqueSchemaName('cli_bulk');
let url = '';

function postpone(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, '--schema', schema, ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
    child.stdin?.end('');
  });
}

beforeAll(async () => {
  url = testDatabaseUrl();
  expect((await postpone(['migrate'])).code).toBe(0);
});

afterAll(async () => {
  await dropSchema(url, schema);
});

describe('postpone bulk commands', () => {
  it('prints --help of reschedule and delete, and the bulk options of cancel and retry', async () => {
    for (const command of ['cancel', 'retry', 'reschedule', 'delete']) {
      const r = await postpone([command, '--help']);
      expect(r.code, command).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: postpone ${command} \\[options\\] \\[ids\\.\\.\\.\\]`));
      for (const option of ['--kind', '--queue', '--state', '--key-prefix', '--due-before', '--all', '--batch-size', '--yes']) expect(r.stdout, `${command} ${option}`).toContain(option);
    }
  });

  it('cancel by kind: counts first, refuses without --yes off a terminal, then cancels with --yes', async () => {
    const store = createPgStore({ connectionString: url, schema });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await store.schedule({ kind: 'mail', delayMs: 60_000, key: `order-${i}` })).id);
      const other = (await store.schedule({ kind: 'sms', delayMs: 60_000 })).id;

      expect(await postpone(['cancel', '--kind', 'mail'])).toEqual({
        code: 1,
        stdout: 'would cancel 3 tasks (CANCELLED 3)\n',
        stderr: 'postpone: error CONFIRMATION_REQUIRED: would cancel 3 tasks; nothing done: pass --yes to cancel them (standard input is not a terminal, so the CLI cannot ask)\n',
      });
      expect((await store.getTask(ids[0] as string))?.state).toBe('SCHEDULED');

      const dry = await postpone(['--json', 'cancel', '--kind', 'mail', '--key-prefix', 'order-1']);
      expect(dry.code).toBe(1);
      expect(JSON.parse(dry.stdout)).toEqual({ operation: 'cancel', counts: { CANCELLED: 1, REQUESTED: 0, TOO_LATE: 0, ALREADY_CANCELLED: 0, NOT_FOUND: 0 }, batches: 1, dryRun: true });
      expect(JSON.parse(dry.stderr).error.code).toBe('CONFIRMATION_REQUIRED');

      expect(await postpone(['cancel', '--kind', 'mail', '--batch-size', '2', '--yes'])).toEqual({ code: 0, stdout: 'cancel: CANCELLED 3 in 2 batches\n', stderr: '' });
      for (const id of ids) expect((await store.getTask(id))?.state).toBe('CANCELLED');
      expect((await store.getTask(other))?.state).toBe('SCHEDULED');
      // Nothing left: the count is 0 and nothing is asked.
      expect(await postpone(['cancel', '--kind', 'mail'])).toEqual({ code: 0, stdout: 'would cancel 0 tasks (nothing)\n', stderr: '' });

      // Several ids: each gets the single cancel's outcome.
      const ok = await postpone(['--json', 'cancel', ids[0] as string, other, '999999', '--yes']);
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout).counts).toEqual({ CANCELLED: 1, REQUESTED: 0, TOO_LATE: 0, ALREADY_CANCELLED: 1, NOT_FOUND: 1 });

      // reschedule, retry and delete.
      const later = (await store.schedule({ kind: 'later', delayMs: 3_600_000 })).id;
      expect(await postpone(['reschedule', '--kind', 'later', '--delay', '0', '--yes'])).toMatchObject({ code: 0, stdout: 'reschedule: RESCHEDULED 1 in 1 batch\n' });
      expect((await store.getTask(later))?.dueAt.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
      expect(await postpone(['retry', '--kind', 'mail', '--state', 'CANCELLED', '--delay', '1h', '--yes'])).toMatchObject({ code: 0, stdout: 'retry: RETRIED 3 in 1 batch\n' });
      expect(await postpone(['delete', '--kind', 'mail', '--yes'])).toMatchObject({ code: 0, stdout: 'deleted: DELETED 3 in 1 batch\n' });
      expect(await store.getTask(ids[0] as string)).toBeNull();
    } finally {
      await store.close();
    }
  });

  it('an empty filter or a wrong state is bad usage (exit 2) and changes nothing', async () => {
    const r = await postpone(['cancel', '--yes']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^postpone: error INVALID_OPTION: no tasks selected: give ids or at least one of --kind, .* or --all to cancel every task in SCHEDULED\/CLAIMED\n$/);
    const s = await postpone(['delete', '--state', 'SCHEDULED', '--all', '--yes']);
    expect(s.code).toBe(2);
    expect(s.stderr).toMatch(/^postpone: error INVALID_OPTION: --state\[0\]: delete acts on DONE, CANCELLED, DEAD, got "SCHEDULED"\n$/);
    expect((await postpone(['reschedule', '--kind', 'x', '--yes'])).stderr).toMatch(/INVALID_DELAY: --delay: give exactly one of --run-at or --delay/);
  });
});
