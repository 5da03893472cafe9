/**
 * The built `postpone` binary as a child process against the real PostgreSQL of this test package:
 * every command, its output (text and --json), exit codes (0 ok, 1 failure, 2 bad usage) and the
 * typed error code on stderr.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { migrations } from '@postpone/postgres';
import { TestClock } from '@postpone/core';
import { createPgStore } from '@postpone/postgres/pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/postpone.js', import.meta.url));
const schema = uniqueSchemaName('cli');
let url = '';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function postpone(args: readonly string[], env: Record<string, string | undefined> = { DATABASE_URL: url }, stdin = ''): Promise<Run> {
  const childEnv: Record<string, string> = { PATH: process.env.PATH ?? '' };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, '--schema', schema, ...args], { env: childEnv, timeout: 30_000, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(stdin);
  });
}

async function json<T>(args: readonly string[]): Promise<T> {
  const r = await postpone(['--json', ...args]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

beforeAll(async () => {
  url = testDatabaseUrl();
  const versions = migrations(schema).map((m) => m.version);
  const latest = versions.at(-1);
  const r = await postpone(['migrate']);
  expect(r).toEqual({ code: 0, stdout: `schema ${schema}: applied ${versions.length} migrations (${versions.join(', ')}); now at version ${latest}\n`, stderr: '' });
  expect(await postpone(['migrate'])).toEqual({ code: 0, stdout: `schema ${schema} is up to date (version ${latest})\n`, stderr: '' });
  expect(await json(['migrate'])).toEqual({ schema, applied: [], version: latest });
});

afterAll(async () => {
  await dropSchema(url, schema);
});

/** Drives a fresh task of `kind` to DEAD through the store API (the CLI has no claim command). */
async function makeDead(kind: string, payload: unknown): Promise<string> {
  const store = createPgStore({ connectionString: url, schema });
  try {
    const { id } = await store.schedule({ kind, payload, maxAttempts: 1 });
    const [claimed] = await store.claim({ owner: 'test-worker', limit: 1, leaseMs: 10_000, kinds: [kind] });
    expect(claimed?.id).toBe(id);
    expect(await store.fail({ id, attempt: 1, error: 'smtp said 550', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
    return id;
  } finally {
    await store.close();
  }
}

describe('postpone', () => {
  it('prints --help for the program and every command, exit 0', async () => {
    for (const command of [[], ['migrate'], ['schedule'], ['cancel'], ['show'], ['list'], ['stats'], ['health'], ['retry'], ['prune'], ['limits'], ['limits', 'set'], ['limits', 'delete'], ['limits', 'keys'], ['limits', 'keys', 'set'], ['pause'], ['resume'], ['paused'], ['dashboard']]) {
      const r = await postpone([...command, '--help'], {});
      expect(r.code, command.join(' ')).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: postpone ${command[0] ?? ''}`));
    }
  });

  it('schedule, list, a DEAD task retried once, show, stats, cancel, prune', async () => {
    const later = await json<{ id: string; dueAt: string }>(['schedule', 'remind', '--delay', '2h', '--payload', '{"user":7}']);
    expect(Date.parse(later.dueAt)).toBeGreaterThan(Date.now() + 7_000_000);
    const dead = await makeDead('mail', { to: '<script>alert(1)</script>' });

    const listed = await json<{ tasks: { id: string; state: string }[]; nextCursor: string | null }>(['list']);
    expect(listed.tasks.map((t) => [t.id, t.state])).toEqual([
      [dead, 'DEAD'],
      [later.id, 'SCHEDULED'],
    ]);
    const table = await postpone(['list', '--state', 'dead']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(
      new RegExp(`^ID\\s+KIND\\s+QUEUE\\s+PRIORITY\\s+KEY\\s+STATE\\s+DUE\\s+ATTEMPT\\s+FAILURES\\s+RETRY\\s+LAST ERROR\\n${dead}\\s+mail\\s+default\\s+0\\s+-\\s+DEAD\\s+\\S+\\s+1\\s+1 of 1\\s+-\\s+smtp said 550\\n$`),
    );

    const retried = await postpone(['retry', dead]);
    expect(retried.code).toBe(0);
    const newId = /as task (\d+), due/.exec(retried.stdout)?.[1];
    expect(newId).toBeDefined();
    expect(await json(['retry', dead])).toEqual({ outcome: 'ALREADY_RETRIED', id: newId });

    const shown = await postpone(['show', dead]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^state\s+DEAD$/m);
    expect(shown.stdout).toMatch(new RegExp(`^retried as\\s+${newId}$`, 'm'));
    expect(shown.stdout).toContain('{"to":"<script>alert(1)</script>"}');
    const fresh = await json<{ task: { state: string; retryOf: string; payload: unknown; attempt: number }; completion: unknown }>(['show', newId as string]);
    expect(fresh).toMatchObject({ task: { state: 'SCHEDULED', retryOf: dead, payload: { to: '<script>alert(1)</script>' }, attempt: 0 }, completion: null });

    const stats = await json<{ scheduled: number; due: number; dead: number; byKind: unknown[]; oldestDueLatenessMs: number | null }>(['stats']);
    expect(stats).toMatchObject({ scheduled: 2, due: 1, claimed: 0, dead: 1 });
    expect(stats.byKind).toEqual([
      { kind: 'mail', scheduled: 1, due: 1, claimed: 0, dead: 1 },
      { kind: 'remind', scheduled: 1, due: 0, claimed: 0, dead: 0 },
    ]);
    expect(stats.oldestDueLatenessMs).toBeGreaterThanOrEqual(0);

    const health = await json<{ tables: { table: string; liveRows: number; deadRows: number }[]; oldestSnapshot: unknown }>(['health']);
    expect(health.tables.map((t) => t.table)).toEqual(['effect', 'task', 'task_history']);
    for (const t of health.tables) expect(t.deadRows).toBeGreaterThanOrEqual(0);
    // History: one entry summed over its partitions (each state's DEFAULT, _legacy and 8 days at least).
    expect((health.tables[2] as { partitions?: number }).partitions).toBeGreaterThanOrEqual(3 * 10);
    const healthText = await postpone(['health']);
    expect(healthText.code).toBe(0);
    expect(healthText.stdout).toMatch(/^TABLE\s+LIVE\s+DEAD\s+HOT\/UPDATES/m);
    expect(healthText.stdout).toMatch(/^task_history \(\d+ partitions\)\s+\d+\s+\d+\s+\d+\/\d+/m);
    expect(healthText.stdout).toMatch(/^oldest snapshot\s+\S/m);
    // Nothing pins the suite server's NOTIFY queue: its use is shown, below half, with no warning.
    expect(healthText.stdout).toMatch(/^notify queue\s+\d+\.\d % used$/m);
    expect((health as unknown as { notifyQueueUsage: number }).notifyQueueUsage).toBeLessThan(0.5);

    expect(await postpone(['cancel', later.id])).toEqual({ code: 0, stdout: `CANCELLED task ${later.id}\n`, stderr: '' });
    expect(await postpone(['cancel', later.id])).toEqual({ code: 0, stdout: `ALREADY_CANCELLED task ${later.id}\n`, stderr: '' });
    const notRetryable = await postpone(['retry', newId as string]);
    expect(notRetryable.code).toBe(1);
    expect(notRetryable.stderr).toBe(`postpone: error NOT_RETRYABLE: task ${newId} is SCHEDULED; only DEAD and CANCELLED tasks can be retried\n`);

    expect(await json(['prune', '--older-than', '0s'])).toEqual({ deleted: 2, effectsDeleted: 0, batches: 1 });
    expect((await json<{ tasks: { id: string }[] }>(['list'])).tasks.map((t) => t.id)).toEqual([newId]);
  });

  it('prune --retention drops the history partitions past each named state\'s retention, text and --json', async () => {
    // Three tasks finished three days ago (a store on a clock set back; they land in the `_legacy`
    // partitions, which end at the migration's UTC day), one DEAD task finished now.
    const clock = new TestClock(Date.now() - 3 * 86_400_000);
    const store = createPgStore({ connectionString: url, schema, clock });
    let old: { dead: string; done: string; cancelled: string };
    try {
      const dead = await store.schedule({ kind: 'ret', maxAttempts: 1 });
      const done = await store.schedule({ kind: 'ret' });
      const cancelled = await store.schedule({ kind: 'ret' });
      const claimed = await store.claim({ owner: 'w', limit: 2, leaseMs: 60_000, kinds: ['ret'] });
      expect(claimed.map((c) => c.id)).toEqual([dead.id, done.id]);
      expect(await store.fail({ id: dead.id, attempt: 1, error: 'gone', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
      expect(await store.complete({ id: done.id, attempt: 1, owner: 'w' })).toBe('DONE');
      expect(await store.cancel(cancelled.id)).toBe('CANCELLED');
      old = { dead: dead.id, done: done.id, cancelled: cancelled.id };
    } finally {
      await store.close();
    }
    const deadNow = await makeDead('ret-now', null);

    // DEAD kept 0 ms: its partitions that ended before now go (the legacy one); today's stays. DONE
    // kept 2 days: its legacy partition ends today, less than 2 days ago, so it stays. CANCELLED is not named.
    // One statement per dropped partition and per DEFAULT partition of a named state.
    expect(await json(['prune', '--retention', 'DEAD=0,DONE=2d'])).toEqual({ deleted: 1, effectsDeleted: 0, batches: 3, partitionsDropped: 1, partitionsCreated: 0, partitionsSkipped: [] });
    expect((await postpone(['show', old.dead])).code).toBe(1);
    expect((await json<{ task: { state: string } }>(['show', deadNow])).task.state).toBe('DEAD');
    expect((await json<{ task: { state: string }; completion: unknown }>(['show', old.done])).completion).not.toBeNull();

    // States in any case; the DONE row goes (no effect row since migration 13: none named).
    expect(await postpone(['prune', '--retention', 'done=0'])).toEqual({ code: 0, stdout: 'pruned 1 task in 2 batches, 1 partition dropped\n', stderr: '' });
    expect((await postpone(['show', old.done])).code).toBe(1);
    expect((await json<{ task: { state: string } }>(['show', old.cancelled])).task.state).toBe('CANCELLED');
    expect(await json(['prune', '--retention', 'DEAD=0,DONE=0'])).toEqual({ deleted: 0, effectsDeleted: 0, batches: 2, partitionsDropped: 0, partitionsCreated: 0, partitionsSkipped: [] });
  });

  it('pages with --limit and the printed cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await json<{ id: string }>(['schedule', 'page-test'])).id);
    const first = await postpone(['list', '--kind', 'page-test', '--oldest', '--limit', '2']);
    expect(first.code).toBe(0);
    const cursor = /^more: --cursor (\S+)$/m.exec(first.stdout)?.[1];
    expect(cursor).toBeDefined();
    const second = await json<{ tasks: { id: string }[]; nextCursor: string | null }>(['list', '--kind', 'page-test', '--oldest', '--limit', '2', '--cursor', cursor as string]);
    expect(second).toMatchObject({ tasks: [{ id: ids[2] }], nextCursor: null });
  });

  it('schedules into a queue, with a priority and a dedup key (keep, replace, fail)', async () => {
    const first = await json<{ id: string; created: boolean }>(['schedule', 'close-reservation', '--queue', 'billing', '--priority', '-5', '--key', 'r-42', '--delay', '30m']);
    expect(first.created).toBe(true);
    const shown = await json<{ task: { queue: string; priority: number; key: string } }>(['show', first.id]);
    expect(shown.task).toMatchObject({ queue: 'billing', priority: -5, key: 'r-42' });
    const kept = await postpone(['schedule', 'close-reservation', '--key', 'r-42']);
    expect(kept).toMatchObject({ code: 0, stdout: expect.stringMatching(new RegExp(`^task ${first.id} \\(close-reservation\\) already holds key r-42: kept, due `)) });
    const replaced = await json<{ id: string; created: boolean; replaced: boolean }>(['schedule', 'close-reservation', '--key', 'r-42', '--on-conflict', 'replace', '--payload', '{"n":2}']);
    expect(replaced).toMatchObject({ id: first.id, created: false, replaced: true });
    const failed = await postpone(['schedule', 'close-reservation', '--key', 'r-42', '--on-conflict', 'fail']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^postpone: error DUPLICATE_KEY: /);
    const badPriority = await postpone(['schedule', 'close-reservation', '--priority', 'high']);
    expect(badPriority.code).not.toBe(0);
    expect(badPriority.stderr).toMatch(/INVALID_PRIORITY/);
    expect(await postpone(['cancel', first.id])).toMatchObject({ code: 0, stdout: `CANCELLED task ${first.id}\n` });
  });

  it('schedules with the dedup modes debounce and throttle (--throttle); --throttle alone is refused', async () => {
    const first = await json<{ id: string; created: boolean }>(['schedule', 'flush-cart', '--key', 'c-1', '--delay', '5s', '--on-conflict', 'debounce']);
    expect(first.created).toBe(true);
    const pushed = await json<{ id: string; created: boolean; replaced: boolean }>(['schedule', 'flush-cart', '--key', 'c-1', '--delay', '10s', '--on-conflict', 'debounce']);
    expect(pushed).toMatchObject({ id: first.id, created: false, replaced: true });
    const made = await json<{ id: string; created: boolean }>(['schedule', 'digest', '--key', 'u-1', '--on-conflict', 'throttle', '--throttle', '1h']);
    expect(made.created).toBe(true);
    const throttled = await postpone(['schedule', 'digest', '--key', 'u-1', '--on-conflict', 'throttle', '--throttle', '1h']);
    expect(throttled).toMatchObject({ code: 0, stdout: `throttled: task ${made.id} (digest) was made with key u-1 less than 1h ago; nothing scheduled\n` });
    const alone = await postpone(['schedule', 'digest', '--key', 'u-1', '--throttle', '1h']);
    expect(alone.code).not.toBe(0);
    expect(alone.stderr).toMatch(/INVALID_OPTION: --throttle: /);
  });

  it('list and show say attempt (claims) apart from failures of the allowed, with queue, priority and key; list --queue (issue 27 item 6)', async () => {
    // Claimed three times, handed back twice, failed once: attempt 3, failures 1 of 2 (the old table said 3/2).
    const store = createPgStore({ connectionString: url, schema });
    let id: string;
    try {
      id = (await store.schedule({ kind: 'ledger-sync', queue: 'ledger', priority: 7, key: 'ledger-2030-01', maxAttempts: 2, payload: { month: '2030-01' } })).id;
      const claim = async () => {
        const [c] = await store.claim({ owner: 'ops', limit: 1, leaseMs: 60_000, queue: 'ledger' });
        expect(c?.id).toBe(id);
        return c!.attempt;
      };
      expect(await store.release({ id, attempt: await claim() })).toBe('SCHEDULED');
      expect(await store.fail({ id, attempt: await claim(), error: 'ledger locked', backoffMs: 0 })).toEqual({ outcome: 'SCHEDULED', dueAt: expect.any(Date) });
      expect(await store.release({ id, attempt: await claim() })).toBe('SCHEDULED');
    } finally {
      await store.close();
    }
    const other = await json<{ id: string }>(['schedule', 'ledger-sync', '--delay', '1h']); // queue 'default'

    const listed = await postpone(['list', '--queue', 'ledger']);
    expect(listed.code).toBe(0);
    const [header, row, ...rest] = listed.stdout.trimEnd().split('\n');
    expect(rest).toEqual([]);
    expect(header?.split(/\s{2,}/)).toEqual(['ID', 'KIND', 'QUEUE', 'PRIORITY', 'KEY', 'STATE', 'DUE', 'ATTEMPT', 'FAILURES', 'RETRY', 'LAST ERROR']);
    const cells = row?.split(/\s{2,}/);
    expect([...(cells ?? []).slice(0, 6), ...(cells ?? []).slice(7)]).toEqual([id, 'ledger-sync', 'ledger', '7', 'ledger-2030-01', 'SCHEDULED', '3', '1 of 2', '-', 'ledger locked']);
    expect(listed.stdout).not.toContain('3/2');
    expect((await json<{ tasks: { id: string }[] }>(['list', '--queue', 'ledger'])).tasks.map((t) => t.id)).toEqual([id]);
    expect((await json<{ tasks: { id: string }[] }>(['list', '--kind', 'ledger-sync', '--queue', 'default'])).tasks.map((t) => t.id)).toEqual([other.id]);
    expect(await postpone(['list', '--queue', 'no-such-queue'])).toEqual({ code: 0, stdout: 'no tasks\n', stderr: '' });

    const shown = await postpone(['show', id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^queue\s+ledger$/m);
    expect(shown.stdout).toMatch(/^priority\s+7$/m);
    expect(shown.stdout).toMatch(/^key\s+ledger-2030-01$/m);
    expect(shown.stdout).toMatch(/^attempts\s+attempt 3, failures 1 of 2 allowed$/m);
    expect(shown.stdout).not.toMatch(/3 of 2/);
    expect((await postpone(['show', other.id])).stdout).toMatch(/^key\s+-$/m);

    const bad = await postpone(['list', '--queue', '']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^postpone: error INVALID_QUEUE: --queue: /);
    expect(await postpone(['cancel', other.id])).toMatchObject({ code: 0 });
  });

  it('schedules a payload from a file or standard input, beyond the size one argument can carry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postpone-cli-'));
    try {
      const big = { note: 'x'.repeat(300_000) }; // Linux caps one argument at 128 KiB
      const file = join(dir, 'payload.json');
      writeFileSync(file, JSON.stringify(big));
      const scheduled = await json<{ id: string }>(['schedule', 'from-file', '--payload-file', file]);
      const shown = await json<{ task: { payload: unknown } }>(['show', scheduled.id]);
      expect(shown.task.payload).toEqual(big);
      const piped = await postpone(['--json', 'schedule', 'from-stdin', '--payload-file', '-'], { DATABASE_URL: url }, '{"seat":"12A"}');
      expect(piped.code).toBe(0);
      const fromStdin = await json<{ task: { payload: unknown } }>(['show', (JSON.parse(piped.stdout) as { id: string }).id]);
      expect(fromStdin.task.payload).toEqual({ seat: '12A' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an integer beyond ±(2^53 − 1) in the payload as typed, before JSON.parse rounds it: exit 2, UNSAFE_INTEGER, nothing scheduled', async () => {
    const kind = 'unsafe-integer';
    const dir = mkdtempSync(join(tmpdir(), 'postpone-cli-'));
    try {
      const file = join(dir, 'payload.json');
      writeFileSync(file, '{"note": "9007199254740993 in a string is fine", "lines": [{"qty": 1}, {"qty": -9.007199254740993e15}]}');
      const cases: [string[], string, RegExp][] = [
        [['schedule', kind, '--payload', '{"n": 9007199254740993}'], '', /^postpone: error UNSAFE_INTEGER: --payload: payload\.n: is the integer 9007199254740993, beyond ±9007199254740991 /],
        [['schedule', kind, '--payload', '{"order": {"id": 12345678901234567890}}'], '', /^postpone: error UNSAFE_INTEGER: --payload: payload\.order\.id: is the integer 12345678901234567890,/],
        [['schedule', kind, '--payload', '9007199254740992'], '', /^postpone: error UNSAFE_INTEGER: --payload: payload: is the integer 9007199254740992,/],
        [['schedule', kind, '--payload-file', file], '', /^postpone: error UNSAFE_INTEGER: --payload-file: payload\.lines\[1\]\.qty: is the integer -9\.007199254740993e15,/],
        [['schedule', kind, '--payload-file', '-'], '[1, 2e20]', /^postpone: error UNSAFE_INTEGER: --payload-file: payload\[1\]: is the integer 2e20,/],
      ];
      for (const [args, stdin, stderr] of cases) {
        const r = await postpone(args, { DATABASE_URL: url }, stdin);
        expect(r.code, args.join(' ')).toBe(2);
        expect(r.stdout, args.join(' ')).toBe('');
        expect(r.stderr, args.join(' ')).toMatch(stderr);
      }
      // The largest safe integers and a big number inside a string go through exactly.
      const ok = await json<{ id: string }>(['schedule', kind, '--payload', '{"max": 9007199254740991, "min": -9007199254740991, "id": "9007199254740993"}']);
      const shown = await json<{ task: { payload: unknown } }>(['show', ok.id]);
      expect(shown.task.payload).toEqual({ max: 9007199254740991, min: -9007199254740991, id: '9007199254740993' });
      const listed = await json<{ tasks: { id: string }[] }>(['list', '--kind', kind]);
      expect(listed.tasks.map((t) => t.id)).toEqual([ok.id]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a too-large payload from --payload-file is reported as --payload-file, not --payload (issue 27 item 10)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'postpone-cli-'));
    try {
      const file = join(dir, 'huge.json');
      writeFileSync(file, JSON.stringify('x'.repeat(1_048_576))); // 1 MiB + the quotes: over the default limit
      const text = await postpone(['schedule', 'too-big', '--payload-file', file]);
      expect(text.code).toBe(2);
      expect(text.stdout).toBe('');
      expect(text.stderr).toMatch(/^postpone: error PAYLOAD_TOO_LARGE: --payload-file: /);
      expect(text.stderr).not.toContain('--payload:');
      const piped = await postpone(['schedule', 'too-big', '--payload-file', '-'], { DATABASE_URL: url }, JSON.stringify({ note: 'x'.repeat(1_048_576) }));
      expect(piped.code).toBe(2);
      expect(piped.stderr).toMatch(/^postpone: error PAYLOAD_TOO_LARGE: --payload-file: /);
      // Given inline it is still --payload.
      const inline = await postpone(['schedule', 'bad', '--payload', '"a\\u0000b"']);
      expect(inline.code).toBe(2);
      expect(inline.stderr).toMatch(/^postpone: error INVALID_PAYLOAD: --payload: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with --json, errors are one line of JSON on stderr: {"error":{"code","message"}} (issue 27 item 10)', async () => {
    const cases: [string[], number, string, RegExp][] = [
      [['--json', 'list', '--bogus'], 2, 'USAGE', /^unknown option '--bogus'$/],
      [['--json', 'frobnicate'], 2, 'USAGE', /^unknown command 'frobnicate'$/],
      [['--json', 'schedule', 'k', '--delay', '5x'], 2, 'INVALID_OPTION', /^--delay: expected a duration/],
      [['--json', 'schedule', 'k', '--run-at', '2999-01-01T00:00:00Z'], 2, 'INVALID_RUN_AT', /^--run-at: must be at most 3155760000000 ms \(100 years\) after now/],
      [['--json', 'show', '999999'], 1, 'NOT_FOUND', /^no task 999999$/],
      [['--json', '--schema', 'never_migrated_here', 'stats'], 1, 'STORE_ERROR', /: the schema is not migrated; run: postpone --schema never_migrated_here migrate$/],
    ];
    for (const [args, code, errorCode, message] of cases) {
      const r = await postpone(args);
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.stderr.endsWith('\n'), args.join(' ')).toBe(true);
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
      const parsed = JSON.parse(r.stderr) as { error: { code: string; message: string } };
      expect(Object.keys(parsed), args.join(' ')).toEqual(['error']);
      expect(Object.keys(parsed.error)).toEqual(['code', 'message']);
      expect(parsed.error.code, args.join(' ')).toBe(errorCode);
      expect(parsed.error.message, args.join(' ')).toMatch(message);
    }
    const noDatabase = await postpone(['--json', 'stats'], {});
    expect(noDatabase).toEqual({
      code: 2,
      stdout: '',
      stderr: `${JSON.stringify({ error: { code: 'INVALID_OPTION', message: 'no database: set DATABASE_URL or pass --database-url (to try Postpone, `pnpm db` in a checkout starts one and prints its URL)' } })}\n`,
    });
    // Without --json, the text line as before.
    expect((await postpone(['show', '999999'])).stderr).toBe('postpone: error NOT_FOUND: no task 999999\n');
  });

  // About 40 CLI processes one after another: each a Node.js start, seconds apiece on a loaded 2-core machine (it timed out at 60 s beside two busy processes).
  it('bad usage exits 2 with the typed error code on stderr; failures exit 1', { timeout: 300_000 }, async () => {
    const cases: [string[], number, RegExp][] = [
      [['list', '--bogus'], 2, /^postpone: error USAGE: unknown option '--bogus'/],
      [['frobnicate'], 2, /^postpone: error USAGE: unknown command 'frobnicate'/],
      // commander's own messages quote the input too: escaped, never raw (found in review).
      [['sch\u001b[2Jedule'], 2, /^postpone: error USAGE: unknown command 'sch\\u001b\[2Jedule'\n/],
      [['schedule', 'k', '--delay', '--', '-5'], 2, /^postpone: error USAGE: too many arguments for 'schedule'/],
      [['schedule', 'k', '--payload-file', '/nonexistent/payload.json'], 2, /^postpone: error INVALID_OPTION: --payload-file: cannot read "\/nonexistent\/payload.json" \(ENOENT\)/],
      [['schedule', 'k', '--run-at', '2030-01-01T00:00:00Z', '--delay', '1s'], 2, /^postpone: error INVALID_DELAY: --delay: give --delay or --run-at, not both\n/],
      [['schedule', 'k', '--payload', '1', '--payload-file', '-'], 2, /^postpone: error INVALID_OPTION: give one of --payload and --payload-file/],
      [['stats', '--database-url', 'not a url'], 2, /^postpone: error INVALID_OPTION: --database-url \/ DATABASE_URL: not a URL/],
      [['stats', '--database-url', 'mysql://me:secret@127.0.0.1/db'], 2, /^postpone: error INVALID_OPTION: .*expected a postgres:\/\/ or postgresql:\/\/ URL, got mysql:\/\/…\n$/],
      [['schedule', 'k', '--delay', '5x'], 2, /^postpone: error INVALID_OPTION: --delay: expected a duration/],
      [['schedule', 'k', '--max-attempts', '0'], 2, /^postpone: error INVALID_MAX_ATTEMPTS: --max-attempts: /],
      // Not ISO 8601: `new Date` read "5" as May 2001 (due at once) and rolled 2030-02-30 over to March 2nd (found by a user).
      // A payload key with control characters is quoted in the message: shown escaped, never raw (found by a user).
      [['schedule', 'k', '--payload', '{"\\u001b[31mK\\u0000":9007199254740993}'], 2, /^postpone: error UNSAFE_INTEGER: --payload: payload\.\\u001b\[31mK\\u0000: is the integer 9007199254740993, [^\u0000-\u001f]*\n$/],
      [['schedule', 'k', '--run-at', '5'], 2, /^postpone: error INVALID_RUN_AT: --run-at: expected an ISO 8601 time with its offset, .*, got "5"\n$/],
      [['list', '--due-before', '2030-02-30'], 2, /^postpone: error INVALID_RUN_AT: --due-before: expected an ISO 8601 time .*: no such date or time, got "2030-02-30"\n$/],
      [['schedule', 'k', '--payload', '{'], 2, /^postpone: error INVALID_PAYLOAD: --payload: not JSON/],
      [['schedule', '', '--payload', '1'], 2, /^postpone: error INVALID_KIND: kind: must not be empty/],
      [['list', '--state', 'RUNNING'], 2, /^postpone: error INVALID_OPTION: --state\[0\]: must be one of/],
      [['list', '--limit', '5000'], 2, /^postpone: error INVALID_OPTION: --limit: must be an integer 1\.\.1000/],
      [['list', '--cursor', 'nope'], 2, /^postpone: error INVALID_OPTION: --cursor: /],
      [['show', 'abc'], 2, /^postpone: error INVALID_TASK_ID: id: /],
      [['prune'], 2, /^postpone: error INVALID_OPTION: give exactly one of --older-than, --before and --retention\n/],
      [['prune', '--retention', 'DONE=1d', '--older-than', '1d'], 2, /^postpone: error INVALID_OPTION: give --retention alone: it replaces the cut-off of --older-than and --before\n/],
      [['prune', '--retention', 'DEAD=7d', '--before', '2030-01-01T00:00:00Z'], 2, /^postpone: error INVALID_OPTION: give --retention alone/],
      [['prune', '--retention', 'DONE=1d,RUNNING=2d'], 2, /^postpone: error INVALID_OPTION: --retention: unknown state "RUNNING"; expected DONE, DEAD, CANCELLED\n/],
      [['prune', '--retention', 'DONE=soon'], 2, /^postpone: error INVALID_OPTION: --retention DONE: expected a duration such as 30s, 15m, 2h or 7d, got "soon"\n/],
      // A bare number would be milliseconds: "7" meant as 7 days pruned nearly all history (found by a user).
      [['prune', '--older-than', '7'], 2, /^postpone: error INVALID_OPTION: --older-than: give a unit \(ms, s, m, h or d\), such as 7d; a bare number would be milliseconds, got "7"\n/],
      [['prune', '--retention', 'DONE=7'], 2, /^postpone: error INVALID_OPTION: --retention DONE: give a unit \(ms, s, m, h or d\), such as 7d; a bare number would be milliseconds, got "7"\n/],
      [['prune', '--retention', 'DONE'], 2, /^postpone: error INVALID_OPTION: --retention: expected STATE=duration/],
      [['prune', '--retention', ''], 2, /^postpone: error INVALID_OPTION: --retention: expected STATE=duration/],
      [['prune', '--retention', 'DONE=1d,done=2d'], 2, /^postpone: error INVALID_OPTION: --retention: DONE given twice\n/],
      [['show', '999999'], 1, /^postpone: error NOT_FOUND: no task 999999\n$/],
      [['cancel', '999999'], 1, /^postpone: error NOT_FOUND: no task 999999\n$/],
      [['retry', '999999'], 1, /^postpone: error NOT_FOUND: no task 999999\n$/],
    ];
    for (const [args, code, stderr] of cases) {
      const r = await postpone(args);
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.stderr, args.join(' ')).toMatch(stderr);
    }
    const noDatabase = await postpone(['stats'], {});
    expect(noDatabase).toEqual({
      code: 2,
      stdout: '',
      stderr: 'postpone: error INVALID_OPTION: no database: set DATABASE_URL or pass --database-url (to try Postpone, `pnpm db` in a checkout starts one and prints its URL)\n',
    });
    // A schema that does not exist at all (3F000 where a missing table is 42P01) gets the same hint (found by a user).
    const noSchema = await postpone(['--schema', 'never_migrated_here', 'prune', '--retention', 'DONE=1d']);
    expect(noSchema.code).toBe(1);
    expect(noSchema.stderr).toMatch(/^postpone: error STORE_ERROR: .*(42P01|3F000).*: the schema is not migrated; run: postpone --schema never_migrated_here migrate\n$/);
    const version = await postpone(['--version'], {});
    expect(version).toEqual({ code: 0, stdout: `${(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version}\n`, stderr: '' });
    const notMigrated = await postpone(['--schema', 'never_migrated_here', 'stats']);
    expect(notMigrated.code).toBe(1);
    expect(notMigrated.stderr).toMatch(/^postpone: error STORE_ERROR: .*42P01.*: the schema is not migrated; run: postpone --schema never_migrated_here migrate\n$/);
    // health reads statistics views, which simply list nothing for a missing schema: it must still say so (found by a user: exit 0).
    const health = await postpone(['--schema', 'never_migrated_here', 'health']);
    expect(health.code).toBe(1);
    expect(health.stderr).toMatch(/^postpone: error STORE_ERROR: .*42P01.*: the schema is not migrated; run: postpone --schema never_migrated_here migrate\n$/);
    // The dashboard checks the schema before it listens: nothing served, the same hint.
    const dashboard = await postpone(['--schema', 'never_migrated_here', 'dashboard', '--port', '0']);
    expect(dashboard.code).toBe(1);
    expect(dashboard.stdout).toBe('');
    expect(dashboard.stderr).toMatch(/: the schema is not migrated; run: postpone --schema never_migrated_here migrate\n$/);
    const unreachable = await postpone(['stats', '--database-url', 'postgres://nobody:x@127.0.0.1:1/none'], {});
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^postpone: error CONNECTION_FAILED: .*refused/i);
  });

  it('a reader that closes the pipe early (postpone list | head) ends the CLI quietly, exit 0 (found by a user: EPIPE stack trace)', async () => {
    const store = createPgStore({ connectionString: url, schema });
    try {
      await store.scheduleMany(Array.from({ length: 1_000 }, (_, i) => ({ kind: 'epipe', payload: { i, text: 'x'.repeat(100) }, delayMs: 3_600_000 })));
    } finally {
      await store.close();
    }
    const r = await new Promise<{ code: number | null; stderr: string; got: number }>((resolve) => {
      const child = spawn(process.execPath, [BIN, '--schema', schema, '--json', 'list', '--kind', 'epipe', '--limit', '1000'], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let got = 0;
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      // Like `head -c 1`: take the first chunk, then close the read end while the CLI still writes (its output is > 100 kB).
      child.stdout.once('data', (chunk: Buffer) => {
        got = chunk.length;
        child.stdout.destroy();
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr, got });
      });
    });
    expect(r.got).toBeGreaterThan(0);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});

describe('postpone stats / health: kinds due with nobody claiming', () => {
  const own = uniqueSchemaName('cli_unclaimed');
  afterAll(async () => {
    await dropSchema(url, own);
  });

  it('lists the kinds whose oldest task has been due --unclaimed-after (default 1m) with none CLAIMED; --json includes them', async () => {
    const runAt = new Date(Date.now() - 120_000);
    const store = createPgStore({ connectionString: url, schema: own });
    try {
      await store.migrate();
      for (let i = 0; i < 3; i++) await store.schedule({ kind: 'close-reservaton', runAt });
      // busy: as old, but one of its tasks is CLAIMED (someone claims busy); fresh: due, not for a minute yet.
      await store.schedule({ kind: 'busy', runAt });
      await store.schedule({ kind: 'busy', runAt });
      expect(await store.claim({ owner: 'w', limit: 1, leaseMs: 600_000, kinds: ['busy'] })).toHaveLength(1);
      await store.schedule({ kind: 'fresh' });
    } finally {
      await store.close();
    }
    const run = (args: readonly string[]) => postpone(['--schema', own, ...args]);

    const text = await run(['stats']);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(
      /\n\nkinds due with nobody claiming \(due 60000 ms or more, none CLAIMED\):\nQUEUE\s+KIND\s+DUE\s+OLDEST DUE\s+WAITING\ndefault\s+close-reservaton\s+3\s+\S+Z\s+\d+ ms\n$/,
    );
    const stats = JSON.parse((await run(['--json', 'stats'])).stdout) as { byKind: unknown[]; unclaimed: { dueForMs: number; kinds: { overdueMs: number }[] } };
    expect(stats.byKind).toHaveLength(3);
    expect(stats.unclaimed).toEqual({
      now: expect.any(String),
      dueForMs: 60_000,
      kinds: [{ queue: 'default', kind: 'close-reservaton', due: 3, oldestDueAt: runAt.toISOString(), overdueMs: expect.any(Number) }],
    });
    expect(stats.unclaimed.kinds[0]!.overdueMs).toBeGreaterThanOrEqual(120_000);
    expect((await run(['stats', '--unclaimed-after', '1h'])).stdout).toMatch(/\n\nkinds due with nobody claiming \(due 3600000 ms or more, none CLAIMED\): none\n$/);

    const health = await run(['health']);
    expect(health).toMatchObject({ code: 0, stderr: '' });
    expect(health.stdout).toMatch(/^oldest snapshot\s+\S.*\nnotify queue\s+\d+\.\d % used\nunclaimed kinds\s+1: default\/close-reservaton \(3 due, \d+ ms\)\n$/m);
    const healthJson = JSON.parse((await run(['--json', 'health', '--unclaimed-after', '0'])).stdout) as { tables: unknown[]; unclaimed: { kinds: { kind: string }[] } };
    expect(healthJson.tables).toHaveLength(3);
    expect(healthJson.unclaimed.kinds.map((k) => k.kind)).toEqual(['close-reservaton', 'fresh']);
    expect((await run(['health', '--unclaimed-after', '2h'])).stdout).toMatch(/\nunclaimed kinds\s+none due 7200000 ms or more without a claim\n$/);

    expect(await run(['stats', '--unclaimed-after', 'soon'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/^postpone: error INVALID_OPTION: --unclaimed-after: expected a duration/) });
    // Past the 100-year cap the store's refusal names the flag, not its own field (found by a new user).
    expect(await run(['stats', '--unclaimed-after', '99999999999d'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/^postpone: error INVALID_OPTION: --unclaimed-after: must be/) });
  });
});

describe('postpone pause / resume / paused (docs/contract.md#pause-and-resume)', () => {
  const own = uniqueSchemaName('cli_pause');
  afterAll(async () => {
    await dropSchema(url, own);
  });

  it('pauses and resumes a queue and a kind (idempotent, --json), lists them, marks them in stats; a paused task is not claimed', async () => {
    const run = (args: readonly string[]) => postpone(['--schema', own, ...args]);
    expect((await run(['migrate'])).code).toBe(0);
    expect(await run(['pause', '--queue', 'mail', '--reason', 'provider down', '--by', 'ops'])).toEqual({ code: 0, stdout: 'paused queue mail\n', stderr: '' });
    expect(await run(['pause', '--queue', 'mail'])).toEqual({ code: 0, stdout: 'queue mail was already paused\n', stderr: '' });
    expect(JSON.parse((await run(['--json', 'pause', '--kind', 'send-sms'])).stdout)).toEqual({ scope: 'kind', name: 'send-sms', paused: true, changed: true });
    expect((await run(['schedule', 'send-sms'])).code).toBe(0);

    const listed = await run(['paused']);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(listed.stdout).toMatch(/^paused \(no new claims; running tasks finish\):\nSCOPE\s+NAME\s+SINCE\s+BY\s+REASON\nqueue\s+mail\s+\S+Z\s+ops\s+provider down\nkind\s+send-sms\s+\S+Z\s*\n$/);
    const json = JSON.parse((await run(['--json', 'paused'])).stdout) as { paused: { scope: string; name: string; pausedBy: string | null; reason: string | null }[] };
    expect(json.paused.map((p) => [p.scope, p.name, p.pausedBy, p.reason])).toEqual([
      ['queue', 'mail', 'ops', 'provider down'],
      ['kind', 'send-sms', null, null],
    ]);

    const stats = await run(['stats']);
    expect(stats.stdout).toMatch(/\nsend-sms \(paused\)\s+1\s+1\s+0\s+0\n/);
    expect(stats.stdout).toMatch(/\n\npaused \(no new claims; running tasks finish\):\n/);
    const statsJson = JSON.parse((await run(['--json', 'stats'])).stdout) as { paused: { name: string }[] };
    expect(statsJson.paused.map((p) => p.name)).toEqual(['mail', 'send-sms']);
    const store = createPgStore({ connectionString: url, schema: own });
    try {
      expect(await store.claim({ owner: 'w', limit: 5, leaseMs: 10_000 })).toEqual([]);
      expect(await run(['resume', '--kind', 'send-sms'])).toEqual({ code: 0, stdout: 'resumed kind send-sms\n', stderr: '' });
      expect(await store.claim({ owner: 'w', limit: 5, leaseMs: 10_000 })).toHaveLength(1);
    } finally {
      await store.close();
    }
    expect(JSON.parse((await run(['--json', 'resume', '--kind', 'send-sms'])).stdout)).toEqual({ scope: 'kind', name: 'send-sms', paused: false, changed: false });
    expect(await run(['resume', '--queue', 'mail'])).toEqual({ code: 0, stdout: 'resumed queue mail\n', stderr: '' });
    expect(await run(['paused'])).toEqual({ code: 0, stdout: 'paused: none\n', stderr: '' });
  });

  it('bad usage is exit 2 with the typed code, naming the option; nothing is paused', async () => {
    const run = (args: readonly string[]) => postpone(['--schema', own, ...args]);
    expect(await run(['pause'])).toMatchObject({ code: 2, stderr: 'postpone: error INVALID_OPTION: give exactly one of --queue and --kind\n' });
    expect(await run(['pause', '--queue', 'q', '--kind', 'k'])).toMatchObject({ code: 2, stderr: 'postpone: error INVALID_OPTION: give exactly one of --queue and --kind\n' });
    expect(await run(['resume', '--queue', ' '])).toMatchObject({ code: 2, stderr: expect.stringMatching(/^postpone: error INVALID_QUEUE: --queue: must be a string/) });
    expect(await run(['pause', '--kind', 'k', '--reason', 'x'.repeat(501)])).toMatchObject({ code: 2, stderr: expect.stringMatching(/^postpone: error INVALID_OPTION: --reason: must be a string of 1\.\.500 characters/) });
    expect(await run(['--json', 'paused'])).toEqual({ code: 0, stdout: `${JSON.stringify({ paused: [] }, null, 2)}\n`, stderr: '' });
  });
});

describe('postpone limits: rate limits (docs/contract.md#rate-limits)', () => {
  it('sets, lists (with the use now) and deletes the rate limit of a kind and of a queue; bad usage exits 2, a missing limit 1', async () => {
    expect(await postpone(['limits'])).toEqual({ code: 0, stdout: 'no rate limits\n', stderr: '' });
    const set = await postpone(['limits', 'set', '--kind', 'send-email', '--limit', '20', '--window', '1s']);
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(/^SCOPE +NAME +LIMIT +WINDOW MS +USED NOW +REOPENS AT\nkind +send-email +20 +1000 +0 +open\n$/);
    expect(await json(['limits', 'set', '--queue', 'mail', '--limit', '2', '--window', '1m'])).toMatchObject({ scope: 'queue', name: 'mail', limit: 2, windowMs: 60_000, used: 0 });
    // Two claims of the queue fill its window: the row shows 2 used and when it reopens.
    const store = createPgStore({ connectionString: url, schema });
    try {
      await store.scheduleMany([{ kind: 'a', queue: 'mail' }, { kind: 'a', queue: 'mail' }, { kind: 'a', queue: 'mail' }]);
      expect(await store.claim({ owner: 'w', limit: 5, leaseMs: 60_000, queue: 'mail' })).toHaveLength(2);
    } finally {
      await store.close();
    }
    const listed = await json<{ scope: string; name: string; used: number; reopensAt: string }[]>(['limits']);
    expect(listed.map((l) => [l.scope, l.name, l.used])).toEqual([
      ['kind', 'send-email', 0],
      ['queue', 'mail', 2],
    ]);
    expect(Date.parse(listed[1]!.reopensAt)).toBeGreaterThan(Date.now() + 50_000);
    expect((await postpone(['limits'])).stdout).toMatch(/\nqueue +mail +2 +60000 +2 +\d{4}-\d\d-\d\dT/);
    expect(await postpone(['limits', 'delete', '--queue', 'mail'])).toEqual({ code: 0, stdout: 'rate limit of queue mail deleted\n', stderr: '' });
    expect(await postpone(['limits', 'delete', '--queue', 'mail'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^postpone: error NOT_FOUND: no rate limit of queue mail/) });
    expect(await postpone(['limits', 'set', '--kind', 'k', '--queue', 'q', '--limit', '1', '--window', '1s'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION: give exactly one of --kind and --queue/) });
    expect(await postpone(['limits', 'set', '--kind', 'k', '--limit', '0', '--window', '1s'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION: --limit: must be an integer 1\.\.10000, got 0/) });
    expect(await postpone(['limits', 'set', '--kind', 'k', '--limit', '5', '--window', 'soon'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION: --window: expected a duration/) });
    expect((await json<unknown[]>(['limits'])).length).toBe(1);
  });
});

describe('postpone limits keys: per-key concurrency (docs/contract.md#per-key-concurrency)', () => {
  it('sets, lists and deletes the per-key limit of a kind; bad usage exits 2, a missing limit 1', async () => {
    expect(await postpone(['limits', 'keys'])).toEqual({ code: 0, stdout: 'no per-key limits\n', stderr: '' });
    expect(await postpone(['limits', 'keys', 'set', '--kind', 'sync', '--limit', '2'])).toEqual({ code: 0, stdout: 'kind sync: at most 2 CLAIMED per limit key\n', stderr: '' });
    expect(await json(['limits', 'keys'])).toEqual([{ kind: 'sync', limit: 2 }]);
    const store = createPgStore({ connectionString: url, schema });
    try {
      await store.scheduleMany([1, 2, 3].map((i) => ({ kind: 'sync', limitKey: 'tenant-1', payload: { i } })));
      expect(await store.claim({ owner: 'w', limit: 5, leaseMs: 60_000, kinds: ['sync'] })).toHaveLength(2);
    } finally {
      await store.close();
    }
    expect(await postpone(['limits', 'keys', 'set', '--kind', 'sync', '--limit', '0'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION/) });
    expect(await postpone(['limits', 'keys', 'delete', '--kind', 'sync'])).toEqual({ code: 0, stdout: 'per-key limit of kind sync deleted\n', stderr: '' });
    expect(await postpone(['limits', 'keys', 'delete', '--kind', 'sync'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^postpone: error NOT_FOUND: no per-key limit of kind sync/) });
  });
});

describe('postpone limits key-rates: per-key rate limits (docs/contract.md#per-key-rate-limits)', () => {
  it('sets, lists and deletes the per-key rate limit of a kind, with the keys held now; bad usage exits 2, a missing limit 1', async () => {
    expect(await postpone(['limits', 'key-rates'])).toEqual({ code: 0, stdout: 'no per-key rate limits\n', stderr: '' });
    expect(await postpone(['limits', 'key-rates', 'set', '--kind', 'mailout', '--limit', '2', '--window', '1m'])).toEqual({
      code: 0,
      stdout: 'kind mailout: at most 2 claims per limit key per 60000 ms (0 keys held now)\n',
      stderr: '',
    });
    const store = createPgStore({ connectionString: url, schema });
    try {
      await store.scheduleMany([1, 2, 3].map((i) => ({ kind: 'mailout', limitKey: 'tenant-1', payload: { i } })));
      expect(await store.claim({ owner: 'w', limit: 5, leaseMs: 60_000, kinds: ['mailout'] })).toHaveLength(2);
    } finally {
      await store.close();
    }
    expect(await json(['limits', 'key-rates'])).toEqual([{ kind: 'mailout', limit: 2, windowMs: 60_000, heldKeys: 1 }]);
    expect((await postpone(['limits', 'key-rates'])).stdout).toBe('kind mailout: at most 2 claims per limit key per 60000 ms (1 key held now)\n');
    expect(await postpone(['limits', 'key-rates', 'set', '--kind', 'mailout', '--limit', '0', '--window', '1s'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION/) });
    expect(await postpone(['limits', 'key-rates', 'set', '--kind', 'mailout', '--limit', '1', '--window', 'soon'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION: --window/) });
    expect(await postpone(['limits', 'key-rates', 'delete', '--kind', 'mailout'])).toEqual({ code: 0, stdout: 'per-key rate limit of kind mailout deleted\n', stderr: '' });
    expect(await postpone(['limits', 'key-rates', 'delete', '--kind', 'mailout'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/^postpone: error NOT_FOUND: no per-key rate limit of kind mailout/) });
  });
});

describe('postpone reschedule and progress', () => {
  it('reschedule <id> --delay / --run-at moves a SCHEDULED task (and its payload); NOT_SCHEDULED and NOT_FOUND exit 1; bad usage exits 2; show prints progress', async () => {
    const store = createPgStore({ connectionString: url, schema });
    try {
      const { id } = await store.schedule({ kind: 'resched', payload: { v: 1 }, delayMs: 3_600_000 });
      const moved = await json<{ id: string; outcome: string; dueAt: string }>(['reschedule', id, '--delay', '5m']);
      expect(moved).toMatchObject({ id, outcome: 'RESCHEDULED' });
      expect((await store.getTask(id))?.dueAt.toISOString()).toBe(moved.dueAt);
      const at = '2031-01-02T03:04:05.000Z';
      expect(await postpone(['reschedule', id, '--run-at', at, '--payload', '{"v":2}'])).toEqual({ code: 0, stdout: `RESCHEDULED task ${id}, due ${at}\n`, stderr: '' });
      expect(await store.getTask(id)).toMatchObject({ dueAt: new Date(at), payload: { v: 2 } });
      const both = await postpone(['reschedule', id, '--run-at', at, '--delay', '5m']);
      expect(both.code).toBe(2);
      expect(both.stderr).toMatch(/INVALID_DELAY: --delay: give --run-at or --delay, exactly one/);
      expect((await postpone(['reschedule', id, '--delay', 'soon'])).code).toBe(2);
      expect((await postpone(['reschedule', '987654321', '--delay', '1s'])).code).toBe(1);
      expect(await postpone(['reschedule', id, '987654321', '--delay', '1s', '--payload', '{}'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_OPTION: --payload and --payload-file apply to one id only/) });

      const { id: running } = await store.schedule({ kind: 'resched-run' });
      const [claimed] = await store.claim({ owner: 'cli-test', limit: 1, leaseMs: 60_000, kinds: ['resched-run'] });
      expect(claimed?.id).toBe(running);
      const refused = await postpone(['reschedule', running, '--delay', '1m']);
      expect(refused).toMatchObject({ code: 1, stdout: `NOT_SCHEDULED task ${running}: it is CLAIMED\n` });
      expect(refused.stderr).toMatch(/NOT_SCHEDULED/);
      expect(await store.reportProgress({ id: running, attempt: 1, progress: { rows: 40, of: 100 } })).toBe(true);
      expect((await postpone(['show', running])).stdout).toMatch(/^progress +\{"of":100,"rows":40\}$/m);
      expect((await json<{ task: { progress: unknown } }>(['show', running])).task.progress).toEqual({ rows: 40, of: 100 });
      expect((await postpone(['show', id])).stdout).toMatch(/^progress +-$/m);
    } finally {
      await store.close();
    }
  });
});

describe('ids past 2^53 (issue #26, large identifiers)', () => {
  const own = uniqueSchemaName('cli_big_ids');
  afterAll(async () => {
    await dropSchema(url, own);
  });

  it('schedule, show, list, cancel and retry print and take the exact digits of ids around 2^53', async () => {
    const run = (args: readonly string[]) => postpone(['--schema', own, ...args]);
    expect((await run(['migrate'])).code).toBe(0);
    const first = 2n ** 53n - 1n;
    const store = createPgStore({ connectionString: url, schema: own });
    try {
      // The id sequence restarted below 2^53: the next ids are …991, …992, …993 (a JS number rounds …993 to …992).
      await store.schedule({ kind: 'warm' });
      await store.cancel((await store.listTasks({})).tasks[0]!.id);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`alter table "${own}".task alter column id restart with ${first}`);
      await admin.end();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await run(['--json', 'schedule', 'big', '--payload', `{"i":${i}}`]);
        expect(r.code).toBe(0);
        ids.push((JSON.parse(r.stdout) as { id: string }).id);
      }
      expect(ids).toEqual([first, first + 1n, first + 2n].map(String));
      expect(ids[2]).toBe('9007199254740993');
      const shown = JSON.parse((await run(['--json', 'show', ids[2]!])).stdout) as { task: { id: string; payload: unknown } };
      expect(shown.task).toMatchObject({ id: '9007199254740993', payload: { i: 2 } });
      expect((await run(['show', ids[2]!])).stdout).toMatch(/9007199254740993/);
      const listed = JSON.parse((await run(['--json', 'list', '--kind', 'big'])).stdout) as { tasks: { id: string }[] };
      expect(listed.tasks.map((t) => t.id)).toEqual([...ids].reverse());
      expect(await run(['cancel', ids[1]!])).toMatchObject({ code: 0, stdout: `CANCELLED task ${ids[1]}\n` });
      const retried = JSON.parse((await run(['--json', 'retry', ids[1]!])).stdout) as { outcome: string; id: string };
      expect(retried).toMatchObject({ outcome: 'RETRIED', id: (first + 3n).toString() });
      expect((await store.getTaskRecord(retried.id))?.retryOf).toBe(ids[1]);
    } finally {
      await store.close();
    }
  });
});
