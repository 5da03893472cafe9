/** The Markdown of the feature-cost section (`evidence/bench/feature-cost.md`) and its report fragment. */
import type { FeatureCostRun, StatementTexts, VariantName } from './measure.js';
import { FINISH_HANDOFF_MIGRATION_VERSION } from '@postpone/postgres';
import { ALL_VARIANTS } from './measure.js';
import type { OldCode } from './old-build.js';

export interface FeatureCostContext {
  readonly date: string;
  readonly machine: string;
  readonly postgres: string;
  readonly node: string;
  readonly tasks: number;
  readonly processes: number;
  readonly batch: number;
  readonly rounds: number;
  readonly old: OldCode;
  readonly head: string;
  readonly loadStart: readonly number[];
  readonly loadEnd: readonly number[];
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }).replaceAll(',', ' ');
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** A figure over the rounds: median and the range, e.g. `1 234 (1 100–1 300)`. */
function spread(runs: readonly FeatureCostRun[], pick: (r: FeatureCostRun) => number, digits = 0): string {
  const xs = runs.map(pick);
  return `${fmt(median(xs), digits)} (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;
}

/** Median of `latest` over median of `before`, as a signed percentage. */
function change(runs: readonly FeatureCostRun[], variant: VariantName, pick: (r: FeatureCostRun) => number): string {
  const base = median(runs.filter((r) => r.variant === 'before').map(pick));
  const value = median(runs.filter((r) => r.variant === variant).map(pick));
  if (base === 0) return 'n/a';
  const pct = ((value - base) / base) * 100;
  return `${pct >= 0 ? '+' : '−'}${fmt(Math.abs(pct), 1)} %`;
}

/** Lines of `a` not in `b` and of `b` not in `a` (a set difference of trimmed lines: enough to name what changed). */
export function lineChanges(a: string, b: string): { removed: string[]; added: string[] } {
  const la = a.split('\n').map((l) => l.trim());
  const lb = b.split('\n').map((l) => l.trim());
  return { removed: la.filter((l) => !lb.includes(l)), added: lb.filter((l) => !la.includes(l)) };
}

function textSection(texts: readonly StatementTexts[]): string[] {
  const before = texts.find((t) => t.variant === 'before');
  const latest = texts.find((t) => t.variant === 'latest');
  if (before === undefined || latest === undefined) return [];
  const out: string[] = ['**The statements sent for a plain task** (schema name `fc`; `latest-bare` sends `latest`’s):', ''];
  for (const [name, a, b] of [
    ['claim (`taskClaim`)', before.claim, latest.claim],
    ['completion (`taskCompleteManyFenced`)', before.complete, latest.complete],
  ] as const) {
    if (a === b) {
      out.push(`- ${name}: byte-identical (${a.length} characters).`);
      continue;
    }
    const { removed, added } = lineChanges(a, b);
    out.push(`- ${name}: changed, ${a.length} → ${b.length} characters; lines only before: ${removed.length}, lines only now: ${added.length}:`);
    out.push('', '  ```diff', ...removed.map((l) => `  - ${l}`), ...added.map((l) => `  + ${l}`), '  ```');
  }
  out.push('');
  return out;
}

function triggerSummary(runs: readonly FeatureCostRun[]): string[] {
  const names = [...new Set(runs.flatMap((r) => r.completeProbe.triggers.map((t) => t.name)))].sort();
  if (names.length === 0) return [];
  const out = ['**Triggers fired by one completion of a batch** (EXPLAIN ANALYZE probe, `latest`; median and range over the rounds):', '', '| trigger | calls | ms |', '|---|---|---|'];
  const latest = runs.filter((r) => r.variant === 'latest');
  for (const name of names) {
    const ts = latest.map((r) => r.completeProbe.triggers.find((t) => t.name === name));
    const calls = ts.map((t) => t?.calls ?? 0);
    const ms = ts.map((t) => t?.ms ?? 0);
    out.push(`| \`${name}\` | ${fmt(median(calls))} | ${fmt(median(ms), 3)} (${fmt(Math.min(...ms), 3)}–${fmt(Math.max(...ms), 3)}) |`);
  }
  out.push(
    '',
    `The probed completion itself took ${spread(latest, (r) => r.completeProbe.ms, 3)} ms, its triggers included. The probe is the first call of each trigger function in its session, so its times include compiling the PL/pgSQL function; and EXPLAIN's buffer counts leave out what triggers read (the drain's \`pg_stat_statements\` figures include it). A plain completion hands nothing over: \`task_finished\` finds the setting empty and returns.`,
    '',
  );
  return out;
}

/** Within the min–max of `before`'s rounds, or outside it (and which way). */
function againstSpread(runs: readonly FeatureCostRun[], variant: VariantName, pick: (r: FeatureCostRun) => number): string {
  const base = runs.filter((r) => r.variant === 'before').map(pick);
  const value = median(runs.filter((r) => r.variant === variant).map(pick));
  if (value < Math.min(...base)) return 'below the range of before’s rounds';
  if (value > Math.max(...base)) return 'above the range of before’s rounds';
  return 'within the range of before’s rounds';
}

/** The figures read out: what is load-independent, and where the rates stand against the rounds' spread. */
function reading(runs: readonly FeatureCostRun[], batch: number): string[] {
  const m = (v: VariantName, pick: (r: FeatureCostRun) => number) => median(runs.filter((r) => r.variant === v).map(pick));
  const has = (v: VariantName) => runs.some((r) => r.variant === v);
  const completeBuf = (v: VariantName) => m(v, (r) => r.complete.buffersPerCall);
  const out = ['**Reading.**', ''];
  out.push(
    `- Load-independent: WAL per task ${fmt(m('before', (r) => r.walPerTask))} B before, ${fmt(m('latest', (r) => r.walPerTask))} B latest (${change(runs, 'latest', (r) => r.walPerTask)}); claim buffers per call ${change(runs, 'latest', (r) => r.claim.buffersPerCall)}; shared buffers per task ${fmt(m('before', (r) => r.buffersPerTask), 2)} → ${fmt(m('latest', (r) => r.buffersPerTask), 2)} (${change(runs, 'latest', (r) => r.buffersPerTask)}): the completion ${fmt(completeBuf('latest') - completeBuf('before'), 1)} more buffers per call of ${batch} (${fmt((completeBuf('latest') - completeBuf('before')) / batch, 2)} per task), the claim ${fmt(m('latest', (r) => r.claim.buffersPerCall) - m('before', (r) => r.claim.buffersPerCall), 1)} per call (in the drain, with its SKIP LOCKED contention; the probe alone on the server: ${fmt(m('latest', (r) => r.claimProbe.buffers) - m('before', (r) => r.claimProbe.buffers))} buffers, the claim’s two look-ups of \`pause\`).`,
  );
  if (has('latest-bare')) {
    out.push(
      `- latest-bare completes at ${fmt(completeBuf('latest-bare'), 1)} buffers per call (before: ${fmt(completeBuf('before'), 1)}, latest: ${fmt(completeBuf('latest'), 1)}): what the schema objects of the features still cost a plain completion, apart from the statements.`,
    );
  }
  if (has('latest-pre-25')) {
    out.push(
      `- The finish hand-off (migration ${FINISH_HANDOFF_MIGRATION_VERSION}) saves ${fmt(completeBuf('latest-pre-25') - completeBuf('latest'), 1)} buffers per completion of ${batch} (${fmt((completeBuf('latest-pre-25') - completeBuf('latest')) / batch, 2)} per task): with the triggers of migrations 18, 20 and 21 (a transition table or row-level), PostgreSQL fetched each deleted row once more to hand it to them; shared buffers per task were ${change(runs, 'latest-pre-25', (r) => r.buffersPerTask)} against before, ${change(runs, 'latest', (r) => r.buffersPerTask)} with it; server time per completion ${change(runs, 'latest-pre-25', (r) => r.complete.usPerCall)} against before, ${change(runs, 'latest', (r) => r.complete.usPerCall)} with it.`,
    );
  }
  out.push(
    `- Load-dependent: tasks/s of latest is ${change(runs, 'latest', (r) => r.tasksPerS)} against before, ${againstSpread(runs, 'latest', (r) => r.tasksPerS)}; server time per task ${change(runs, 'latest', (r) => r.serverUsPerTask)} (${againstSpread(runs, 'latest', (r) => r.serverUsPerTask)}); server time per completion ${change(runs, 'latest', (r) => r.complete.usPerCall)} (${againstSpread(runs, 'latest', (r) => r.complete.usPerCall)}). Times on this shared machine vary between rounds of one variant by the ranges in the table.`,
    '',
  );
  return out;
}

/** The full section. */
export function featureCostMarkdown(ctx: FeatureCostContext, texts: readonly StatementTexts[], runs: readonly FeatureCostRun[]): string {
  const by = (v: VariantName) => runs.filter((r) => r.variant === v);
  const rows: [string, (r: FeatureCostRun) => number, number][] = [
    [`tasks/s (${ctx.processes} loops)`, (r) => r.tasksPerS, 0],
    ['WAL bytes per task (drain, whole server)', (r) => r.walPerTask, 0],
    ['server µs per task (claim + completion)', (r) => r.serverUsPerTask, 1],
    ['shared buffers per task', (r) => r.buffersPerTask, 2],
    ['claim: µs per call', (r) => r.claim.usPerCall, 0],
    ['claim: buffers per call', (r) => r.claim.buffersPerCall, 1],
    ['claim: WAL bytes per call', (r) => r.claim.walPerCall, 0],
    ['completion: µs per call', (r) => r.complete.usPerCall, 0],
    ['completion: buffers per call', (r) => r.complete.buffersPerCall, 1],
    ['completion: WAL bytes per call', (r) => r.complete.walPerCall, 0],
    [`claim probe: buffers (EXPLAIN, ${ctx.batch} rows)`, (r) => r.claimProbe.buffers, 0],
    [`completion probe: buffers (EXPLAIN, ${ctx.batch} rows)`, (r) => r.completeProbe.buffers, 0],
  ];
  const present = ALL_VARIANTS.filter((v) => v !== 'before' && by(v).length > 0);
  const table = [
    `| figure | before (v${by('before')[0]?.schemaVersion ?? '?'}) | ${present.map((v) => `${v} (v${by(v)[0]?.schemaVersion ?? '?'}) | vs before`).join(' | ')} |`,
    `|---|---|${present.map(() => '---|---|').join('')}`,
    ...rows.map(([name, pick, d]) => `| ${name} | ${spread(by('before'), pick, d)} | ${present.map((v) => `${spread(by(v), pick, d)} | ${change(runs, v, pick)}`).join(' | ')} |`),
  ];
  const perRound = [
    '| round | variant | load (1 min) | tasks/s | WAL B/task | server µs/task | buffers/task | claim µs | completion µs |',
    '|---|---|---|---|---|---|---|---|---|',
    ...runs.map(
      (r) =>
        `| ${r.round} | ${r.variant} | ${fmt(r.load1, 1)} | ${fmt(r.tasksPerS)} | ${fmt(r.walPerTask)} | ${fmt(r.serverUsPerTask, 1)} | ${fmt(r.buffersPerTask, 2)} | ${fmt(r.claim.usPerCall)} | ${fmt(r.complete.usPerCall)} |`,
    ),
  ];
  return [
    '## What plain tasks cost since the flow-control and composition features',
    '',
    'Issue #28: "throughput of unlimited kinds in the bench unchanged within noise"; issue #29: "the claim and completion of tasks that use none of these features cost the same as before". A plain task here has no `limitKey`, no `after`, no batch, and its kind and queue have no limit, cap or pause.',
    '',
    `Run \`pnpm bench:feature-cost\` (\`apps/bench/src/feature-cost\`): ${ctx.date}, commit ${ctx.head}; ${ctx.machine}; ${ctx.postgres} (embedded, \`pg_stat_statements\` preloaded); Node.js ${ctx.node}. Load average (1, 5, 15 min) ${ctx.loadStart.map((l) => fmt(l, 1)).join(', ')} at the start, ${ctx.loadEnd.map((l) => fmt(l, 1)).join(', ')} at the end — the machine was shared with other work, so rates are noisy; buffers and WAL are not.`,
    '',
    'The variants, on one server, in one run, each run on a fresh schema:',
    '',
    `- **before**: commit ${ctx.old.subject.split(' ')[0]} (schema version ${by('before')[0]?.schemaVersion ?? '?'}, the last before migrations 15–21), built from git; its own \`migrate()\`, \`scheduleMany\`, claim and \`completeMany\` statements.`,
    '- **latest**: this commit’s schema and statements.',
    '- **latest-bare**: this commit’s, with the objects the features put on the hot path dropped after `migrate()`: the statement-level trigger `task_finished` (25) and the partial index `task_limit_key_idx` (19). Same statements as latest: it separates what the schema objects cost from what the statement texts cost.',
    ...(present.includes('latest-pre-25') ? ['- **latest-pre-25**: this commit’s, with the AFTER DELETE triggers as migration 24 left them put back in place of `task_finished`: `task_finished_notice` (18) and `task_dependency_release` (20), statement-level with a transition table, and `task_batch_members_finished` (21), row-level. What the finish hand-off saves.'] : []),
    '',
    `Each run: ${fmt(ctx.tasks)} due tasks scheduled, \`VACUUM ANALYZE\` of \`task\`, one EXPLAIN (ANALYZE, BUFFERS) probe of a claim and a completion of ${ctx.batch}, a CHECKPOINT, then ${ctx.processes} processes each looping the store’s claim (limit ${ctx.batch}) and \`completeMany\` (the move to history, DONE kept) as prepared statements until the queue is empty. ${ctx.rounds} rounds, the variants’ order alternating (as listed, then the reverse). Per statement: \`pg_stat_statements\` over the drain (server execution time, shared buffers hit + read, WAL; \`track = top\`, so trigger work counts in the statement that fired it). Median (min–max) over the rounds:`,
    '',
    ...table,
    '',
    ...reading(runs, ctx.batch),
    ...triggerSummary(runs),
    ...textSection(texts),
    'Every round:',
    '',
    ...perRound,
    '',
  ].join('\n');
}

/** The report fragment (`evidence/bench/fragments/feature-cost.md`): the section's heading, its summary table and reading, and a link to the whole section. */
export function featureCostFragment(section: string): string {
  const lines = section.split('\n');
  const start = lines.findIndex((l) => l.startsWith('| figure |'));
  const end = lines.findIndex((l) => l.startsWith('**Triggers fired'));
  return [
    lines[0],
    '',
    'Plain tasks (no `limitKey`, no `after`, no batch, no limits) on the code and schema from before migrations 15–21 against today’s, alternating on one server (`pnpm bench:feature-cost`); method, machine and load, triggers, statement texts and every round in [feature-cost.md](feature-cost.md). Median (min–max) over the rounds:',
    '',
    ...lines.slice(start, end < 0 ? undefined : end),
  ]
    .join('\n')
    .trimEnd()
    .concat('\n');
}
