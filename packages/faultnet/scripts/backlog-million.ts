/**
 * `pnpm backlog-million [--tasks 1000000] [--concurrency 20] [--out evidence/backlog-million.md]
 * [--note "..."]`: the full-size `backlog_million` (issue #26 item 8) on a PostgreSQL server of its
 * own — a million tasks due at once, drained by four worker processes (pg and postgres.js, poll and
 * hybrid). Writes the report and exits 1 when a check failed. Not part of `pnpm test` (the
 * `backlog_million` case drains 200 000).
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { evidenceDir } from '@postpone/testkit';
import { backlogChecks, backlogMarkdown, runBacklog } from '../dist/backlog.js';
import { withCaseContext } from '../dist/case-context.js';
import { ALL_VARIANTS } from '../dist/fault-cases.js';
import { PgServer } from '../dist/faults/pg-server.js';

// A lone `--` (pnpm passes it on from `pnpm <script> -- --option`) is not an argument.
const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    tasks: { type: 'string', default: '1000000' },
    concurrency: { type: 'string', default: '20' },
    out: { type: 'string' },
    note: { type: 'string', default: '' },
  },
});
const tasks = Number(values.tasks);
const concurrency = Number(values.concurrency);
if (!Number.isInteger(tasks) || tasks < 1_000) throw new Error(`--tasks must be an integer ≥ 1000, got ${values.tasks}`);
if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`--concurrency must be a positive integer, got ${values.concurrency}`);
const started = new Date();
const log = (line: string) => console.log(`[backlog ${Math.round((Date.now() - started.getTime()) / 1000)}s] ${line}`);
const server = await PgServer.start();
let code = 1;
try {
  const report = await withCaseContext(server.url, 'backlog', (ctx) => runBacklog(ctx, { tasks, variants: ALL_VARIANTS, concurrency, drainTimeoutMs: 3_600_000, log }));
  const markdown = backlogMarkdown(report, started, values.note ?? '');
  const out = values.out === undefined ? join(evidenceDir(), 'backlog-million.md') : resolve(values.out);
  writeFileSync(out, markdown);
  console.log(markdown);
  code = backlogChecks(report).every((c) => c.ok) ? 0 : 1;
} finally {
  await server.close();
}
process.exit(code);
