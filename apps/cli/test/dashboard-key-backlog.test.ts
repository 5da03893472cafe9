/**
 * The dashboard's per-key backlog view (docs/contract.md#key-backlog) in a real browser, as
 * ./dashboard.test.ts drives the page: the built binary serves it against the real PostgreSQL, Debian's
 * chromium through playwright-core. Hidden while no kind has a per-key limit; once one has, the table
 * shows its keys most due first with due / not due / claimed of the limit / waiting, as `keyBacklog`
 * says; a key holding HTML shows as text (no dialog, no element made from it).
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_INSTALL_TIMEOUT_MS, ensureChromium, launchChromium } from './chromium.js';
import { startDashboardProcess, stopChild } from './dashboard-process.js';

const BIN = join(import.meta.dirname, '..', 'bin', 'postpone.js');
const schema = uniqueSchemaName('dash_keys');
const XSS_KEY = '<img src=x onerror=alert(1)>';
const UI_TIMEOUT_MS = 10_000;

let url = '';
let store: ReturnType<typeof createPgStore>;
let browser: Browser | undefined;
let child: ChildProcess | undefined;

/** Starts the built binary's dashboard on 127.0.0.1, port 0; resolves with the URL it prints. */
async function startDashboard(): Promise<string> {
  const started = await startDashboardProcess(BIN, ['--schema', schema, 'dashboard', '--port', '0', '--refresh', '1s'], url);
  child = started.child;
  return started.url;
}

beforeAll(async () => {
  const executablePath = ensureChromium();
  url = testDatabaseUrl();
  store = createPgStore({ connectionString: url, schema });
  await store.migrate();
  browser = await launchChromium(executablePath);
}, CHROMIUM_INSTALL_TIMEOUT_MS + 60_000);

afterAll(async () => {
  await browser?.close();
  if (child !== undefined) await stopChild(child);
  await store?.close();
  if (url !== '') await dropSchema(url, schema);
});

describe('postpone dashboard: per-key backlog', () => {
  it('is hidden without a per-key limit; then shows the top keys of the key-limited kind as keyBacklog says, keys as text', async () => {
    const base = await startDashboard();
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(base);
    await page.waitForFunction(() => document.body.dataset.refreshedAt !== undefined, undefined, { timeout: UI_TIMEOUT_MS });
    expect(await page.isHidden('#key-backlog-section')).toBe(true);

    await store.setKeyConcurrency({ kind: 'sync', limit: 1 });
    await store.scheduleMany([1, 2, 3].map((i) => ({ kind: 'sync', limitKey: 'tenant-big', payload: { i } })));
    await store.schedule({ kind: 'sync', limitKey: XSS_KEY });
    await store.scheduleMany([1, 2].map((i) => ({ kind: 'sync', limitKey: 'tenant-later', delayMs: 3_600_000, payload: { i } })));
    await store.schedule({ kind: 'mail', limitKey: 'tenant-big' }); // a kind without a per-key limit: not shown
    expect(await store.claim({ owner: 'w', limit: 10, leaseMs: 600_000, kinds: ['sync'] })).toHaveLength(2); // one per due key

    await page.waitForFunction(() => document.querySelectorAll('#key-backlog tbody tr').length === 3, undefined, { timeout: UI_TIMEOUT_MS });
    expect(await page.isVisible('#key-backlog-section')).toBe(true);
    const shown = await page.$$eval('#key-backlog tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    const backlog = await store.keyBacklog({ kind: 'sync' });
    expect(backlog.entries.map((e) => [e.limitKey, e.due, e.notDue, e.claimed])).toEqual([
      ['tenant-big', 2, 0, 1],
      [XSS_KEY, 0, 0, 1],
      ['tenant-later', 0, 2, 0],
    ]);
    expect(shown.map((r) => r.slice(0, 5))).toEqual(backlog.entries.map((e) => ['sync', e.limitKey, String(e.due), String(e.notDue), `${e.claimed} of 1`]));
    expect(shown[0]?.[5]).toMatch(/^\d+(\.\d)? (ms|s)$/);
    expect(shown.slice(1).map((r) => r[5])).toEqual(['–', '–']);
    // The key holding HTML is text: no <img> was made, no dialog opened.
    expect(await page.$$eval('#key-backlog img', (imgs) => imgs.length)).toBe(0);
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(await page.isHidden('#key-backlog-more')).toBe(true);
    await page.close();
  });
});
