/**
 * `evidence/bench/citus.md` from the runs of `pnpm bench --citus` (kept beside it in
 * `citus-results.json`, newest last): the newest run in full — medians over its rounds with the
 * spread (min–max) of each figure — and one line of headline figures per earlier run, so a run on a
 * loaded machine does not silently replace a quieter one.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CitusBenchOptions, SetupName, SetupRound } from './measure.js';
import { SETUPS } from './measure.js';

export interface CitusRun {
  readonly at: string;
  readonly commit: string;
  readonly cpus: number;
  readonly loadBefore: number;
  readonly loadAfter: number;
  readonly durationS: number;
  readonly versions: { readonly postgres: string; readonly citus: string };
  readonly options: CitusBenchOptions;
  readonly rounds: readonly SetupRound[];
}

const median = (v: readonly number[]): number => {
  if (v.length === 0) return 0;
  const s = [...v].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

function fmt(n: number, digits: number): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }).replace(/,/g, ' ');
}

/** `median (min–max)` of the values, with `digits` decimals. */
function spread(values: readonly number[], digits = 0): string {
  if (values.length === 0) return '–';
  if (values.length === 1) return fmt(values[0] as number, digits);
  return `${fmt(median(values), digits)} (${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)})`;
}

const LABEL: Record<SetupName, string> = {
  pg15: 'plain PostgreSQL 15, 2 schemas',
  'citus-1w': 'Citus, 2 groups on 1 worker',
  'citus-2w': 'Citus, 2 groups on 2 workers',
};

/** The runs saved in `dir`'s citus-results.json (an array; a single saved run is read as one). */
function savedRuns(dir: string): CitusRun[] {
  const file = join(dir, 'citus-results.json');
  if (!existsSync(file)) return [];
  const saved = JSON.parse(readFileSync(file, 'utf8')) as CitusRun | CitusRun[];
  return Array.isArray(saved) ? saved : [saved];
}

/** Median over a run's rounds of `pick` for set-up `s`. */
function runMedian(run: CitusRun, s: SetupName, pick: (r: SetupRound) => number): number {
  return median(run.rounds.filter((r) => r.setup === s).map(pick));
}

/** Adds `run` to citus-results.json in `dir` and writes citus.md. @returns the path of citus.md */
export function writeCitusReport(dir: string, run: CitusRun): string {
  mkdirSync(dir, { recursive: true });
  const runs = [...savedRuns(dir), run];
  writeFileSync(join(dir, 'citus-results.json'), `${JSON.stringify(runs, null, 1)}\n`);
  return renderCitusReport(dir, runs);
}

/** Writes citus.md in `dir` from `runs` (newest last). @returns its path */
export function renderCitusReport(dir: string, runs: readonly CitusRun[]): string {
  const run = runs.at(-1) as CitusRun;
  const by = (s: SetupName) => run.rounds.filter((r) => r.setup === s);
  const o = run.options;
  const lines: string[] = [];
  lines.push('# Postpone on Citus: plain PostgreSQL 15 vs Citus 13.2 on 1 and 2 worker nodes');
  lines.push('');
  lines.push(
    `Written by \`pnpm bench --citus\` (apps/bench/src/citus). The tables below are the newest of ${runs.length} run${runs.length === 1 ? '' : 's'} (each run's headline figures: "Every run"): ${run.at}, commit ${run.commit}, ${run.durationS} s. ${run.versions.postgres}; ${run.versions.citus}. ` +
      `A throwaway 3-node cluster on loopback (coordinator + 2 workers, \`fsync=off\`, \`synchronous_commit=off\`: not durable, the same on every set-up) started from \`CITUS_TARBALL\`, ` +
      `\`pg_stat_statements\` loaded on every node. This machine: ${run.cpus} cores shared with other work (1-minute load average ${run.loadBefore.toFixed(1)} at the start, ${run.loadAfter.toFixed(1)} at the end). ` +
      `Median over ${o.rounds} round${o.rounds === 1 ? '' : 's'}, the spread (min–max) in brackets; the set-ups run in turn, the first one moving by one each round.`,
  );
  lines.push('');
  lines.push('Every set-up is the sharded front (`createShardedStore`, docs/sharding.md) over two Postpone schemas (shard groups), `pg` driver:');
  lines.push('');
  lines.push('- **plain PostgreSQL 15**: a database without the Citus extension on worker 1\'s server (same binary and settings), two schemas;');
  lines.push('- **Citus, 1 worker**: through the coordinator, both groups placed on worker 1 (`citus_schema_move`);');
  lines.push('- **Citus, 2 workers**: through the coordinator, group 0 on worker 1, group 1 on worker 2.');
  lines.push('');
  lines.push(
    `Per round: ${fmt(o.tasks, 0)} keyless tasks due now, \`scheduleMany\` in batches of ${o.batch} (each batch one group, round-robin); then ${o.loops} concurrent claim loops in one process drain them (\`claim\` limit ${o.claimLimit}, \`completeMany\` of each claim's tasks, DONE kept in history).`,
  );
  lines.push('');
  lines.push('## Throughput and claim latency');
  lines.push('');
  lines.push('| set-up | placement of groups 0, 1 | `scheduleMany` rows/s | drain tasks/s | claim p50 ms | claim p99 ms | empty claims |');
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const s of SETUPS) {
    const r = by(s);
    if (r.length === 0) continue;
    lines.push(
      `| ${LABEL[s]} | ${(r[0] as SetupRound).placement.join(', ')} | ${spread(r.map((x) => x.scheduleRowsPerSec))} | ${spread(r.map((x) => x.drainTasksPerSec))} | ${spread(
        r.map((x) => x.claimMs.p50),
        1,
      )} | ${spread(r.map((x) => x.claimMs.p99), 1)} | ${spread(r.map((x) => x.emptyClaims))} |`,
    );
  }
  lines.push('');
  lines.push('Claim latency: every `claim` through the front that took at least one task, client side (the front\'s call, one statement to one group).');
  lines.push('');
  lines.push('## Statements and server time per task, per node');
  lines.push('');
  lines.push(
    "`pg_stat_statements` of each node (the set-up's database), reset before the schedule and read after the drain, divided by the tasks: one task's share of the schedule, claim and complete statements (`BEGIN`/`COMMIT` included). Left out: the bench's own reads of `pg_stat_statements` and Citus's background work (distributed deadlock detection, 2PC recovery). On the coordinator, a statement's time is end to end: it includes the wait for the worker that ran it, so the coordinator's own cost is roughly its time minus the workers'.",
  );
  lines.push('');
  lines.push('| set-up | node | statements/task | server ms/task | two-phase commits (`PREPARE TRANSACTION`)/task |');
  lines.push('| --- | --- | ---: | ---: | ---: |');
  for (const s of SETUPS) {
    const r = by(s);
    const names = r[0]?.nodes.map((n) => n.node) ?? [];
    for (const node of names) {
      const costs = r.map((x) => x.nodes.find((n) => n.node === node)).filter((n) => n !== undefined);
      lines.push(`| ${LABEL[s]} | ${node} | ${spread(costs.map((c) => c.statementsPerTask), 3)} | ${spread(costs.map((c) => c.serverMsPerTask), 3)} | ${spread(costs.map((c) => c.preparedPerTask ?? 0), 3)} |`);
    }
  }
  lines.push('');
  lines.push('What these statements are, in the last round of each set-up (each node\'s most frequent texts, normalised by `pg_stat_statements`, first 70 characters; per task):');
  lines.push('');
  lines.push('| set-up | node | statement | per task | ms per task |');
  lines.push('| --- | --- | --- | ---: | ---: |');
  for (const s of SETUPS) {
    const last = by(s).at(-1);
    for (const t of last?.top ?? []) {
      for (const st of t.statements) {
        const text = st.query.replace(/`/g, "'").replace(/\|/g, '\\|');
        lines.push(`| ${LABEL[s]} | ${t.node} | \`${text}\` | ${fmt(st.perTask, 3)} | ${fmt(st.msPerTask, 3)} |`);
      }
    }
  }
  lines.push('');
  lines.push('## Coordinator overhead per statement');
  lines.push('');
  lines.push(
    `One pending task of group 0; ${o.probes} times in turn, the same single-row statement by id — \`select id, state from … where id = $1\` and \`update … set due_at = due_at where id = $1\` — sent straight to the group's shard table on its worker (\`<schema>.task_<shardid>\`) and to \`<schema>.task\` through the coordinator, which routes it to that worker (a single-shard router statement). Client-side latency, ms; "extra" is the difference of the medians.`,
  );
  lines.push('');
  lines.push('| set-up | read direct p50 / p99 | read via coordinator p50 / p99 | read extra | update direct p50 / p99 | update via coordinator p50 / p99 | update extra |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of SETUPS) {
    const r = by(s);
    if (r.length === 0) continue;
    const dr = `${spread(r.map((x) => x.overhead.direct.read.p50), 2)} / ${spread(r.map((x) => x.overhead.direct.read.p99), 2)}`;
    const du = `${spread(r.map((x) => x.overhead.direct.update.p50), 2)} / ${spread(r.map((x) => x.overhead.direct.update.p99), 2)}`;
    const co = r.map((x) => x.overhead.coordinator).filter((c) => c !== null);
    if (co.length === 0) {
      lines.push(`| ${LABEL[s]} | ${dr} | – (no coordinator) | – | ${du} | – | – |`);
      continue;
    }
    const cr = `${spread(co.map((c) => c.read.p50), 2)} / ${spread(co.map((c) => c.read.p99), 2)}`;
    const cu = `${spread(co.map((c) => c.update.p50), 2)} / ${spread(co.map((c) => c.update.p99), 2)}`;
    const extraRead = r.map((x) => (x.overhead.coordinator?.read.p50 ?? 0) - x.overhead.direct.read.p50);
    const extraUpdate = r.map((x) => (x.overhead.coordinator?.update.p50 ?? 0) - x.overhead.direct.update.p50);
    lines.push(`| ${LABEL[s]} | ${dr} | ${cr} | ${spread(extraRead, 2)} | ${du} | ${cu} | ${spread(extraUpdate, 2)} |`);
  }
  lines.push('');
  lines.push('## Every run');
  lines.push('');
  lines.push(
    'Headline medians of each run kept in `citus-results.json` (newest last): drain tasks/s and claim p50 per set-up, and the coordinator\'s extra latency on the routed read (median of the rounds, 1 and 2 worker set-ups). The load average shows how much else ran on the 2 cores.',
  );
  lines.push('');
  lines.push('| run | commit | rounds × tasks | load average start → end | drain tasks/s: plain / Citus 1w / Citus 2w | claim p50 ms: plain / 1w / 2w | read extra ms: 1w / 2w |');
  lines.push('| --- | --- | --- | --- | --- | --- | --- |');
  for (const r of runs) {
    const drain = SETUPS.map((s) => fmt(runMedian(r, s, (x) => x.drainTasksPerSec), 0)).join(' / ');
    const claim = SETUPS.map((s) => fmt(runMedian(r, s, (x) => x.claimMs.p50), 1)).join(' / ');
    const extra = (['citus-1w', 'citus-2w'] as const).map((s) => fmt(runMedian(r, s, (x) => (x.overhead.coordinator?.read.p50 ?? 0) - x.overhead.direct.read.p50), 2)).join(' / ');
    lines.push(`| ${r.at} | ${r.commit} | ${r.options.rounds} × ${fmt(r.options.tasks, 0)} | ${r.loadBefore.toFixed(1)} → ${r.loadAfter.toFixed(1)} | ${drain} | ${claim} | ${extra} |`);
  }
  lines.push('');
  lines.push('## What this machine cannot show');
  lines.push('');
  lines.push(
    `- **Scale-out.** The coordinator, both workers and the load generator share ${run.cpus} cores: a second worker node adds no CPU, so "2 workers" can only be as fast as "1 worker" plus whatever overlap of waits two servers give. The capacity past one machine (docs/scale.md) is a model built from these per-node costs, not a measurement of it.`,
  );
  lines.push('- **Network.** Loopback only: the coordinator-to-worker hop costs a local round trip here, more across hosts (add one network round trip per routed statement).');
  lines.push('- **Durability.** `fsync=off` on every node: commit cost (WAL flush; two-phase commit for a transaction that writes two nodes) is not in these figures.');
  lines.push('- **Absolute rates.** Other work shares the machine (load average above): compare set-ups within this run, not with other reports.');
  lines.push('');
  const path = join(dir, 'citus.md');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}
