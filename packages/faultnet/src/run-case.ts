/**
 * Runs one evidence case: a fresh {@link CaseContext}, the body filling a {@link Verdict}, then one
 * `CASE <name> PASS|FAIL k=v ...` line through `packages/testkit/src/evidence.ts` with the values measured in this
 * run. A failed check or an error records FAIL (with `failed=[...]`) and throws, so the test fails.
 */
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { recordCase } from '@postpone/testkit';
import { type CaseContext, withCaseContext } from './case-context.js';
import { Verdict } from './verdict.js';

export interface RunCaseOptions {
  /** Database server (default: the vitest globalSetup's, `testDatabaseUrl()`). */
  readonly databaseUrl?: string;
}

/**
 * @returns the recorded line
 * @throws Error listing the failed checks when the case fails (after recording FAIL)
 */
export async function runCase(name: string, body: (verdict: Verdict, ctx: CaseContext) => Promise<void>, options: RunCaseOptions = {}): Promise<string> {
  const verdict = new Verdict();
  try {
    await withCaseContext(options.databaseUrl ?? testDatabaseUrl(), name.slice(0, 20), (ctx) => body(verdict, ctx));
  } catch (error) {
    verdict.error(error);
  }
  const failures = verdict.failures();
  const fields = failures.length === 0 ? verdict.fields : { ...verdict.fields, failed: failures.map((f) => f.label) };
  const line = recordCase(name, verdict.pass, fields);
  if (!verdict.pass) {
    throw new Error(`${name} FAIL:\n${failures.map((f) => `  - ${f.label}: ${f.detail}`).join('\n')}\n${line}`);
  }
  return line;
}
