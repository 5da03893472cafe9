/**
 * The bulk forms of `postpone cancel`, `retry`, `reschedule` and `delete` (docs/contract.md#bulk-operations):
 * a filter of options (`--kind`, `--queue`, `--state`, `--key-prefix`, due and finish ranges, `--all`)
 * or several ids. Without `--yes` the command first counts what it would do (the store's `dryRun`),
 * prints that, and asks on a terminal; when standard input is not a terminal it refuses (exit 1,
 * CONFIRMATION_REQUIRED) after printing the count, so a script must say `--yes`.
 */
import { createInterface } from 'node:readline/promises';
import { BULK_STATES, type BulkFilter, type BulkOperation, type BulkResult, type TaskState } from '@postpone/core';
import type { PostgresStore } from '@postpone/postgres';
import type { PgTx } from '@postpone/postgres/pg';
import { type Command, Option } from 'commander';
import { OutcomeError, parseDuration, parseInteger, parseTime, UsageError } from './args.js';

/** The options every bulk command takes (commander's camel-cased names). */
export interface BulkCliOptions {
  readonly kind?: string[];
  readonly queue?: string;
  readonly state?: string[];
  readonly keyPrefix?: string;
  readonly dueFrom?: string;
  readonly dueBefore?: string;
  readonly finishedFrom?: string;
  readonly finishedBefore?: string;
  readonly all?: boolean;
  readonly batchSize?: string;
  readonly yes?: boolean;
}

/** Adds the filter options of `op` to `cmd` (finish ranges only for the history operations). */
export function addBulkOptions(cmd: Command, op: BulkOperation): Command {
  cmd
    .option('--kind <kind...>', 'bulk: tasks of these kinds')
    .option('--queue <name>', 'bulk: tasks of this queue')
    .option('--state <state...>', `bulk: only these states (${op === 'cancel' ? 'SCHEDULED, CLAIMED' : op === 'retry' ? 'DEAD (default), CANCELLED' : op === 'reschedule' ? 'SCHEDULED' : 'DONE, CANCELLED, DEAD'})`)
    .option('--key-prefix <text>', 'bulk: tasks whose dedup key starts with this text')
    .option('--due-from <time>', 'bulk: due at or after this time (ISO 8601)')
    .option('--due-before <time>', 'bulk: due before this time (ISO 8601)');
  if (op === 'retry' || op === 'delete') {
    cmd.option('--finished-from <time>', 'bulk: finished at or after this time (ISO 8601)').option('--finished-before <time>', 'bulk: finished before this time (ISO 8601)');
  }
  return cmd
    .option('--all', 'bulk: every task in the states acted on (a filter may then name nothing)')
    .addOption(new Option('--batch-size <n>', 'bulk: rows per batch, each its own transaction (1..10000)').default('1000'))
    .option('--yes', 'bulk: do it without asking (otherwise the count is printed and confirmation asked)');
}

/** True when some bulk filter option was given (then the command is a bulk one even with one id or none). */
export function hasBulkFilter(o: BulkCliOptions): boolean {
  return [o.kind, o.queue, o.state, o.keyPrefix, o.dueFrom, o.dueBefore, o.finishedFrom, o.finishedBefore, o.all].some((v) => v !== undefined);
}

/** The store's filter from the ids and options (the store validates it; the CLI only converts). */
export function bulkFilterOf(ids: readonly string[], o: BulkCliOptions): BulkFilter {
  return {
    ...(ids.length > 0 ? { ids } : {}),
    ...(o.kind !== undefined ? { kinds: o.kind } : {}),
    ...(o.queue !== undefined ? { queue: o.queue } : {}),
    ...(o.state !== undefined ? { states: o.state.map((s) => s.toUpperCase() as TaskState) } : {}),
    ...(o.keyPrefix !== undefined ? { keyPrefix: o.keyPrefix } : {}),
    ...(o.dueFrom !== undefined ? { dueFrom: parseTime(o.dueFrom, '--due-from') } : {}),
    ...(o.dueBefore !== undefined ? { dueBefore: parseTime(o.dueBefore, '--due-before') } : {}),
    ...(o.finishedFrom !== undefined ? { finishedFrom: parseTime(o.finishedFrom, '--finished-from') } : {}),
    ...(o.finishedBefore !== undefined ? { finishedBefore: parseTime(o.finishedBefore, '--finished-before') } : {}),
    ...(o.all === true ? { all: true as const } : {}),
  };
}

/** `--delay` / `--run-at` (or `--due-at`) of reschedule and retry as the store's options. */
export function dueOptions(op: BulkOperation, o: { delay?: string; runAt?: string }): Record<string, unknown> {
  const at = op === 'reschedule' ? 'dueAt' : 'runAt';
  return {
    ...(o.delay !== undefined ? { delayMs: parseDuration(o.delay, '--delay') } : {}),
    ...(o.runAt !== undefined ? { [at]: parseTime(o.runAt, '--run-at') } : {}),
  };
}

const VERB: Record<BulkOperation, string> = { cancel: 'cancel', retry: 'retry', reschedule: 'reschedule', delete: 'delete' };

/** `CANCELLED 3, REQUESTED 1` (outcomes with a count only; `nothing` when all are 0). */
export function countsText(counts: Readonly<Record<string, number>>): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([o, n]) => `${o} ${n}`);
  return parts.length === 0 ? 'nothing' : parts.join(', ');
}

function total(counts: Readonly<Record<string, number>>, acting: readonly string[]): number {
  return acting.reduce((n, o) => n + (counts[o] ?? 0), 0);
}

/** The outcomes that change something, per operation (what the confirmation counts). */
const ACTING: Record<BulkOperation, readonly string[]> = { cancel: ['CANCELLED', 'REQUESTED'], retry: ['RETRIED'], reschedule: ['RESCHEDULED'], delete: ['DELETED'] };

async function ask(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

type Call = (store: PostgresStore<PgTx>, filter: BulkFilter, options: Record<string, unknown>) => Promise<BulkResult<string>>;

/** The store method of each operation. */
export const BULK_CALL: Record<BulkOperation, Call> = {
  cancel: (s, f, o) => s.cancelMany(f, o),
  retry: (s, f, o) => s.retryMany(f, o),
  reschedule: (s, f, o) => s.rescheduleMany(f, o as { delayMs: number }),
  delete: (s, f, o) => s.deleteMany(f, o),
};

/**
 * Runs bulk operation `op`: a dry run first unless `--yes`, its count printed, confirmation asked on a
 * terminal (refused otherwise), then the operation; prints its counts.
 * @throws OutcomeError CONFIRMATION_REQUIRED (not a terminal, no `--yes`), ABORTED (answered no)
 */
export async function runBulk(
  op: BulkOperation,
  ids: readonly string[],
  o: BulkCliOptions,
  extra: Record<string, unknown>,
  withStore: <T>(fn: (store: PostgresStore<PgTx>) => Promise<T>) => Promise<T>,
  print: (value: unknown, text: () => string) => void,
  isTty: boolean = process.stdin.isTTY === true,
): Promise<void> {
  const narrowing = [o.kind, o.queue, o.keyPrefix, o.dueFrom, o.dueBefore, o.finishedFrom, o.finishedBefore].some((v) => v !== undefined);
  if (ids.length === 0 && !narrowing && o.all !== true) {
    const history = op === 'retry' || op === 'delete' ? ', --finished-from, --finished-before' : '';
    throw new UsageError('INVALID_OPTION', `no tasks selected: give ids or at least one of --kind, --queue, --key-prefix, --due-from, --due-before${history}, or --all to ${op} every task in ${BULK_STATES[op].join('/')}`);
  }
  const filter = bulkFilterOf(ids, o);
  const options = { ...extra, batchSize: parseInteger(o.batchSize ?? '1000', '--batch-size') };
  await withStore(async (store) => {
    if (o.yes !== true) {
      const dry = await BULK_CALL[op](store, filter, { ...options, dryRun: true });
      const n = total(dry.counts, ACTING[op]);
      print({ operation: op, ...dry }, () => `would ${VERB[op]} ${n} task${n === 1 ? '' : 's'} (${countsText(dry.counts)})`);
      if (n === 0) return;
      if (!isTty) throw new OutcomeError('CONFIRMATION_REQUIRED', `would ${VERB[op]} ${n} task${n === 1 ? '' : 's'}; nothing done: pass --yes to ${VERB[op]} them (standard input is not a terminal, so the CLI cannot ask)`);
      if (!(await ask(`${VERB[op]} ${n} task${n === 1 ? '' : 's'}? [y/N] `))) throw new OutcomeError('ABORTED', `not confirmed; nothing done`);
    }
    const result = await BULK_CALL[op](store, filter, options);
    print({ operation: op, ...result }, () => `${op === 'delete' ? 'deleted' : `${VERB[op]}`}: ${countsText(result.counts)} in ${result.batches} batch${result.batches === 1 ? '' : 'es'}`);
  });
}
