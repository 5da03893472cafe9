/**
 * The dashboard's batch view (docs/contract.md#batches) in a real browser: the built binary serves the
 * page against the real PostgreSQL of this test package, Debian's chromium drives it through
 * playwright-core. A batch whose members ended DONE, DEAD and CANCELLED and whose callback payload
 * holds a `<script>` shows the store's counts, state and callback task (the payload as text, no
 * dialog, no script run); its callback task opens in the task detail; an OPEN batch shows SEALED
 * nothing and no callback; an unknown id says so (the API answers 404).
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_INSTALL_TIMEOUT_MS, ensureChromium, launchChromium } from './chromium.js';
import { startDashboardProcess, stopChild } from './dashboard-process.js';

const BIN = join(import.meta.dirname, '..', 'bin', 'postpone.js');
const schema = uniqueSchemaName('dash_batch');
const XSS = '<script>window.__batchXss = 1; alert(1)</script>';
const UI_TIMEOUT_MS = 10_000;

let url = '';
let store: ReturnType<typeof createPgStore>;
let browser: Browser | undefined;
let child: ChildProcess | undefined;
const ids = { called: '', open: '', callbackTask: '' };

/** Starts the built binary's dashboard on 127.0.0.1, port 0; resolves with the URL it prints. */
async function startDashboard(): Promise<string> {
  const started = await startDashboardProcess(BIN, ['--schema', schema, 'dashboard', '--port', '0', '--refresh', '60s'], url);
  child = started.child;
  return started.url;
}

const text = (page: Page, id: string) => page.evaluate((i) => document.getElementById(i)?.textContent ?? null, id);

beforeAll(async () => {
  const executablePath = ensureChromium();
  url = testDatabaseUrl();
  store = createPgStore({ connectionString: url, schema });
  await store.migrate();

  // A batch of three members: one DONE, one DEAD, one CANCELLED; sealed, so it calls back.
  ids.called = await store.createBatch({ callback: { kind: 'report', payload: { note: XSS }, queue: 'ops', priority: 2 } });
  const members = await store.scheduleInBatch(ids.called, [
    { kind: 'part', payload: 1 },
    { kind: 'part', payload: 2, maxAttempts: 1 },
    { kind: 'part', payload: 3, delayMs: 3_600_000 },
  ]);
  const claimed = await store.claim({ owner: 'test', limit: 2, leaseMs: 60_000, kinds: ['part'] });
  expect(claimed.map((c) => c.payload).sort()).toEqual([1, 2]);
  const by = (p: number) => claimed.find((c) => c.payload === p) as (typeof claimed)[number];
  expect(await store.complete({ id: by(1).id, attempt: by(1).attempt, owner: 'test' })).toBe('DONE');
  expect(await store.fail({ id: by(2).id, attempt: by(2).attempt, error: 'bad', backoffMs: 0, retryable: false })).toEqual({ outcome: 'DEAD' });
  expect(await store.cancel(members[2]?.id as string)).toBe('CANCELLED');
  const sealed = await store.sealBatch(ids.called);
  expect(sealed).toMatchObject({ state: 'CALLED_BACK', total: 3, done: 1, dead: 1, cancelled: 1, remaining: 0 });
  ids.callbackTask = sealed.callbackTaskId as string;
  // An OPEN batch with one member still waiting.
  ids.open = await store.createBatch({ callback: { kind: 'later' } });
  await store.scheduleInBatch(ids.open, [{ kind: 'part', payload: 4, delayMs: 3_600_000 }]);

  browser = await launchChromium(executablePath);
}, CHROMIUM_INSTALL_TIMEOUT_MS + 60_000);

afterAll(async () => {
  await browser?.close();
  if (child !== undefined) await stopChild(child);
  await store?.close();
  if (url !== '') await dropSchema(url, schema);
});

describe('postpone dashboard: batch view', () => {
  it('shows a batch’s counts, state and callback as text, opens the callback task, says so for an unknown id', async () => {
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

    const info = await store.getBatch(ids.called);
    await page.fill('#batch-id', ids.called);
    await page.click('#batch-form button[type="submit"]');
    await page.waitForFunction(() => document.getElementById('batch')?.hidden === false, undefined, { timeout: UI_TIMEOUT_MS });
    expect(await text(page, 'batch-state')).toBe('CALLED_BACK');
    expect(await text(page, 'batch-counts')).toBe(`${info?.total} total, ${info?.remaining} remaining: ${info?.done} DONE, ${info?.dead} DEAD, ${info?.cancelled} CANCELLED`);
    expect(await text(page, 'batch-callback')).toBe('kind report, queue ops, priority 2, due 0 ms after the batch completes');
    expect(await text(page, 'batch-callback-task')).toMatch(new RegExp(`^${ids.callbackTask} at \\d{4}-`));
    // The callback's payload as text: the <script> is shown, not run.
    expect(JSON.parse((await text(page, 'batch-callback-payload')) as string)).toEqual({ note: XSS });
    expect(await page.evaluate(() => document.querySelectorAll('#batch script').length)).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __batchXss?: number }).__batchXss)).toBeUndefined();

    // The callback task opens in the task detail, with the batch counts in its payload.
    await page.click('#batch-open-callback');
    await page.waitForFunction((want) => document.getElementById('detail-id')?.textContent === want, ids.callbackTask, { timeout: UI_TIMEOUT_MS });
    expect(await text(page, 'detail-kind')).toBe('report');
    expect(JSON.parse((await text(page, 'detail-payload')) as string)).toEqual({ note: XSS, batch: { id: ids.called, total: 3, done: 1, dead: 1, cancelled: 1 } });

    // An OPEN batch: no seal, no callback task, nothing to open.
    await page.fill('#batch-id', ids.open);
    await page.click('#batch-form button[type="submit"]');
    await page.waitForFunction(() => document.getElementById('batch-state')?.textContent === 'OPEN', undefined, { timeout: UI_TIMEOUT_MS });
    expect(await text(page, 'batch-counts')).toBe('1 total, 1 remaining: 0 DONE, 0 DEAD, 0 CANCELLED');
    expect(await text(page, 'batch-times')).toMatch(/ \/ –$/);
    expect(await text(page, 'batch-callback-task')).toBe('not scheduled yet');
    expect(await page.isHidden('#batch-open-callback')).toBe(true);

    // An unknown id: the API answers 404 and the page says so.
    const unknown = String(Number(ids.open) + 1000);
    await page.fill('#batch-id', unknown);
    await page.click('#batch-form button[type="submit"]');
    await page.waitForFunction((w) => document.getElementById('batch-message')?.textContent === w, `no batch ${unknown}`, { timeout: UI_TIMEOUT_MS });
    expect(await page.isHidden('#batch')).toBe(true);
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
