/**
 * apps/bench/src/report — what a bench run is and what it found: the sections and their sizes
 * (`FULL`, `QUICK`), the shape of `results.json`, and the report written from it (`report.md` with
 * the targets checked, SVG charts rendered headless with Vega).
 */
export { FULL, QUICK, RESULT_KEYS, SECTION_GROUPS, SECTIONS, selectSections, type BenchSizes, type Section } from './config.js';
export { evaluateTargets, type TargetState, type TargetStatus } from './targets.js';
export { mergeResults } from './merge.js';
export type { BenchMeta, BenchResults, ThroughputSection, TimerQueueRow } from './results.js';
export { writeReport } from './write.js';
export { type LineChart, type LineDatum, lineSpec, renderSvg } from './chart.js';
