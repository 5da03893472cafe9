#!/usr/bin/env node
// Totals vitest's JSON reports (`<package>/.vitest-results.json`) over every workspace package that
// has a `test` script, and prints the single line CI reads: `N passed, N failed`.
// A package whose report is missing (its build or test run crashed) counts as one failed test.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
let passed = 0;
let failed = 0;
let skipped = 0;
const problems = [];
for (const group of ['packages', 'apps']) {
  const groupDir = join(root, group);
  if (!existsSync(groupDir)) continue;
  for (const name of readdirSync(groupDir).sort()) {
    const pkgFile = join(groupDir, name, 'package.json');
    if (!existsSync(pkgFile)) continue;
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
    if (!pkg.scripts?.test) continue;
    const report = join(groupDir, name, '.vitest-results.json');
    if (!existsSync(report)) {
      failed += 1;
      problems.push(`${pkg.name}: no test report (build or test run crashed)`);
      continue;
    }
    const r = JSON.parse(readFileSync(report, 'utf8'));
    passed += r.numPassedTests ?? 0;
    failed += r.numFailedTests ?? 0;
    skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    // A suite that failed to load has no tests but is a failure all the same.
    for (const suite of r.testResults ?? []) {
      if (suite.status === 'failed' && (suite.assertionResults ?? []).length === 0) {
        failed += 1;
        problems.push(`${pkg.name}: ${suite.name} failed to load: ${String(suite.message ?? '').split('\n')[0]}`);
      }
    }
  }
}
// Checks that are not vitest tests (.ci/run's fresh-clone start) append `CHECK <name> PASS|FAIL ...` lines to this file.
const checksFile = process.env.POSTPONE_CHECKS_FILE;
if (checksFile && existsSync(checksFile)) {
  for (const line of readFileSync(checksFile, 'utf8').split('\n')) {
    if (/^CHECK \S+ PASS/.test(line)) passed += 1;
    else if (/^CHECK \S+ FAIL/.test(line)) {
      failed += 1;
      problems.push(line);
    }
  }
}
for (const p of problems) console.log(`summary: ${p}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed > 0 ? 1 : 0;
