import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CASE_ORDER, formatCase, recordCase, recordEnv } from '../src/evidence.js';

describe('evidence recorder', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'postpone-evidence-'));
    process.env.POSTPONE_EVIDENCE_DIR = dir;
  });
  afterEach(() => {
    delete process.env.POSTPONE_EVIDENCE_DIR;
    rmSync(dir, { recursive: true, force: true });
  });

  it('formats key=value pairs, arrays and decimals', () => {
    expect(formatCase('x_y', true, { a: 1, b: 2.345, c: [1, 2], d: 'two words' })).toBe('CASE x_y PASS a=1 b=2.3 c=[1,2] d=two_words');
    expect(formatCase('x_y', false, {})).toBe('CASE x_y FAIL');
  });

  it('orders output.txt as docs/contract.md#evidence and replaces a re-run case', () => {
    recordCase('retry_exhausted_dead', true, { attempts: 3 });
    recordCase('normal_three_workers', false, { completed: 1 });
    recordCase('normal_three_workers', true, { completed: 300 });
    const lines = readFileSync(join(dir, 'output.txt'), 'utf8').trim().split('\n');
    expect(lines).toEqual(['CASE normal_three_workers PASS completed=300', 'CASE retry_exhausted_dead PASS attempts=3']);
  });

  it('keeps every case line a partial run did not record, a new case not yet in the table too; drops other lines', () => {
    // What a committed output.txt looks like before a run of one package (the file lost 65 of its 72
    // lines twice when such a run's file was committed and the rebuild started from the cases folder).
    writeFileSync(
      join(dir, 'output.txt'),
      [
        'CASE backlog_million PASS tasks=1000000',
        'CASE normal_three_workers FAIL completed=1',
        'CASE retired_case PASS n=1',
        'not a case line',
        'CASE Bad_Name PASS',
        'CASE priority_order PASS order=ok',
        '',
      ].join('\n'),
    );
    recordCase('zz_unknown_new', true, { n: 2 });
    // A later record keeps the unknown case recorded before it (found in review: it was dropped).
    recordCase('normal_three_workers', true, { completed: 300 });
    const lines = readFileSync(join(dir, 'output.txt'), 'utf8').trim().split('\n');
    expect(lines).toEqual([
      'CASE normal_three_workers PASS completed=300',
      'CASE priority_order PASS order=ok',
      'CASE backlog_million PASS tasks=1000000',
      'CASE retired_case PASS n=1',
      'CASE zz_unknown_new PASS n=2',
    ]);
  });

  it('never takes a line from an earlier run left in the cases folder (it is gitignored and never cleared)', () => {
    writeFileSync(join(dir, 'output.txt'), 'CASE priority_order PASS order=committed\n');
    mkdirSync(join(dir, 'cases'));
    writeFileSync(join(dir, 'cases', 'priority_order.txt'), 'CASE priority_order FAIL order=last_month\n');
    recordCase('pause_resume', true, { n: 1 });
    expect(readFileSync(join(dir, 'output.txt'), 'utf8')).toBe('CASE priority_order PASS order=committed\nCASE pause_resume PASS n=1\n');
  });

  it('loses no line when processes record at the same time (4 processes × 15 cases)', { timeout: 60_000 }, async () => {
    const names = CASE_ORDER.slice(0, 60);
    const moduleUrl = new URL('../dist/evidence.js', import.meta.url).href;
    const child = (part: readonly string[]) =>
      new Promise<number | null>((resolve, reject) => {
        const script = `import { recordCase } from ${JSON.stringify(moduleUrl)}; for (const n of ${JSON.stringify(part)}) recordCase(n, true, { by: process.pid });`;
        const p = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, POSTPONE_EVIDENCE_DIR: dir }, stdio: ['ignore', 'ignore', 'inherit'] });
        p.on('error', reject);
        p.on('exit', resolve);
      });
    const codes = await Promise.all([0, 1, 2, 3].map((i) => child(names.slice(i * 15, i * 15 + 15))));
    expect(codes).toEqual([0, 0, 0, 0]);
    const lines = readFileSync(join(dir, 'output.txt'), 'utf8').trim().split('\n');
    expect(lines.map((l) => l.split(' ')[1])).toEqual(names);
  });

  it('merges env entries', () => {
    recordEnv({ node: 'v20', cpus: 2 });
    recordEnv({ cpus: 4, leaseMs: 1000 });
    expect(readFileSync(join(dir, 'env.txt'), 'utf8')).toBe('node: v20\ncpus: 4\nleaseMs: 1000\n');
  });

  it('rejects a case name that is not snake_case', () => {
    expect(() => recordCase('Bad Name', true)).toThrow(TypeError);
  });
});
