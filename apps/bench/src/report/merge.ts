/**
 * `pnpm bench --merge`: measure some sections again and fold them into a saved `results.json`, so
 * one section can be refreshed without the whole run. The report says which run each part is from.
 */
import { RESULT_KEYS, SECTIONS } from './config.js';
import type { BenchResults } from './results.js';
import { num } from './format.js';

/**
 * The sections `measured` ran replace those of `saved` (results and their sizes); everything else of
 * `saved` stays, with a note naming both runs.
 */
export function mergeResults(saved: BenchResults, measured: BenchResults): BenchResults {
  const m = measured.meta;
  const keys = m.sections.map((section) => RESULT_KEYS[section]);
  const sizes = { ...m.sizes, ...saved.meta.sizes, ...Object.fromEntries(keys.map((k) => [k, m.sizes[k]])) };
  const meta = {
    ...saved.meta,
    sections: SECTIONS.filter((x) => saved.meta.sections.includes(x) || m.sections.includes(x)),
    sizes,
    notes: [
      ...saved.meta.notes,
      `${m.sections.join(', ')} measured in a separate run (${m.mode}) on ${m.startedAt}, ${num(m.durationS)} s, 1-minute load average ${num(m.loadAverage.start, 1)} → ${num(m.loadAverage.end, 1)}; the other sections come from the run of ${saved.meta.startedAt}.`,
      ...m.notes,
    ],
  };
  const fresh = Object.fromEntries(keys.flatMap((k) => (measured[k] === undefined ? [] : [[k, measured[k]]])));
  return { ...saved, ...fresh, meta };
}
