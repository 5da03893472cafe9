/**
 * Runs the selected sections in order against one PostgreSQL server and collects their results.
 * Seed and curve sections run in databases of their own; the side-by-side sections give every run
 * a fresh database (`RunDatabases` of `apps/bench/src/peers`). A section that fails is noted and
 * the bench goes on with the next one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import type { RunningDatabase } from '@postpone/embedded';
import { measureBacklogCurve } from './curves/backlog.js';
import { measureClaimWhilePruning } from './curves/prune.js';
import { measureHistoryCurve } from './curves/history.js';
import { measurePartialDueIndex } from './seed/partial-index.js';
import { measurePollTradeoff } from './seed/poll-interval.js';
import { measureProcessesCurve } from './curves/processes.js';
import { runHeap, runWheel, timerQueueInput } from './curves/timer-queues.js';
import { ceilingModes, runSqlCeiling } from './ceiling/ceiling.js';
import { runNetwork } from './net/index.js';
import { alternate } from './peers/alternate.js';
import type { Contender, RunContext } from './peers/contender.js';
import { createDatabase, dropDatabase, freshDatabaseName } from './peers/db/databases.js';
import { loadAdmin } from './peers/systems/registry.js';
import { nodeVersionOf, workerNode } from './peers/node24.js';
import { openStatementCounter } from './peers/db/statements.js';
import { RunDatabases } from './peers/run-databases.js';
import { runIdle } from './peers/idle.js';
import { runLateness } from './peers/lateness.js';
import { runThroughput } from './peers/throughput.js';
import type { SystemName } from './peers/protocol.js';
import { withClient } from './peers/db/admin.js';
import type { BenchResults } from './report/results.js';
import type { BenchSizes, Section } from './report/config.js';
import type { Progress } from './progress.js';

export interface BenchOptions {
  readonly db: RunningDatabase;
  readonly mode: 'full' | 'quick';
  readonly sizes: BenchSizes;
  readonly sections: readonly Section[];
  readonly systems: readonly SystemName[];
  readonly progress: Progress;
}

/** The libraries the report names (each a dependency of this package). */
const MEASURED_LIBRARIES = ['pg-boss', 'graphile-worker', 'heap-js', 'pg'] as const;

/** The installed version of `name`, resolved from this package; `unknown` when it cannot be read. */
function versionOf(name: string): string {
  try {
    // The entry point, then up to its package.json (not every package exports `./package.json`).
    let dir = dirname(createRequire(import.meta.url).resolve(name));
    for (let up = 0; up < 6; up++, dir = dirname(dir)) {
      const file = join(dir, 'package.json');
      if (!existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version: string };
      if (pkg.name === name) return pkg.version;
    }
    return 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Progress steps each section contributes (one per measured run). */
function stepsOf(section: Section, s: BenchSizes, contenders: number, discovering: number): number {
  switch (section) {
    case 'partial-index':
      return 1;
    case 'poll':
      return 2;
    case 'history':
      return s.history.sizes.length;
    case 'prune':
      return 1;
    case 'backlog':
      return s.backlog.sizes.length;
    case 'processes':
      return s.processes.counts.length;
    case 'timers':
      return s.timers.sizes.length * s.rounds;
    case 'throughput':
      return s.throughput.processes.length * contenders * s.rounds;
    case 'ceiling':
      return s.rounds;
    case 'network':
      return 2 * discovering * s.rounds;
    case 'lateness':
    case 'idle':
      return discovering * s.rounds;
  }
}

/** Runs `fn` in a fresh database of its own on the server, dropped afterwards. */
async function inOwnDatabase<T>(adminUrl: string, label: string, fn: (url: string) => Promise<T>): Promise<T> {
  const name = freshDatabaseName(`bench_${label}`);
  const url = await createDatabase(adminUrl, name);
  try {
    return await fn(url);
  } finally {
    await dropDatabase(adminUrl, name);
  }
}

export async function runBench(options: BenchOptions): Promise<BenchResults> {
  const { db, sizes: s, progress } = options;
  const adminUrl = db.url;
  const startedMs = Date.now();
  const counter = await openStatementCounter(adminUrl);
  const postgres = await withClient(adminUrl, async (c) => (await c.query<{ v: string }>('select version() as v')).rows[0]?.v ?? 'unknown');
  const admins = await Promise.all(options.systems.map((name) => loadAdmin(name)));
  const contenders: Contender[] = admins.flatMap((admin) => admin.settings.map((setting) => ({ admin, setting: setting.name })));
  // Lateness, idle and network measure how tasks are found: settings marked `throughputOnly` find them as another setting does.
  const discovering = contenders.filter((c) => c.admin.settings.find((x) => x.name === c.setting)?.throughputOnly !== true);
  // Worker processes run on Node.js 24 (fetched by scripts/node24.sh); Postpone tuned also on the bench's own Node.js as a second row.
  const workerNodeVersion = nodeVersionOf(workerNode());
  const parentRow: Contender[] = process.version === workerNodeVersion ? [] : contenders.filter((c) => c.admin.system === 'postpone' && c.setting === 'tuned').map((c) => ({ ...c, runtime: 'parent' }));
  const cpus = os.cpus();
  const results: BenchResults = {
    meta: {
      startedAt: new Date(startedMs).toISOString(),
      finishedAt: '',
      durationS: 0,
      mode: options.mode,
      sections: options.sections,
      sizes: s,
      node: process.version,
      workerNode: workerNodeVersion,
      postgres,
      cpu: cpus[0]?.model ?? 'unknown',
      cores: cpus.length,
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      database: db.embedded ? 'embedded' : 'DATABASE_URL',
      statementSource: counter.source,
      versions: Object.fromEntries(MEASURED_LIBRARIES.map((name) => [name, versionOf(name)])),
      loadAverage: { start: os.loadavg()[0] ?? Number.NaN, end: Number.NaN },
      notes: process.env.POSTPONE_BENCH_DONE === 'not-kept' ? ["Postpone ran with DONE not kept (--done-not-kept: the worker's keepDone false, the ceiling's taskCompleteManyDrop)"] : [],
    },
    settings: admins.map((a) => ({ system: a.system, settings: a.settings })),
  };
  const databases = new RunDatabases(adminUrl);
  const ctx: RunContext = { adminUrl, databases, counter };
  progress.addSteps(options.sections.reduce((n, section) => n + stepsOf(section, s, contenders.length, discovering.length), 0));
  if (options.sections.includes('throughput')) progress.addSteps(s.throughput.processes.length * parentRow.length * s.rounds);
  const label = (what: string) => progress.label(what);
  const step = (what: string) => progress.step(what);
  const peerHooks = (what: string) => ({
    before: (l: string, round: number) => label(`peers: ${what}, ${l}, round ${round}`),
    after: (l: string, round: number) => step(`peers: ${what}, ${l}, round ${round} done`),
  });

  const sectionRunners: Record<Section, () => Promise<void>> = {
    'partial-index': async () => {
      label('seed: partial due index EXPLAIN');
      results.partialIndex = await inOwnDatabase(adminUrl, 'pdi', (url) => measurePartialDueIndex({ url, schema: 'postpone', ...s.partialIndex }));
      step('seed: partial due index done');
    },
    poll: async () => {
      label(`seed: polling ${s.poll.fastMs} ms vs ${s.poll.slowMs} ms`);
      results.poll = await inOwnDatabase(adminUrl, 'poll', (url) =>
        measurePollTradeoff({ url, schemaPrefix: 'poll', fastMs: s.poll.fastMs, slowMs: s.poll.slowMs, load: { tasks: s.poll.tasks, spreadMs: s.poll.spreadMs } }),
      );
      step('seed: polling');
      step('seed: polling done');
    },
    history: async () => {
      label(`curves: idle claim vs history ${s.history.sizes[0]}`);
      results.history = await inOwnDatabase(adminUrl, 'history', (url) =>
        measureHistoryCurve({ url, schemaPrefix: 'history', ...s.history, onBuilt: (size) => step(`curves: history ${size} rows built`) }),
      );
    },
    prune: async () => {
      const finished = Math.max(...s.history.sizes);
      label(`curves: claim while pruning ${finished} finished rows`);
      results.prune = await inOwnDatabase(adminUrl, 'prune', (url) => measureClaimWhilePruning({ url, schema: 'prune', finished, ...s.prune }));
      step('curves: claim while pruning done');
    },
    backlog: async () => {
      label('curves: claim vs backlog');
      results.backlog = await measureBacklogCurve(ctx, {
        ...s.backlog,
        processes: 1,
        setting: 'tuned',
        onPoint: (p) => step(`curves: backlog ${p.backlog} done`),
      });
    },
    processes: async () => {
      label('curves: throughput vs worker processes');
      results.processes = await measureProcessesCurve(ctx, { ...s.processes, setting: 'tuned', onPoint: (p) => step(`curves: ${p.processes} processes done`) });
    },
    timers: async () => {
      results.timers = [];
      for (const timers of s.timers.sizes) {
        const input = timerQueueInput(timers, { spanTicks: s.timers.spanTicks });
        const row = { timers, wheel: [] as ReturnType<typeof runWheel>[], heap: [] as ReturnType<typeof runHeap>[] };
        for (let round = 1; round <= s.rounds; round++) {
          label(`curves: wheel vs heap, ${timers} timers, round ${round}`);
          row.wheel.push(runWheel(input));
          row.heap.push(runHeap(input));
          step(`curves: timers ${timers} round ${round} done`);
        }
        results.timers.push(row);
      }
    },
    throughput: async () => {
      results.throughput = [];
      for (const processes of s.throughput.processes) {
        const rows = await alternate(
          [...contenders, ...parentRow],
          s.rounds,
          (c) => runThroughput(ctx, c, { tasks: s.throughput.tasks, processes, concurrency: s.throughput.concurrency, capMs: s.throughput.capMs }),
          peerHooks(`throughput ${processes} process${processes === 1 ? '' : 'es'}`),
        );
        results.throughput.push({ processes, contenders: rows });
      }
    },
    ceiling: async () => {
      results.ceiling = [];
      for (let round = 1; round <= s.rounds; round++) {
        label(`peers: ceiling round ${round}`);
        // Both records of DONE alternate within the round (kept, not kept), as contenders do.
        for (const keepDone of ceilingModes()) results.ceiling.push(await runSqlCeiling(ctx, s.ceiling, keepDone));
        step(`peers: ceiling round ${round} done`);
      }
    },
    lateness: async () => {
      results.lateness = await alternate(discovering, s.rounds, (c) => runLateness(ctx, c, { ...s.lateness, concurrency: s.throughput.concurrency }), peerHooks('lateness'));
    },
    network: async () => {
      const n = s.network;
      results.network = await runNetwork(
        ctx,
        discovering,
        { latencyMs: n.latencyMs, rounds: s.rounds, throughput: { tasks: n.tasks, processes: n.processes, concurrency: s.throughput.concurrency, capMs: n.capMs }, lateness: s.lateness },
        { before: (l, round) => label(`network: ${l}, round ${round}`), after: (l, round) => step(`network: ${l}, round ${round} done`) },
      );
    },
    idle: async () => {
      results.idle = await alternate(discovering, s.rounds, (c) => runIdle(ctx, c, { ...s.idle, concurrency: s.throughput.concurrency }), peerHooks('idle'));
    },
  };

  try {
    for (const section of options.sections) {
      try {
        await sectionRunners[section]();
      } catch (error) {
        const message = `section ${section} failed: ${error instanceof Error ? error.message : String(error)}`;
        results.meta.notes.push(message);
        progress.log(message);
      }
    }
  } finally {
    await databases.dropTemplates().catch(() => undefined);
  }
  results.meta.loadAverage.end = os.loadavg()[0] ?? Number.NaN;
  results.meta.finishedAt = new Date().toISOString();
  results.meta.durationS = Math.round((Date.now() - startedMs) / 1000);
  return results;
}

