#!/usr/bin/env node
// Totals vitest's JSON reports over every workspace package that has a `test` script, and prints the
// single line CI reads: `N passed, N failed`. A package whose report is missing (its build or test
// run crashed) counts as one failed test; so does a test file that failed to load.
//
//   node scripts/test-summary.mjs
//       reads `<package>/.vitest-results.json` in place and prints one total line.
//   node scripts/test-summary.mjs --save DIR
//       copies those reports (and evidence/env.txt, written by a test inside the run) to DIR, so a
//       later run cannot overwrite them, and prints the run's line.
//   node scripts/test-summary.mjs --run LABEL=DIR [--run LABEL=DIR ...]
//       one line per saved run, `run LABEL (node vX): N passed, N failed`, then the Citus suite's
//       line when packages/postgres/.vitest-results-citus.json or packages/faultnet/.vitest-results-citus.json
//       exists (.ci/run deletes them before the suites run once; absent when they were skipped), then the total of all as the last
//       line, `N passed, N failed`. The in-place form counts that report too when it exists.
// Exit code 1 when any test failed or a report is missing, else 0.
import { fileURLToPath } from 'node:url';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url)); // a path with spaces must stay a path
const ENV_FILE = join(root, 'evidence', 'env.txt');

/** Every workspace package with a `test` script: { name, key, dir }. `key` names its saved report. */
function testedPackages() {
  const out = [];
  for (const group of ['packages', 'apps']) {
    const groupDir = join(root, group);
    if (!existsSync(groupDir)) continue;
    for (const name of readdirSync(groupDir).sort()) {
      const pkgFile = join(groupDir, name, 'package.json');
      if (!existsSync(pkgFile)) continue;
      const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
      if (!pkg.scripts?.test) continue;
      out.push({ name: pkg.name, key: `${group}-${name}`, dir: join(groupDir, name) });
    }
  }
  return out;
}

/**
 * The first lines of a failure (at most 8, each cut at 300 characters, stack frames dropped): enough to
 * replay it from the CI log alone — an evidence case's failed checks, fast-check's seed and path, the
 * assertion's step. The CI log keeps only its tail, so one line was not enough.
 */
function why(failureMessages) {
  const text = String((failureMessages ?? [])[0] ?? '').replace(/\u001b\[[0-9;]*m/g, '');
  const lines = text
    .split('\n')
    .filter((l) => l.trim() !== '' && !/^\s+at /.test(l))
    .slice(0, 8)
    .map((l) => (l.length > 300 ? `${l.slice(0, 300)}…` : l));
  return lines.join('\n    ');
}

/** Adds one vitest JSON report (of the package named `name`) to the tally `t`. */
function addReport(t, name, report) {
  const r = JSON.parse(readFileSync(report, 'utf8'));
  t.passed += r.numPassedTests ?? 0;
  t.failed += r.numFailedTests ?? 0;
  t.skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // A suite that failed to load has no tests but is a failure all the same.
  for (const suite of r.testResults ?? []) {
    // Each failed test by name with the first line of its failure, so the tail of a CI log says what broke.
    for (const a of suite.assertionResults ?? []) {
      if (a.status !== 'failed') continue;
      const file = String(suite.name ?? '').replace(`${root}`, '');
      t.problems.push(`${name}: FAILED ${file} > ${a.fullName ?? a.title}: ${why(a.failureMessages)}`);
    }
    if (suite.status === 'failed' && (suite.assertionResults ?? []).length === 0) {
      t.failed += 1;
      t.problems.push(`${name}: ${suite.name} failed to load: ${String(suite.message ?? '').split('\n')[0]}`);
    }
  }
}

/** Totals one run; `reportOf(pkg)` gives the report path of a package. */
function total(reportOf) {
  const t = { passed: 0, failed: 0, skipped: 0, problems: [] };
  for (const pkg of testedPackages()) {
    const report = reportOf(pkg);
    if (!existsSync(report)) {
      t.failed += 1;
      t.problems.push(`${pkg.name}: no test report (build or test run crashed)`);
      continue;
    }
    addReport(t, pkg.name, report);
  }
  return t;
}

/**
 * The Citus suites' reports (`pnpm --filter @postpone/postgres test:citus`, then `@postpone/faultnet`'s, run once by .ci/run), or
 * null when there is none: without CITUS_TARBALL the suite prints its skip line and writes no report.
 */
const CITUS_REPORTS = ['postgres', 'faultnet'].map((name) => ({ name: `@postpone/${name} (citus)`, file: join(root, 'packages', name, '.vitest-results-citus.json') }));
function citus() {
  const present = CITUS_REPORTS.filter((r) => existsSync(r.file));
  if (present.length === 0) return null;
  const t = { passed: 0, failed: 0, skipped: 0, problems: [] };
  for (const r of present) addReport(t, r.name, r.file);
  return t;
}

const counts = ({ passed, failed, skipped }) => `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;

/** The Node.js version a test wrote into env.txt (`Node.js: v24.1.0`), or 'unknown'. */
function nodeVersionIn(envFile) {
  if (!existsSync(envFile)) return 'unknown';
  const match = /^Node\.js: (\S+)/m.exec(readFileSync(envFile, 'utf8'));
  return match?.[1] ?? 'unknown';
}

/** Checks that are not vitest tests (.ci/run's fresh-clone start) append `CHECK <name> PASS|FAIL ...` lines to $POSTPONE_CHECKS_FILE. */
function checks() {
  const r = { passed: 0, failed: 0, skipped: 0, problems: [] };
  // biome-ignore lint/suspicious/noUndeclaredEnvVars: set by .ci/run
  const file = process.env.POSTPONE_CHECKS_FILE;
  if (!file || !existsSync(file)) return r;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^CHECK \S+ PASS/.test(line)) r.passed += 1;
    else if (/^CHECK \S+ FAIL/.test(line)) {
      r.failed += 1;
      r.problems.push(line);
    }
  }
  return r;
}

const inPlace = (pkg) => join(pkg.dir, '.vitest-results.json');
const args = process.argv.slice(2);

if (args.length === 0) {
  const t = total(inPlace);
  const c = checks();
  const z = citus() ?? { passed: 0, failed: 0, skipped: 0, problems: [] };
  for (const p of [...t.problems, ...z.problems, ...c.problems]) console.log(`summary: ${p}`);
  t.passed += c.passed + z.passed;
  t.failed += c.failed + z.failed;
  console.log(counts(t));
  process.exitCode = t.failed > 0 ? 1 : 0;
} else if (args[0] === '--save' && args.length === 2) {
  const dir = resolve(args[1]);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const pkg of testedPackages()) {
    if (existsSync(inPlace(pkg))) copyFileSync(inPlace(pkg), join(dir, `${pkg.key}.json`));
  }
  if (existsSync(ENV_FILE)) copyFileSync(ENV_FILE, join(dir, 'env.txt'));
  const t = total((pkg) => join(dir, `${pkg.key}.json`));
  for (const p of t.problems) console.log(`summary: ${p}`);
  console.log(`saved run (node ${nodeVersionIn(join(dir, 'env.txt'))} in the tests): ${counts(t)}`);
  process.exitCode = t.failed > 0 ? 1 : 0;
} else if (args.length > 0 && args.length % 2 === 0 && args.every((a, i) => (i % 2 === 0 ? a === '--run' : a.includes('=')))) {
  const sum = { passed: 0, failed: 0, skipped: 0 };
  for (let i = 1; i < args.length; i += 2) {
    const at = args[i].indexOf('=');
    const label = args[i].slice(0, at);
    const dir = resolve(args[i].slice(at + 1));
    const t = total((pkg) => join(dir, `${pkg.key}.json`));
    for (const p of t.problems) console.log(`summary (${label}): ${p}`);
    console.log(`run ${label} (node ${nodeVersionIn(join(dir, 'env.txt'))} in the tests): ${counts(t)}`);
    sum.passed += t.passed;
    sum.failed += t.failed;
    sum.skipped += t.skipped;
  }
  const z = citus();
  if (z !== null) {
    for (const p of z.problems) console.log(`summary (citus): ${p}`);
    console.log(`run citus (packages/{postgres,faultnet}/.vitest-results-citus.json): ${counts(z)}`);
    sum.passed += z.passed;
    sum.failed += z.failed;
    sum.skipped += z.skipped;
  }
  const c = checks();
  for (const p of c.problems) console.log(`summary (checks): ${p}`);
  if (c.passed + c.failed > 0) console.log(`checks: ${counts(c)}`);
  sum.passed += c.passed;
  sum.failed += c.failed;
  console.log(counts(sum));
  process.exitCode = sum.failed > 0 ? 1 : 0;
} else {
  console.error('usage: test-summary.mjs [--save DIR | --run LABEL=DIR [--run LABEL=DIR ...]]');
  console.log('0 passed, 1 failed');
  process.exitCode = 1;
}
