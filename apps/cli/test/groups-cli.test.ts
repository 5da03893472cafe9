/**
 * `--groups` / `POSTPONE_GROUPS` (src/groups.ts, docs/sharding.md): the built `postpone` binary on a
 * sharded deployment of two Postpone schemas of the test server. `migrate` migrates both and sets
 * each group's id range; `stats` and the dashboard's overview add both groups' counts (checked against
 * each schema read alone, each group holding tasks of every counted state); the dashboard shows a
 * task of group 1 by its id (past 2^53); `list` pages across both groups and `show` reads the group an
 * id names; the one-schema commands refuse `--groups`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createShardedStore, fnv1a32, migrations, SHARD_ID_BITS, type ShardedStore } from '@postpone/postgres';
import { createPgStore, type PgTx } from '@postpone/postgres/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/postpone.js', import.meta.url));
const schemas = [uniqueSchemaName('cligrp0'), uniqueSchemaName('cligrp1')] as const;
const GROUPS = schemas.join(',');
let url = '';
let front: ShardedStore<PgTx>;
const children: ChildProcess[] = [];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function postpone(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

async function json<T>(args: readonly string[], env: Record<string, string> = {}): Promise<T> {
  const r = await postpone(['--json', ...args], env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

/** A key whose task the front places in group `g` (fnv1a32 mod 2). */
function keyIn(g: number, prefix: string): string {
  for (let i = 0; i < 1_000; i++) if (fnv1a32(`${prefix}-${i}`) % 2 === g) return `${prefix}-${i}`;
  throw new Error('no key found');
}

const groupOf = (id: string) => Number(BigInt(id) >> BigInt(SHARD_ID_BITS));

interface Stats {
  scheduled: number;
  due: number;
  claimed: number;
  dead: number;
  byKind: { kind: string; scheduled: number; due: number; claimed: number; dead: number }[];
}

beforeAll(async () => {
  url = testDatabaseUrl();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await front?.close();
  for (const s of schemas) await dropSchema(url, s);
});

describe('postpone --groups', () => {
  it('migrate migrates every group and sets its id range; again: up to date', async () => {
    const versions = migrations(schemas[0]).map((m) => m.version);
    const first = await postpone(['--groups', GROUPS, 'migrate']);
    expect(first).toEqual({
      code: 0,
      stdout: `groups ${schemas.join(', ')}: applied ${versions.length} migrations (${versions.join(', ')}); now at version ${versions.at(-1)}\n`,
      stderr: '',
    });
    expect(await json(['--groups', GROUPS, 'migrate'])).toEqual({ groups: [...schemas], applied: [], version: versions.at(-1) });
    // Each schema is migrated on its own too, and group 1's ids start at 2^56.
    for (const s of schemas) expect((await postpone(['--schema', s, 'migrate'])).stdout).toBe(`schema ${s} is up to date (version ${versions.at(-1)})\n`);
    front = createShardedStore({ stores: schemas.map((schema) => createPgStore({ connectionString: url, schema })) });
    const t = await front.schedule({ kind: 'probe', key: keyIn(1, 'probe'), delayMs: 3_600_000 });
    expect(groupOf(t.id)).toBe(1);
    expect(BigInt(t.id)).toBe(2n ** 56n);
    expect(await front.cancel(t.id)).toBe('CANCELLED');
  });

  it('stats adds both groups: scheduled, due, claimed and dead per state and per kind', async () => {
    // Per group: 2 due + 1 later (SCHEDULED), 1 CLAIMED, 1 DEAD of kind "mail"; group 1 also 1 due "sms".
    for (const g of [0, 1]) {
      const p = `g${g}`;
      await front.scheduleMany([{ kind: 'mail', key: keyIn(g, `${p}-due-a`) }, { kind: 'mail', key: keyIn(g, `${p}-due-b`) }]);
      await front.schedule({ kind: 'mail', key: keyIn(g, `${p}-later`), delayMs: 3_600_000 });
      await front.schedule({ kind: 'mail-run', key: keyIn(g, `${p}-run`) });
      await front.schedule({ kind: 'mail-dead', key: keyIn(g, `${p}-dead`), maxAttempts: 1 });
    }
    await front.schedule({ kind: 'sms', key: keyIn(1, 'sms') });
    const running = await front.claim({ owner: 'w', limit: 10, leaseMs: 600_000, kinds: ['mail-run'] });
    expect(running.map((c) => groupOf(c.id)).sort()).toEqual([0, 1]);
    for (const c of await front.claim({ owner: 'w', limit: 10, leaseMs: 600_000, kinds: ['mail-dead'] })) {
      expect(await front.fail({ id: c.id, attempt: c.attempt, error: 'boom', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
    }

    const all = await json<Stats>(['--groups', GROUPS, 'stats']);
    const one = await Promise.all(schemas.map((s) => json<Stats>(['--schema', s, 'stats'])));
    // Each group alone holds tasks of every counted state; the deployment is their sum.
    expect(one.map((s) => [s.scheduled, s.due, s.claimed, s.dead])).toEqual([
      [3, 2, 1, 1],
      [4, 3, 1, 1],
    ]);
    expect(all).toMatchObject({ scheduled: 7, due: 5, claimed: 2, dead: 2 });
    expect(all.byKind).toEqual([
      { kind: 'mail', scheduled: 6, due: 4, claimed: 0, dead: 0 },
      { kind: 'mail-dead', scheduled: 0, due: 0, claimed: 0, dead: 2 },
      { kind: 'mail-run', scheduled: 0, due: 0, claimed: 2, dead: 0 },
      { kind: 'sms', scheduled: 1, due: 1, claimed: 0, dead: 0 },
    ]);
    // POSTPONE_GROUPS names the deployment as --groups does; the text output says the sums too.
    expect(await json<Stats>(['stats'], { POSTPONE_GROUPS: GROUPS })).toMatchObject({ scheduled: 7, due: 5, claimed: 2, dead: 2 });
    const text = await postpone(['stats'], { POSTPONE_GROUPS: GROUPS });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("scheduled           7 (due 5)");
    expect(text.stdout).toMatch(/^mail +6 +4 +0 +0 *$/m);
  });

  it('the dashboard reads through the front: overview sums, a task of group 1 by its id', async () => {
    const child = spawn(process.execPath, [BIN, '--groups', GROUPS, 'dashboard', '--port', '0', '--refresh', '1s'], {
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const base = await new Promise<string>((resolve, reject) => {
      let out = '';
      let err = '';
      const timer = setTimeout(() => reject(new Error(`no URL within 30 s; stderr: ${err}`)), 30_000);
      child.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
      });
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
        if (m !== null) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with ${code}; stderr: ${err}`));
      });
    });
    const overview = (await (await fetch(`${base}api/overview`)).json()) as { schema: string; stats: Stats };
    expect(overview.schema).toBe(schemas.join(', '));
    expect(overview.stats).toMatchObject({ scheduled: 7, due: 5, claimed: 2, dead: 2 });
    const sms = (await front.listTasks({ kinds: ['sms'] })).tasks[0]!;
    expect(groupOf(sms.id)).toBe(1);
    const detail = (await (await fetch(`${base}api/tasks/${sms.id}`)).json()) as { task: { id: string; kind: string; state: string } };
    expect(detail.task).toMatchObject({ id: sms.id, kind: 'sms', state: 'SCHEDULED' });
    // The front offers no batches: the batch page answers 404.
    expect((await fetch(`${base}api/batches/1`)).status).toBe(404);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('list merges both groups in id order, paging on across them with the cursor; show reads the group an id names', async () => {
    const everyId = [...(await front.listTasks({ limit: 1000 })).tasks.map((t) => t.id)];
    expect(new Set(everyId.map(groupOf))).toEqual(new Set([0, 1]));
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const r: { tasks: { id: string }[]; nextCursor: string | null } = await json(['--groups', GROUPS, 'list', '--limit', '3', ...(cursor === null ? [] : ['--cursor', cursor])]);
      seen.push(...r.tasks.map((t) => t.id));
      cursor = r.nextCursor;
      if (cursor === null) break;
    }
    // Newest first is id order descending: group 1's ids (from 2^56) before group 0's; every task once.
    expect(seen).toEqual([...everyId].sort((a, b) => (BigInt(b) > BigInt(a) ? 1 : -1)));
    const sms = (await front.listTasks({ kinds: ['sms'] })).tasks[0]!;
    const shown = await json<{ task: { id: string; kind: string; state: string } }>(['--groups', GROUPS, 'show', sms.id]);
    expect(shown.task).toMatchObject({ id: sms.id, kind: 'sms', state: 'SCHEDULED' });
    // The same id on group 0's schema alone is no task there.
    expect((await postpone(['--schema', schemas[0], 'show', sms.id])).code).toBe(1);
  });

  it('stats lists a pause set on one group alone; an explicit --schema wins over POSTPONE_GROUPS, and contradicts --groups', async () => {
    // The fresh-user report: `--schema g1 pause --kind b1` then `--groups g0,g1 stats` showed nothing paused.
    const kind = 'only-in-group-1';
    expect((await postpone(['--schema', schemas[1], 'pause', '--kind', kind, '--reason', 'group 1 only'])).code).toBe(0);
    try {
      const stats = await json<{ paused: { scope: string; name: string; reason: string | null }[] }>(['--groups', GROUPS, 'stats']);
      expect(stats.paused.filter((p) => p.name === kind)).toMatchObject([{ scope: 'kind', name: kind, reason: 'group 1 only' }]);
      // POSTPONE_GROUPS exported for the deployment's commands; --schema on the command line reads one schema.
      const inGroup1 = await json<unknown>(['--schema', schemas[1], 'paused'], { POSTPONE_GROUPS: GROUPS });
      expect(JSON.stringify(inGroup1)).toContain(kind);
      const inGroup0 = await json<unknown>(['--schema', schemas[0], 'paused'], { POSTPONE_GROUPS: GROUPS });
      expect(JSON.stringify(inGroup0)).not.toContain(kind);
      const both = await postpone(['--groups', GROUPS, '--schema', schemas[0], 'stats']);
      expect(both.code).toBe(2);
      expect(both.stderr).toMatch(/^postpone: error INVALID_OPTION: --groups and --schema name different things/);
    } finally {
      expect((await postpone(['--schema', schemas[1], 'resume', '--kind', kind])).code).toBe(0);
    }
  });

  it('one-schema commands and bad group lists are refused as bad usage (exit 2)', async () => {
    for (const args of [['cancel', '1'], ['retry', '1'], ['health'], ['schedule', 'x'], ['prune', '--older-than', '1d']]) {
      const r = await postpone(['--groups', GROUPS, ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^postpone: error INVALID_OPTION: --groups \/ POSTPONE_GROUPS: this command reads or writes one schema/);
    }
    // A group schema not migrated: the remedy names the deployment's migrate, not the default schema's.
    const missing = await postpone(['--groups', `${schemas[0]},cligrp_never_migrated`, 'stats']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(new RegExp(`the schema is not migrated; run: postpone --groups ${schemas[0]},cligrp_never_migrated migrate\n$`));
    for (const bad of ['a,a', 'A,b', 'a,,b', 'a;drop']) {
      const r = await postpone(['--groups', bad, 'stats']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^postpone: error INVALID_OPTION: --groups \/ POSTPONE_GROUPS: /);
    }
  });
});
