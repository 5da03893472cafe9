/**
 * `pnpm version-skew-git [--rev <commit>] [--tasks 50] [--out evidence/version-skew-git.md]`: issue
 * #26 item 2's "worker of the previous commit built from git" (the `version_skew` case simulates
 * the previous schema, not the previous code). The previous commit (default: the first-parent
 * commit before the last change to packages/postgres/src/sql/migrations.ts, so the schemas differ
 * by one migration) is exported with `git archive` into a cache folder of the OS temp dir, installed
 * from the pnpm store (`--offline`) and built (`@postpone/worker` and `@postpone/postgres` with their
 * dependencies) — once; a later run reuses it. Then, on a PostgreSQL server of its own:
 *
 * 1. **Old worker, new schema**: a schema migrated by this code, tasks scheduled by it, a worker
 *    process of the old commit for a few seconds: it works (every task DONE once, attempt 1) or
 *    refuses with `SchemaVersionError` naming both schema versions and touches no task.
 * 2. **New worker, old schema**: a schema migrated by the old code and tasks scheduled by it, a
 *    worker of this code: it works or refuses the same way and touches no task.
 * 3. In both, this code's worker (after this code's `migrate()`) then drains: every task DONE once.
 *
 * Not part of `pnpm test`: building an old commit takes about a minute on the 2-core machine.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { Store } from '@postpone/core';
import { SCHEMA_VERSION } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import { evidenceDir } from '@postpone/testkit';
import { createWorker } from '@postpone/worker';
import pg from 'pg';
import { PgServer } from '../dist/faults/pg-server.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    rev: { type: 'string' },
    tasks: { type: 'string', default: '50' },
    'run-s': { type: 'string', default: '8' },
    out: { type: 'string' },
  },
});
const repo = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();
const rev = values.rev ?? `${git('log', '--first-parent', '-1', '--format=%H', 'HEAD', '--', 'packages/postgres/src/sql/migrations.ts')}^1`;
const sha = git('rev-parse', rev);
const subject = git('log', '-1', '--format=%h %ad %s', '--date=iso', sha).slice(0, 160);
const tasks = Number(values.tasks);
const runMs = Number(values['run-s']) * 1000;
const KIND = 'skew';
const log = (line: string) => console.log(`[version-skew-git] ${line}`);

/** Exports, installs and builds the old commit once (a `.built` marker says it is done). */
function buildOld(): { dir: string; buildMs: number; cached: boolean } {
  const dir = join(tmpdir(), `postpone-old-${sha.slice(0, 12)}`);
  if (existsSync(join(dir, '.built'))) return { dir, buildMs: 0, cached: true };
  const started = performance.now();
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git -C "${repo}" archive ${sha} | tar -x -C "${dir}"`], { stdio: 'inherit', timeout: 120_000 });
  execFileSync('pnpm', ['install', '--frozen-lockfile', '--offline'], { cwd: dir, stdio: 'inherit', timeout: 300_000 });
  execFileSync('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@postpone/worker...', '--filter=@postpone/postgres...', '--output-logs=errors-only'], { cwd: dir, stdio: 'inherit', timeout: 600_000 });
  writeFileSync(join(dir, '.built'), `${sha}\n`);
  return { dir, buildMs: performance.now() - started, cached: false };
}

/** The old commit's program: migrate+schedule, or a worker for `runMs`; one JSON line per event. */
const OLD_PROGRAM = `
import { SCHEMA_VERSION } from '@postpone/postgres';
import { createPgStore } from '@postpone/postgres/pg';
import { createWorker } from '@postpone/worker';
const [mode, url, schema, arg] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const describe = (e) => ({ name: e?.name, code: e?.code, message: String(e?.message ?? e) });
const store = createPgStore({ connectionString: url, schema });
out({ type: 'version', schemaVersion: SCHEMA_VERSION });
if (mode === 'prepare') {
  await store.migrate();
  const made = await store.scheduleMany(Array.from({ length: Number(arg) }, (_, i) => ({ kind: '${KIND}', payload: { i } })));
  out({ type: 'scheduled', ids: made.map((t) => t.id) });
  await store.close();
  process.exit(0);
}
try { out({ type: 'schema', check: await store.checkSchema() }); } catch (e) { out({ type: 'schemaError', ...describe(e) }); }
const worker = createWorker({ store, concurrency: 5, pollIntervalMs: 100, leaseMs: 10000, handlers: { '${KIND}': async () => 'ok' } });
worker.on('claimed', ({ task }) => out({ type: 'claimed', id: task.id, attempt: task.attempt }));
worker.on('completed', ({ task, outcome }) => out({ type: 'completed', id: task.id, outcome }));
worker.on('error', ({ error, operation }) => out({ type: 'error', operation, ...describe(error) }));
process.on('unhandledRejection', (e) => out({ type: 'unhandled', ...describe(e) }));
void worker.start();
setTimeout(async () => {
  await worker.stop({ timeoutMs: 2000 }).catch(() => {});
  await store.close().catch(() => {});
  out({ type: 'stopped' });
  process.exit(0);
}, Number(arg));
`;

type OldEvent = { type: string; [k: string]: unknown };

async function runOld(dir: string, args: string[]): Promise<OldEvent[]> {
  const file = join(dir, 'packages', 'faultnet', 'old-skew-program.mjs');
  writeFileSync(file, OLD_PROGRAM);
  const child = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const events: OldEvent[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      events.push(JSON.parse(line) as OldEvent);
    } catch {
      // not a JSON line
    }
  });
  const code = await Promise.race([new Promise<number | null>((r) => child.once('exit', (c) => r(c))), sleep(120_000).then(() => 'timeout' as const)]);
  if (code === 'timeout') child.kill('SIGKILL');
  events.push({ type: 'exit', code });
  return events;
}

/** This code's worker for `ms`: its events, as the old program's. */
async function runNew(url: string, schema: string, ms: number): Promise<OldEvent[]> {
  const events: OldEvent[] = [];
  const describe = (e: unknown) => ({ name: (e as Error)?.name, code: (e as { code?: string })?.code, message: String((e as Error)?.message ?? e) });
  const store = createPgStore({ connectionString: url, schema });
  try {
    events.push({ type: 'schema', check: await store.checkSchema() });
  } catch (e) {
    events.push({ type: 'schemaError', ...describe(e) });
  }
  const worker = createWorker<unknown>({ store: store as Store<unknown>, concurrency: 5, pollIntervalMs: 100, leaseMs: 10_000, handlers: { [KIND]: async () => 'ok' } });
  worker.on('claimed', ({ task }) => events.push({ type: 'claimed', id: task.id, attempt: task.attempt }));
  worker.on('completed', ({ task, outcome }) => events.push({ type: 'completed', id: task.id, outcome }));
  worker.on('error', ({ error, operation }) => events.push({ type: 'error', operation, ...describe(error) }));
  void worker.start();
  await sleep(ms);
  await worker.stop({ timeoutMs: 2_000 });
  await store.close();
  return events;
}

interface Row {
  state: string;
  attempt: number;
}

async function rows(pool: pg.Pool, schema: string, ids: readonly string[]): Promise<Row[]> {
  const q = pg.escapeIdentifier(schema);
  const { rows } = await pool.query<Row>(
    `select state, attempt from ${q}.task where id = any($1::bigint[]) union all select state, attempt from ${q}.task_history where id = any($1::bigint[])`,
    [ids],
  );
  return rows;
}

interface Phase {
  readonly name: string;
  readonly ok: boolean;
  readonly lines: string[];
}

/** Judges one skewed run: worked (every task DONE once at attempt 1) or refused naming both versions with no task touched. */
function judge(name: string, events: OldEvent[], after: Row[], n: number, versions: readonly number[]): Phase {
  const claimed = events.filter((e) => e.type === 'claimed').length;
  const completed = events.filter((e) => e.type === 'completed').length;
  const refusals = events.filter((e) => (e.type === 'schemaError' || e.type === 'error') && e.name === 'SchemaVersionError');
  const otherErrors = events.filter((e) => (e.type === 'error' || e.type === 'schemaError' || e.type === 'unhandled') && e.name !== 'SchemaVersionError');
  const done = after.filter((r) => r.state === 'DONE' && r.attempt === 1).length;
  const untouched = after.filter((r) => r.state === 'SCHEDULED' && r.attempt === 0).length;
  const worked = refusals.length === 0 && completed === n && done === n && claimed === n;
  const namesBoth = refusals.length > 0 && refusals.every((e) => versions.every((v) => String(e.message).includes(String(v))));
  const refused = refusals.length > 0 && namesBoth && claimed === 0 && untouched === n;
  const ok = (worked || refused) && otherErrors.length === 0 && after.length === n;
  const lines = [
    `- outcome: **${worked ? 'works' : refused ? 'refuses' : 'neither'}** — claimed ${claimed}, completed ${completed}; rows after: DONE at attempt 1 ${done}, SCHEDULED untouched ${untouched} of ${n}`,
    ...refusals.slice(0, 2).map((e) => `- refusal (${String(e.type === 'schemaError' ? 'checkSchema' : e.operation)}): \`${String(e.name)}\` \`${String(e.code)}\`: "${String(e.message)}"`),
    `- other errors: ${otherErrors.length === 0 ? 'none' : otherErrors.slice(0, 3).map((e) => `${String(e.name)}: ${String(e.message)}`).join('; ')}`,
    `- names both schema versions (${versions.join(' and ')}): ${refusals.length === 0 ? 'n/a (worked)' : String(namesBoth)}`,
  ];
  return { name, ok, lines };
}

const built = buildOld();
log(`old commit ${subject}: ${built.cached ? 'cached' : `built in ${Math.round(built.buildMs / 1000)} s`} at ${built.dir}`);
const server = await PgServer.start();
const pool = new pg.Pool({ connectionString: server.url, max: 2 });
// The script's own inspection pool: an idle connection lost at the server's close is not an error of the run.
pool.on('error', () => {});
const phases: Phase[] = [];
let oldVersion = -1;
try {
  // 1. Old worker on a schema this code migrated.
  const newStore = createPgStore({ connectionString: server.url, schema: 'skew_new' });
  await newStore.migrate();
  const scheduled = await newStore.scheduleMany(Array.from({ length: tasks }, (_, i) => ({ kind: KIND, payload: { i } })));
  await newStore.close();
  const ids1 = scheduled.map((t) => t.id);
  const oldRun = await runOld(built.dir, ['work', server.url, 'skew_new', String(runMs)]);
  oldVersion = Number(oldRun.find((e) => e.type === 'version')?.schemaVersion ?? -1);
  log(`old worker (schema code ${oldVersion}) on schema ${SCHEMA_VERSION}: ${oldRun.filter((e) => e.type === 'completed').length} completed, ${oldRun.filter((e) => e.name === 'SchemaVersionError').length} refusals`);
  phases.push(judge(`old worker (code of schema ${oldVersion}) on a schema migrated to ${SCHEMA_VERSION} by this code`, oldRun, await rows(pool, 'skew_new', ids1), tasks, [oldVersion, SCHEMA_VERSION]));
  const drain1 = await runNew(server.url, 'skew_new', runMs);
  const after1 = await rows(pool, 'skew_new', ids1);
  const done1 = after1.filter((r) => r.state === 'DONE').length;
  phases.push({ name: 'then this code’s worker on that schema', ok: done1 === tasks && after1.length === tasks, lines: [`- every task DONE once: ${done1} of ${tasks} DONE (${drain1.filter((e) => e.type === 'completed').length} completed by it)`] });

  // 2. This code's worker on a schema the old code migrated (one migration behind).
  const prepared = await runOld(built.dir, ['prepare', server.url, 'skew_old', String(tasks)]);
  const ids2 = (prepared.find((e) => e.type === 'scheduled')?.ids as string[] | undefined) ?? [];
  const newRun = await runNew(server.url, 'skew_old', runMs);
  log(`this worker (schema code ${SCHEMA_VERSION}) on schema ${oldVersion}: ${newRun.filter((e) => e.type === 'completed').length} completed, ${newRun.filter((e) => e.name === 'SchemaVersionError').length} refusals`);
  phases.push(judge(`this code’s worker (schema ${SCHEMA_VERSION}) on a schema migrated to ${oldVersion} by the old code`, newRun, await rows(pool, 'skew_old', ids2), tasks, [oldVersion, SCHEMA_VERSION]));
  const migrating = createPgStore({ connectionString: server.url, schema: 'skew_old' });
  await migrating.migrate();
  await migrating.close();
  await runNew(server.url, 'skew_old', runMs);
  const after2 = await rows(pool, 'skew_old', ids2);
  const done2 = after2.filter((r) => r.state === 'DONE').length;
  phases.push({ name: 'then this code’s migrate() and worker on that schema', ok: done2 === tasks && after2.length === tasks, lines: [`- every task DONE once: ${done2} of ${tasks} DONE`] });
} finally {
  await pool.end();
  await server.close();
}
const pass = phases.length === 4 && phases.every((p) => p.ok);
const markdown = [
  '# Version skew with the previous commit built from git (version_skew, issue #26 item 2)',
  '',
  `Run ${new Date().toISOString()} by \`pnpm version-skew-git\` (packages/faultnet/scripts/version-skew-git.ts), Node.js ${process.version}.`,
  `Previous commit: \`${subject}\` (schema ${oldVersion}), ${built.cached ? 'taken from the build cache' : `exported with git archive, installed offline and built in ${Math.round(built.buildMs / 1000)} s`}; this code: \`${git('log', '-1', '--format=%h', 'HEAD')}\` (+ working tree), schema ${SCHEMA_VERSION}. ${tasks} tasks per schema; each worker ran ${runMs / 1000} s.`,
  '',
  `**Verdict: ${pass ? 'PASS' : 'FAIL'}**`,
  '',
  ...phases.flatMap((p) => [`## ${p.name}: ${p.ok ? 'ok' : 'FAIL'}`, '', ...p.lines, '']),
].join('\n');
const out = values.out === undefined ? join(evidenceDir(), 'version-skew-git.md') : resolve(values.out);
writeFileSync(out, markdown);
console.log(markdown);
process.exit(pass ? 0 : 1);
