/**
 * What the bench runs and at which sizes. `full` is `pnpm bench`; `quick` (`--quick`) is a
 * one-round smoke run with smaller sizes.
 */
import type { PruneUnderLoadOptions } from '../curves/prune.js';

export const SECTIONS = ['partial-index', 'poll', 'history', 'prune', 'backlog', 'processes', 'timers', 'throughput', 'ceiling', 'lateness', 'idle', 'network'] as const;
export type Section = (typeof SECTIONS)[number];

/** The key of `BenchResults` each section fills. */
export const RESULT_KEYS = {
  'partial-index': 'partialIndex',
  poll: 'poll',
  history: 'history',
  prune: 'prune',
  backlog: 'backlog',
  processes: 'processes',
  timers: 'timers',
  throughput: 'throughput',
  ceiling: 'ceiling',
  lateness: 'lateness',
  idle: 'idle',
  network: 'network',
} as const satisfies Record<Section, string>;

/** Section groups accepted by `--only` / `--skip`. */
export const SECTION_GROUPS: Readonly<Record<string, readonly Section[]>> = {
  seed: ['partial-index', 'poll'],
  curves: ['history', 'prune', 'backlog', 'processes', 'timers'],
  peers: ['throughput', 'ceiling', 'lateness', 'idle', 'network'],
};

export interface BenchSizes {
  readonly rounds: number;
  readonly partialIndex: { readonly tasks: number; readonly notDue: number };
  readonly poll: { readonly tasks: number; readonly spreadMs: number; readonly fastMs: number; readonly slowMs: number };
  readonly history: { readonly sizes: readonly number[]; readonly explainProbes: number; readonly claimProbes: number };
  /**
   * Claim while pruning: the history pruned is the largest `history` size; `probes` before and after
   * each, at most `maxDuringProbes` during; `trickle` tasks due per probe, `pauseMs` between probes.
   */
  readonly prune: Omit<PruneUnderLoadOptions, 'url' | 'schema' | 'finished' | 'notDue'>;
  readonly backlog: { readonly sizes: readonly number[]; readonly probes: number; readonly capMs: number };
  readonly processes: { readonly counts: readonly number[]; readonly tasks: number; readonly capMs: number };
  readonly timers: { readonly sizes: readonly number[]; readonly spanTicks: number };
  readonly throughput: { readonly tasks: number; readonly processes: readonly number[]; readonly concurrency: number; readonly capMs: number };
  /** The SQL-only ceiling: `tasks` due tasks per batch size, `processes` loops of one connection each. */
  readonly ceiling: { readonly tasks: number; readonly processes: number; readonly batches: readonly number[] };
  /** Throughput and lateness through a TCP proxy adding `latencyMs` each way (lateness sizes as `lateness`). */
  readonly network: { readonly latencyMs: number; readonly tasks: number; readonly processes: number; readonly capMs: number };
  readonly lateness: { readonly tasks: number; readonly spreadMs: number; readonly processes: number; readonly leadMs: number; readonly graceMs: number };
  readonly idle: { readonly processes: number; readonly windowMs: number; readonly settleMs: number };
}

export const FULL: BenchSizes = {
  rounds: 3,
  partialIndex: { tasks: 40_000, notDue: 20_000 },
  poll: { tasks: 60, spreadMs: 3_000, fastMs: 50, slowMs: 500 },
  history: { sizes: [10_000, 100_000, 1_000_000], explainProbes: 200, claimProbes: 50 },
  prune: { batchSize: 1_000, probes: 300, maxDuringProbes: 50_000, trickle: 2, pauseMs: 5, slowClaimMs: 50 },
  backlog: { sizes: [1_000, 10_000, 100_000], probes: 20, capMs: 4_000 },
  processes: { counts: [1, 2, 3, 6], tasks: 10_000, capMs: 15_000 },
  timers: { sizes: [10_000, 100_000, 1_000_000], spanTicks: 200_000 },
  throughput: { tasks: 10_000, processes: [1, 3], concurrency: 10, capMs: 20_000 },
  ceiling: { tasks: 30_000, processes: 3, batches: [10, 50, 200] },
  network: { latencyMs: 0.5, tasks: 10_000, processes: 3, capMs: 20_000 },
  // 60 s windows (issue 24): the reclaim sweep and the presence beat run every 15 s, so a 10 s window
  // could miss them; each window now holds four of each, in the lateness figures and the idle count.
  lateness: { tasks: 600, spreadMs: 60_000, processes: 3, leadMs: 1_500, graceMs: 25_000 },
  idle: { processes: 3, windowMs: 60_000, settleMs: 1_500 },
};

export const QUICK: BenchSizes = {
  rounds: 1,
  partialIndex: { tasks: 40_000, notDue: 20_000 },
  poll: { tasks: 30, spreadMs: 2_000, fastMs: 50, slowMs: 500 },
  history: { sizes: [10_000, 100_000], explainProbes: 50, claimProbes: 20 },
  prune: { batchSize: 1_000, probes: 100, maxDuringProbes: 50_000, trickle: 2, pauseMs: 5, slowClaimMs: 50 },
  backlog: { sizes: [1_000, 10_000], probes: 10, capMs: 2_000 },
  processes: { counts: [1, 3], tasks: 3_000, capMs: 8_000 },
  timers: { sizes: [10_000, 100_000], spanTicks: 200_000 },
  throughput: { tasks: 3_000, processes: [1, 3], concurrency: 10, capMs: 8_000 },
  ceiling: { tasks: 10_000, processes: 3, batches: [10, 50, 200] },
  network: { latencyMs: 0.5, tasks: 3_000, processes: 3, capMs: 8_000 },
  lateness: { tasks: 300, spreadMs: 3_000, processes: 3, leadMs: 1_500, graceMs: 10_000 },
  idle: { processes: 3, windowMs: 3_000, settleMs: 1_000 },
};

/**
 * Resolves `--only` / `--skip` lists (section names or groups) to the sections to run, in order.
 * @throws Error for an unknown name
 */
export function selectSections(only: readonly string[] | undefined, skip: readonly string[] | undefined): Section[] {
  const expand = (names: readonly string[]): Set<Section> => {
    const out = new Set<Section>();
    for (const name of names) {
      const group = SECTION_GROUPS[name];
      if (group) for (const s of group) out.add(s);
      else if ((SECTIONS as readonly string[]).includes(name)) out.add(name as Section);
      else throw new Error(`unknown section "${name}"; known: ${[...Object.keys(SECTION_GROUPS), ...SECTIONS].join(', ')}`);
    }
    return out;
  };
  const chosen = only && only.length > 0 ? expand(only) : new Set<Section>(SECTIONS);
  const skipped = expand(skip ?? []);
  return SECTIONS.filter((s) => chosen.has(s) && !skipped.has(s));
}
