/**
 * packages/testkit/src/evidence.ts — records one `CASE <name> PASS|FAIL key=value ...` line per evidence case.
 *
 * Each case writes `evidence/cases/<name>.txt` (one line) and puts its line into
 * `evidence/output.txt` in place of its earlier one, under a lock (a partial run replaces only the
 * cases it ran), ordered as in docs/contract.md#evidence (unknown names last, alphabetically). Writes go through a temporary file and `rename`, so parallel test processes
 * never leave a half-written output file. The repository root is found by walking up to
 * `pnpm-workspace.yaml`, or taken from `POSTPONE_EVIDENCE_DIR`.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The order of the table in docs/contract.md#evidence. */
export const CASE_ORDER: readonly string[] = [
  'normal_three_workers',
  'boundary_not_before_due',
  'boundary_claim_limit',
  'boundary_partial_due_index',
  'claim_only_known_kinds',
  'priority_order',
  'kind_concurrency_cap',
  'pause_resume',
  'rate_limit_exact',
  'per_key_concurrency',
  'per_key_rate_limit',
  'fair_share',
  'negative_naive_select_then_update',
  'control_skip_locked_same_load',
  'crash_kill9_lease_retry',
  'sigstop_late_commit_rejected',
  'negative_unfenced_late_commit',
  'stall_event_loop_fenced',
  'cancel_semantics',
  'race_due_vs_cancel',
  'bulk_cancel_filter',
  'ext_key_per_task_dedup',
  'ext_key_per_attempt_duplicates',
  'cancel_after_external_call',
  'retry_backoff_then_done',
  'retry_exhausted_dead',
  'retry_jitter_bounds',
  'poll_interval_tradeoff',
  'wheel_fire_exact_tick',
  'wheel_horizon_rejected',
  'wheel_restart_needs_durable',
  'hybrid_restart_real',
  'hybrid_vs_poll_latency',
  'db_restart_mid_run',
  'backend_terminated',
  'half_open_connections',
  'host_partition',
  'read_only_window',
  'failover_promote',
  'failover_multihost',
  'failover_async_loss',
  'pool_starved_by_handlers',
  'migrate_concurrently',
  'pgbouncer_transaction_mode',
  'wall_clock_steps',
  'cron_exactly_once',
  'cron_dst',
  'soak_short',
  'dedup_key_race',
  'debounce_throttle',
  'history_split_outcomes',
  'batch_deadlock',
  'batch_deadlock_workers',
  'large_ids',
  'notify_queue_full',
  'version_skew',
  'shutdown_order',
  'history_maintenance',
  'await_result',
  'dependency_chain_kill9',
  'fan_in_exactly_once',
  'batch_callback_once',
  'db_clock_jump',
  'cron_clock_jump',
  'backlog_million',
  'citus_normal_three_workers',
  'citus_crash_kill9_lease_retry',
  'citus_sigstop_late_commit_rejected',
  'citus_race_due_vs_cancel',
  'citus_worker_node_down',
  'citus_coordinator_restart',
  'citus_shard_move',
];

export type CaseValue = string | number | boolean | null | undefined | readonly (string | number)[];

/** Directory holding `output.txt`, `env.txt` and `cases/`. */
export function evidenceDir(): string {
  const fromEnv = process.env.POSTPONE_EVIDENCE_DIR;
  if (fromEnv) return resolve(fromEnv);
  let dir = process.cwd();
  for (let i = 0; i < 20; i++) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return join(dir, 'evidence');
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return resolve('evidence');
}

function formatValue(v: CaseValue): string {
  if (Array.isArray(v)) return `[${v.join(',')}]`;
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(1);
  return String(v);
}

/** Formats a CASE line: `CASE name PASS k=v k2=v2`. */
export function formatCase(name: string, pass: boolean, fields: Record<string, CaseValue>): string {
  const kv = Object.entries(fields).map(([k, v]) => `${k}=${formatValue(v)}`.replace(/\s+/g, '_'));
  return ['CASE', name, pass ? 'PASS' : 'FAIL', ...kv].join(' ');
}

function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/** The case name of a `CASE <name> PASS|FAIL ...` line, or undefined for any other line. */
function caseName(line: string): string | undefined {
  return /^CASE ([a-z0-9_]+) (?:PASS|FAIL)\b/.exec(line)?.[1];
}

/** How long a record waits for the lock: longer than {@link LOCK_STALE_MS}, so a waiter outlives a lock left behind. */
const LOCK_WAIT_MS = 20_000;
/**
 * A lock folder older than this was left by a process that died holding it (the section it guards
 * takes milliseconds). Known limit: two waiters that judge the same left-behind lock stale at the
 * same instant may both take it over; that needs a holder killed inside its few milliseconds.
 */
const LOCK_STALE_MS = 5_000;

/**
 * Runs `fn` holding the folder lock `path` (made with `mkdir`, which one process wins): test
 * processes record cases at the same time, and each rewrites `output.txt` from what it read, so
 * without it one could write back an older line over another's new one. Waits at most
 * {@link LOCK_WAIT_MS}, in 5 ms sleeps; a lock older than {@link LOCK_STALE_MS} is taken over.
 * @throws Error when the lock stays held by a live holder for the whole wait
 */
function withLock<T>(path: string, fn: () => T): T {
  const deadline = Date.now() + LOCK_WAIT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      mkdirSync(path);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      try {
        if (Date.now() - statSync(path).mtimeMs > LOCK_STALE_MS) rmSync(path, { recursive: true, force: true });
      } catch {
        // gone meanwhile: try again
      }
      if (Date.now() > deadline) throw new Error(`evidence: ${path} held for more than ${LOCK_WAIT_MS} ms`);
      Atomics.wait(pause, 0, 0, 5);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(path, { recursive: true, force: true });
  }
}

/**
 * Puts `line` (the case `name`'s) into `evidence/output.txt` in place of that case's earlier line,
 * keeping every other line: a run of some packages (a single test file, one fault case) replaces the
 * lines of the cases it ran and nothing else, so the committed file never loses the cases that run
 * did not reach, and never takes lines from an earlier run left in this checkout. Every `CASE`
 * line already there is kept (a case taken out of the code leaves the file by hand), ordered as
 * {@link CASE_ORDER} (names not in it last, alphabetically); any other line is dropped.
 * Under a lock, so records from parallel test processes never undo each other.
 * @returns the text written
 */
export function mergeCaseLine(name: string, line: string, dir = evidenceDir()): string {
  const outputPath = join(dir, 'output.txt');
  return withLock(join(dir, 'output.lock'), () => {
    const lines = new Map<string, string>();
    if (existsSync(outputPath)) {
      for (const old of readFileSync(outputPath, 'utf8').split('\n')) {
        const oldName = caseName(old.trim());
        if (oldName) lines.set(oldName, old.trim());
      }
    }
    lines.set(name, line);
    const rank = (n: string) => {
      const i = CASE_ORDER.indexOf(n);
      return i < 0 ? CASE_ORDER.length : i;
    };
    const names = [...lines.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
    const text = `${names.map((n) => lines.get(n)).join('\n')}\n`;
    writeAtomic(outputPath, text);
    return text;
  });
}

/**
 * Records one evidence case: writes `evidence/cases/<name>.txt` (this checkout's last line of the
 * case), puts the line into `evidence/output.txt` ({@link mergeCaseLine}) and prints it to stdout.
 * @returns the formatted line.
 */
export function recordCase(name: string, pass: boolean, fields: Record<string, CaseValue> = {}): string {
  if (!/^[a-z0-9_]+$/.test(name)) throw new TypeError(`case name must be snake_case: ${name}`);
  const line = formatCase(name, pass, fields);
  const dir = evidenceDir();
  mkdirSync(join(dir, 'cases'), { recursive: true });
  writeAtomic(join(dir, 'cases', `${name}.txt`), `${line}\n`);
  mergeCaseLine(name, line, dir);
  console.log(line);
  return line;
}

/** Merges `key: value` lines into `evidence/env.txt` (later writers replace keys they own). */
export function recordEnv(entries: Record<string, string | number>): void {
  const dir = evidenceDir();
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'env.txt');
  const map = new Map<string, string>();
  if (existsSync(path)) {
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const i = line.indexOf(':');
      if (i > 0) map.set(line.slice(0, i).trim(), line.slice(i + 1).trim());
    }
  }
  for (const [k, v] of Object.entries(entries)) map.set(k, String(v));
  writeAtomic(path, `${[...map].map(([k, v]) => `${k}: ${v}`).join('\n')}\n`);
}
