/**
 * The feature-cost section without a database: the Markdown rendered from given runs (medians,
 * ranges, changes against `before`, the reading), the statement-text comparison, the report
 * fragment, and the command line refusing a bad `--variants` before it builds or starts anything.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { FeatureCostRun, VariantName } from '../../src/feature-cost/measure.js';
import { featureCostFragment, featureCostMarkdown, lineChanges } from '../../src/feature-cost/report.js';

const MAIN = fileURLToPath(new URL('../../dist/feature-cost/main.js', import.meta.url));

function run(round: number, variant: VariantName, tasksPerS: number, completeBuffers: number): FeatureCostRun {
  const figures = (buffersPerCall: number) => ({ calls: 40, usPerCall: 1_000, buffersPerCall, walPerCall: 20_000 });
  return {
    round,
    variant,
    schemaVersion: variant === 'before' ? 14 : 23,
    tasks: 1_950,
    seconds: 1_950 / tasksPerS,
    tasksPerS,
    walPerTask: 990,
    serverUsPerTask: 50,
    buffersPerTask: 19 + (completeBuffers - 460) / 50,
    claim: figures(500),
    complete: figures(completeBuffers),
    claimProbe: { rows: 50, buffers: variant === 'before' ? 479 : 483, ms: 1, triggers: [] },
    completeProbe: { rows: 50, buffers: 158, ms: 2, triggers: variant === 'before' ? [] : [{ name: 'task_dependency_release', calls: 1, ms: 0.5 }] },
    load1: 3,
  };
}

const runs = [run(1, 'before', 1_000, 460), run(1, 'latest', 900, 510), run(2, 'latest', 1_100, 510), run(2, 'before', 1_200, 460), run(3, 'before', 800, 460), run(3, 'latest', 1_000, 510)];
const ctx = {
  date: '2026-12-04 16:00 UTC',
  machine: 'test CPU × 2 cores, 4 GB',
  postgres: 'PostgreSQL 17.10',
  node: '20.20.2',
  tasks: 2_000,
  processes: 3,
  batch: 50,
  rounds: 3,
  old: { sha: 'abc', subject: 'abc1234 2026-12-04 old', dir: '/tmp/x', cached: true },
  head: 'def5678',
  loadStart: [3, 3, 3],
  loadEnd: [3, 3, 3],
};

describe('feature-cost report', () => {
  it('renders medians with ranges and the change against before, and reads the buffers', () => {
    const text = featureCostMarkdown(ctx, [{ variant: 'before', claim: 'a\nb', complete: 'x' }, { variant: 'latest', claim: 'a\nb', complete: 'x\ny' }], runs);
    expect(text).toContain('| tasks/s (3 loops) | 1 000 (800–1 200) | 1 000 (900–1 100) | +0.0 % |');
    expect(text).toContain('| completion: buffers per call | 460.0 (460.0–460.0) | 510.0 (510.0–510.0) | +10.9 % |');
    expect(text).toContain('the completion 50.0 more buffers per call of 50 (1.00 per task)');
    expect(text).toContain('- claim (`taskClaim`): byte-identical (3 characters).');
    expect(text).toContain('  + y');
    expect(text).toContain('| `task_dependency_release` | 1 | 0.500 (0.500–0.500) |');
    const fragment = featureCostFragment(text);
    expect(fragment.startsWith('## What plain tasks cost')).toBe(true);
    expect(fragment).toContain('| figure |');
    expect(fragment).toContain('**Reading.**');
    expect(fragment).not.toContain('**Triggers fired');
  });

  it('lineChanges names the lines only in one text', () => {
    expect(lineChanges('a\n  b\nc', 'a\nb\nd')).toEqual({ removed: ['c'], added: ['d'] });
  });

  it('the command refuses an unknown variant, or variants without before, before anything starts', () => {
    const unknown = spawnSync(process.execPath, [MAIN, '--variants', 'before,nope'], { encoding: 'utf8', timeout: 30_000 });
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain('--variants: unknown variant nope');
    const noBefore = spawnSync(process.execPath, [MAIN, '--variants', 'latest'], { encoding: 'utf8', timeout: 30_000 });
    expect(noBefore.status).not.toBe(0);
    expect(noBefore.stderr).toContain('--variants must include before');
  });
});
