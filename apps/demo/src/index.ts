/** @postpone/demo — the crash demo, usable from code (tests) as well as `pnpm demo`. */
export { parseDemoOptions } from './cli.js';
export { EXPIRE_KIND, type DemoOptions, type DiscoveryMode, type ExpirePayload } from './config.js';
export { buildReport, formatReport, type DemoReport, type Invariant, type KillRecord, type QueryCounts, type RestartRecord } from './report.js';
export { DemoInterrupted, runDemo } from './run-demo.js';
export { percentile, summarize, type Summary } from './stats.js';
