/**
 * `postpone dashboard` in a real browser: the built binary serves the page as a child process against
 * the real PostgreSQL of this test package, Debian's chromium (installed by ./chromium.ts when
 * missing) drives it through playwright-core. Tasks in every state are made through the store; the
 * page must show the store's counts, filter, open a task (a `<script>` payload as text, no dialog),
 * retry the DEAD task (a worker then runs the new one to DONE) and cancel one; a bulk cancel of the
 * filtered kind asks in a dialog stating the count before it cancels. Without the CSRF token
 * or with a foreign Origin a POST is refused (403); a non-loopback --host without --token does not
 * start (exit 2). Writes evidence/dashboard/dashboard.png.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import { createWorker } from '@postpone/worker';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { checkDashboardOptions } from '../src/dashboard/command.js';
import { createDashboardApp } from '../src/dashboard/server.js';
import { isLoopbackHost } from '../src/dashboard/security.js';
import { CHROMIUM_INSTALL_TIMEOUT_MS, ensureChromium, launchChromium } from './chromium.js';
import { type DashboardProcess, startDashboardProcess, stopChild } from './dashboard-process.js';

const BIN = join(import.meta.dirname, '..', 'bin', 'postpone.js');
const SCREENSHOT = join(import.meta.dirname, '..', '..', '..', 'evidence', 'dashboard', 'dashboard.png');
const schema = uniqueSchemaName('dash');
/** A schema of its own for the layout test: a full page of tasks would change the first test's counts. */
const layoutSchema = uniqueSchemaName('dash_layout');
/** A schema of its own for the bulk action: it cancels a whole kind. */
const bulkSchema = uniqueSchemaName('dash_bulk');
const XSS = '<script>alert(1)</script>';
const UI_TIMEOUT_MS = 10_000;

let url = '';
let store: ReturnType<typeof createPgStore>;
let browser: Browser | undefined;
const children: ChildProcess[] = [];

/** Starts the built binary's dashboard on 127.0.0.1, port 0; resolves with the URL it prints. */
async function startDashboard(extra: readonly string[] = [], onSchema = schema): Promise<DashboardProcess> {
  const started = await startDashboardProcess(BIN, ['--schema', onSchema, 'dashboard', '--port', '0', '--refresh', '1s', ...extra], url);
  children.push(started.child);
  return started;
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request with exactly these headers (node:http lets the test set Host and Origin). */
function http(method: string, target: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(target, { method, headers, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${target} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** The rows of the task table as [id, state]. */
const rows = (page: Page) => page.$$eval('#tasks tbody tr', (trs) => trs.map((tr) => [(tr as HTMLElement).dataset.id, (tr as HTMLElement).dataset.state]));

async function filter(page: Page, state: string, kind = ''): Promise<void> {
  await page.fill('#filter-kind', kind);
  await page.selectOption('#filter-state', state); // the change submits the form
}

async function openTask(page: Page, id: string): Promise<void> {
  await page.click(`#tasks tbody tr[data-id="${id}"]`);
  await page.waitForFunction((want) => document.getElementById('detail-id')?.textContent === want, id, { timeout: UI_TIMEOUT_MS });
}

const detailState = (page: Page, state: string) =>
  page.waitForFunction((want) => document.getElementById('detail-state')?.textContent === want, state, { timeout: UI_TIMEOUT_MS });

/** Schedules one task due now and claims it (nothing else is due when this runs). */
async function claimNew(kind: string, payload: unknown, maxAttempts = 3, leaseMs = 600_000) {
  const { id } = await store.schedule({ kind, payload, maxAttempts });
  const [claimed] = await store.claim({ owner: 'test-claimer', limit: 1, leaseMs });
  expect(claimed?.id).toBe(id);
  return claimed!;
}

const ids = {} as Record<'dead' | 'done' | 'claimed' | 'xss' | 'toCancel' | 'remind', string>;

beforeAll(async () => {
  const executablePath = ensureChromium();
  url = testDatabaseUrl();
  store = createPgStore({ connectionString: url, schema });
  await store.migrate();

  const dead = await claimNew('mail', { to: 'ops@example.com' }, 1);
  expect(await store.reportProgress({ id: dead.id, attempt: 1, progress: { sent: 2, of: 3 } })).toBe(true);
  expect(await store.fail({ id: dead.id, attempt: 1, error: 'smtp said 550', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
  ids.dead = dead.id;
  const done = await claimNew('report', { day: '2030-01-01' });
  expect(await store.complete({ id: done.id, attempt: 1, owner: 'test-claimer', result: { rows: 3 } })).toBe('DONE');
  ids.done = done.id;
  ids.claimed = (await claimNew('report', { day: '2030-01-02' })).id;
  for (const minutes of [5, 12, 12, 40]) ids.remind = (await store.schedule({ kind: 'remind', payload: { minutes }, delayMs: minutes * 60_000 })).id;
  ids.xss = (await store.schedule({ kind: 'render', payload: { html: XSS }, delayMs: 30 * 60_000 })).id;
  ids.toCancel = (await store.schedule({ kind: 'remind', payload: { minutes: 50 }, delayMs: 50 * 60_000 })).id;

  browser = await launchChromium(executablePath);
}, CHROMIUM_INSTALL_TIMEOUT_MS + 60_000);

afterAll(async () => {
  await browser?.close();
  for (const child of children) await stopChild(child);
  await store?.close();
  if (url !== '') {
    await dropSchema(url, schema);
    await dropSchema(url, layoutSchema);
    await dropSchema(url, bulkSchema);
  }
});

describe('postpone dashboard', () => {
  it('shows the store, filters, opens a task as text, retries the DEAD task to DONE, cancels one; refuses POSTs without CSRF', async () => {
    const { child, url: base } = await startDashboard();
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

    // Counts: the page shows what store.stats() says (nothing changes the queue meanwhile).
    const stats = await store.stats();
    expect({ scheduled: stats.scheduled, due: stats.due, claimed: stats.claimed, dead: stats.dead }).toEqual({ scheduled: 6, due: 0, claimed: 1, dead: 1 });
    const shown = await page.evaluate(() =>
      Object.fromEntries(['scheduled', 'due', 'claimed', 'dead'].map((k) => [k, Number(document.getElementById(`count-${k}`)?.textContent)])),
    );
    expect(shown).toEqual({ scheduled: stats.scheduled, due: stats.due, claimed: stats.claimed, dead: stats.dead });
    const byKind = await page.$$eval('#by-kind tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    expect(byKind).toEqual(stats.byKind.map((k) => [k.kind, String(k.scheduled), String(k.due), String(k.claimed), String(k.dead)]));
    // Nothing has waited a minute with nobody claiming: the section stays hidden.
    expect(await page.isHidden('#unclaimed')).toBe(true);
    expect(await page.isHidden('#rate-limits')).toBe(true);
    // The charts hold the store's data: 6 tasks due within the hour; one CLAIMED and one DONE claim.
    const charts = await page.evaluate(() => {
      const C = (window as unknown as { Chart: { getChart(id: string): { data: { datasets: { data: unknown[] }[] } } } }).Chart;
      const due = C.getChart('due-chart')!.data.datasets[0]!.data as number[];
      const late = C.getChart('lateness-chart')!.data.datasets;
      return { due: due.reduce((a, b) => a + b, 0), buckets: due.length, claimed: late[0]!.data.length, done: late[1]!.data.length };
    });
    expect(charts).toEqual({ due: 6, buckets: 60, claimed: 1, done: 1 });
    expect(await page.textContent('#due-total')).toBe('6');

    // Filter by state.
    await filter(page, 'DEAD');
    await expect.poll(() => rows(page), { timeout: UI_TIMEOUT_MS }).toEqual([[ids.dead, 'DEAD']]);
    await filter(page, 'SCHEDULED', 'remind');
    await expect.poll(async () => (await rows(page)).length, { timeout: UI_TIMEOUT_MS }).toBe(5);
    expect((await rows(page)).every(([, state]) => state === 'SCHEDULED')).toBe(true);

    // Open the task whose payload holds <script>: shown as text, nothing runs.
    await filter(page, 'SCHEDULED', 'render');
    await expect.poll(() => rows(page), { timeout: UI_TIMEOUT_MS }).toEqual([[ids.xss, 'SCHEDULED']]);
    await openTask(page, ids.xss);
    expect(await page.textContent('#detail-payload')).toBe(JSON.stringify({ html: XSS }, null, 2));
    expect(await page.innerHTML('#detail-payload')).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(await page.evaluate(() => document.querySelectorAll('script').length)).toBe(2); // chart.js and dashboard.js only
    expect(await page.textContent('#detail-attempts')).toBe('attempt 0, failures 0 of 5 allowed');
    expect(await page.textContent('#detail-progress')).toBe('–');

    // Retry the DEAD task with its button: a new SCHEDULED task appears, linked both ways.
    await filter(page, 'DEAD');
    await expect.poll(() => rows(page), { timeout: UI_TIMEOUT_MS }).toEqual([[ids.dead, 'DEAD']]);
    await openTask(page, ids.dead);
    expect(await page.textContent('#detail-error')).toBe('smtp said 550');
    // The progress its handler reported before the failure, kept on the DEAD task.
    expect(await page.textContent('#detail-progress')).toBe(JSON.stringify({ of: 3, sent: 2 }, null, 2));
    await page.click('#retry-button');
    await page.waitForFunction(() => document.getElementById('action-message')?.dataset.outcome === 'RETRIED', undefined, { timeout: UI_TIMEOUT_MS });
    const newId = (await page.getAttribute('#action-message', 'data-new-id')) as string;
    expect((await store.getTaskRecord(ids.dead))?.retriedAs).toBe(newId);
    expect(await store.getTaskRecord(newId)).toMatchObject({ state: 'SCHEDULED', kind: 'mail', retryOf: ids.dead, attempt: 0 });
    await filter(page, 'SCHEDULED', 'mail');
    await expect.poll(() => rows(page), { timeout: UI_TIMEOUT_MS }).toEqual([[newId, 'SCHEDULED']]);

    // A worker runs the new task; the open detail follows it to DONE by auto-refresh.
    await openTask(page, newId);
    const worker = createWorker({ store, id: 'dash-worker', pollIntervalMs: 100, handlers: { mail: async () => ({ sent: true }) } });
    worker.start();
    try {
      await detailState(page, 'DONE');
      await page.waitForFunction(() => document.getElementById('detail-completion')?.textContent?.includes('by dash-worker'), undefined, { timeout: UI_TIMEOUT_MS });
    } finally {
      await worker.stop();
    }
    expect((await store.getTaskRecord(newId))?.state).toBe('DONE');

    // Cancel a SCHEDULED task with its button.
    await filter(page, 'SCHEDULED', 'remind');
    await expect.poll(async () => (await rows(page)).some(([id]) => id === ids.toCancel), { timeout: UI_TIMEOUT_MS }).toBe(true);
    await openTask(page, ids.toCancel);
    await page.click('#cancel-button');
    await detailState(page, 'CANCELLED');
    expect(await page.textContent('#action-message')).toBe(`CANCELLED: task ${ids.toCancel}`);
    expect((await store.getTaskRecord(ids.toCancel))?.state).toBe('CANCELLED');

    // POSTs that are not the page's own are refused; the task stays as it was.
    const csrf = (await page.getAttribute('meta[name="csrf-token"]', 'content')) as string;
    const origin = base.slice(0, -1);
    const cancelUrl = `${base}api/tasks/${ids.remind}/cancel`;
    expect((await http('POST', cancelUrl, { Origin: origin })).status).toBe(403);
    expect((await http('POST', cancelUrl, { Origin: origin, 'x-csrf-token': '0'.repeat(64) })).status).toBe(403);
    expect((await http('POST', cancelUrl, { Origin: 'http://evil.example', 'x-csrf-token': csrf })).status).toBe(403);
    expect((await http('POST', cancelUrl, { 'x-csrf-token': csrf })).status).toBe(403);
    expect(JSON.parse((await http('POST', cancelUrl, {})).body)).toMatchObject({ error: 'CSRF' });
    expect((await store.getTaskRecord(ids.remind))?.state).toBe('SCHEDULED');
    // The same guard lets the page's own request through (a retry of a DONE task: NOT_RETRYABLE, nothing written).
    const allowed = await http('POST', `${base}api/tasks/${ids.done}/retry`, { Origin: origin, 'x-csrf-token': csrf });
    expect([allowed.status, JSON.parse(allowed.body)]).toEqual([200, { outcome: 'NOT_RETRYABLE', state: 'DONE' }]);
    // A page on another name resolving to 127.0.0.1 (DNS rebinding) cannot read the API.
    expect((await http('GET', `${base}api/overview`, { Host: `evil.example:${new URL(base).port}` })).status).toBe(403);

    // The evidence: every state in the list, the <script> payload open as text.
    await filter(page, '');
    await expect.poll(async () => (await rows(page)).length, { timeout: UI_TIMEOUT_MS }).toBe(10);
    await openTask(page, ids.xss);
    await page.waitForFunction(() => document.body.dataset.refreshedAt !== undefined);
    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
    expect(await stopChild(child)).toBe(0);
  });

  it('opens the detail of the last of 50 listed tasks inside a 1000 px viewport, retry button included, with queue, priority and key (issue 27 item 8)', async () => {
    const layout = createPgStore({ connectionString: url, schema: layoutSchema });
    let deadId: string;
    let newestRemind: string;
    try {
      await layout.migrate();
      // The oldest task, so the last row of the newest-first list: DEAD, in a queue, with a priority and a key.
      deadId = (await layout.schedule({ kind: 'invoice', queue: 'billing', priority: 7, key: 'invoice-2030-01', maxAttempts: 1, payload: { month: '2030-01' } })).id;
      const [claimed] = await layout.claim({ owner: 'test-claimer', limit: 1, leaseMs: 60_000, queue: 'billing' });
      expect(claimed?.id).toBe(deadId);
      expect(await layout.fail({ id: deadId, attempt: 1, error: 'ledger closed', backoffMs: 0 })).toEqual({ outcome: 'DEAD' });
      const reminders = await layout.scheduleMany(Array.from({ length: 49 }, (_, i) => ({ kind: 'remind', payload: { i }, delayMs: 3_600_000 + i * 1_000 })));
      newestRemind = reminders.at(-1)?.id as string;
    } finally {
      await layout.close();
    }
    const { child, url: base } = await startDashboard([], layoutSchema);
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // No request of the page fails (a missing favicon was a 404 in the console, found by a new user).
    const consoleErrors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    await page.goto(base);
    await expect.poll(async () => (await rows(page)).length, { timeout: UI_TIMEOUT_MS }).toBe(50);
    expect((await rows(page)).at(-1)).toEqual([deadId, 'DEAD']);
    // The list row says queue and failures apart from the claims (not "1/1").
    const lastRow = await page.$$eval('#tasks tbody tr:last-child td', (tds) => tds.map((td) => td.textContent));
    const header = await page.$$eval('#tasks thead th', (ths) => ths.map((th) => th.textContent));
    const cellOf = (name: string) => lastRow[header.indexOf(name)];
    expect([cellOf('queue'), cellOf('priority'), cellOf('attempt'), cellOf('failures')]).toEqual(['billing', '7', '1', '1 of 1']);

    await openTask(page, deadId);
    // The row that opened the panel stays in view although the panel narrows the list (rows reflow).
    const rowBox = await page.evaluate((id) => {
      const r = (document.querySelector(`#tasks tbody tr[data-id="${id}"]`) as HTMLElement).getBoundingClientRect();
      return { top: r.top, bottom: r.bottom };
    }, deadId);
    expect(rowBox.top, 'opened row top').toBeGreaterThanOrEqual(0);
    expect(rowBox.bottom, 'opened row bottom').toBeLessThanOrEqual(1000);
    const box = await page.evaluate(() => {
      const rect = (id: string) => {
        const r = (document.getElementById(id) as HTMLElement).getBoundingClientRect();
        return { top: r.top, bottom: r.bottom, left: r.left, right: r.right };
      };
      const retry = rect('retry-button');
      const hit = document.elementFromPoint((retry.left + retry.right) / 2, (retry.top + retry.bottom) / 2);
      return { detail: rect('detail'), retry, hitsRetry: hit?.id === 'retry-button', width: window.innerWidth, height: window.innerHeight };
    });
    expect(box.height).toBe(1000);
    for (const [name, r] of [['detail', box.detail], ['retry button', box.retry]] as const) {
      expect(r.top, `${name} top`).toBeGreaterThanOrEqual(0);
      expect(r.bottom, `${name} bottom`).toBeLessThanOrEqual(box.height);
      expect(r.left, `${name} left`).toBeGreaterThanOrEqual(0);
      expect(r.right, `${name} right`).toBeLessThanOrEqual(box.width);
      expect(r.bottom - r.top, `${name} height`).toBeGreaterThan(0);
    }
    expect(box.hitsRetry, 'nothing covers the retry button').toBe(true);
    expect(await page.textContent('#detail-queue')).toBe('billing');
    expect(await page.textContent('#detail-priority')).toBe('7');
    expect(await page.textContent('#detail-key')).toBe('invoice-2030-01');
    expect(await page.textContent('#detail-attempts')).toBe('attempt 1, failures 1 of 1 allowed');
    // The button works where it is: a click (no scrolling first) retries the task.
    await page.mouse.click((box.retry.left + box.retry.right) / 2, (box.retry.top + box.retry.bottom) / 2);
    await page.waitForFunction(() => document.getElementById('action-message')?.dataset.outcome === 'RETRIED', undefined, { timeout: UI_TIMEOUT_MS });
    // A task without a key says so: the newest reminder, by its id. Not the list's first row: once the
    // list refreshes after the retry, that row is the retry's new task, in the billing queue (a busy
    // .ci/run met it; before the refresh it was a reminder).
    await page.click(`#tasks tbody tr[data-id="${newestRemind}"]`);
    await page.waitForFunction((want) => document.getElementById('detail-id')?.textContent === want, newestRemind, { timeout: UI_TIMEOUT_MS });
    expect([await page.textContent('#detail-queue'), await page.textContent('#detail-key')]).toEqual(['default', '–']);
    expect(consoleErrors).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
    expect(await stopChild(child)).toBe(0);
  });

  it('bulk cancel of the filtered kind: a dialog states the count first, the tasks are cancelled only after yes; an empty filter is refused', async () => {
    const bulkStore = createPgStore({ connectionString: url, schema: bulkSchema });
    try {
      await bulkStore.migrate();
      const news = await bulkStore.scheduleMany(Array.from({ length: 7 }, (_, n) => ({ kind: 'newsletter', payload: { n }, delayMs: 3_600_000 })));
      const kept = await bulkStore.scheduleMany(Array.from({ length: 2 }, (_, n) => ({ kind: 'invoice', payload: { n }, delayMs: 3_600_000 })));
      const { child, url: base } = await startDashboard([], bulkSchema);
      const page = await browser!.newPage();
      await page.goto(base);
      await page.waitForFunction(() => document.body.dataset.refreshedAt !== undefined, undefined, { timeout: UI_TIMEOUT_MS });
      const message = (outcome: string) =>
        page.waitForFunction((want) => document.getElementById('bulk-message')?.dataset.outcome === want, outcome, { timeout: UI_TIMEOUT_MS });

      // No kind or queue: the store refuses the filter (400), nothing happens.
      await page.click('#bulk-cancel');
      await message('ERROR');
      expect(await page.textContent('#bulk-message')).toMatch(/^cancel failed: INVALID_OPTION: filter: names no tasks/);

      await page.fill('#filter-kind', 'newsletter');
      await page.click('#filters button[type="submit"]');
      await page.waitForFunction(() => document.querySelectorAll('#tasks tbody tr').length === 7, undefined, { timeout: UI_TIMEOUT_MS });
      await page.click('#bulk-cancel');
      await page.waitForFunction(() => (document.getElementById('bulk-dialog') as HTMLDialogElement).open, undefined, { timeout: UI_TIMEOUT_MS });
      expect(await page.textContent('#bulk-question')).toBe('Cancel 7 tasks (kinds newsletter)?');
      // Answering no changes nothing.
      await page.click('#bulk-abort');
      await message('ABORTED');
      expect((await bulkStore.countByState()).SCHEDULED).toBe(9);

      await page.click('#bulk-cancel');
      await page.waitForFunction(() => (document.getElementById('bulk-dialog') as HTMLDialogElement).open, undefined, { timeout: UI_TIMEOUT_MS });
      await page.click('#bulk-confirm');
      await message('DONE');
      expect(await page.textContent('#bulk-message')).toBe('cancel: CANCELLED 7 in 1 batch');
      for (const t of news) expect((await bulkStore.getTask(t.id))?.state).toBe('CANCELLED');
      for (const t of kept) expect((await bulkStore.getTask(t.id))?.state).toBe('SCHEDULED');
      await page.close();
      expect(await stopChild(child)).toBe(0);
    } finally {
      await bulkStore.close();
    }
  });

  it('the stats view lists the kinds due a minute or more with nobody claiming (store.unclaimedKinds)', async () => {
    const runAt = new Date(Date.now() - 120_000);
    const typo = await store.schedule({ kind: 'close-reservaton', payload: null, runAt });
    try {
      const { child, url: base } = await startDashboard();
      const overview = JSON.parse((await http('GET', `${base}api/overview`)).body) as { unclaimed: { dueForMs: number; kinds: { kind: string; due: number }[] } };
      expect(overview.unclaimed).toMatchObject({ dueForMs: 60_000, kinds: [{ queue: 'default', kind: 'close-reservaton', due: 1, oldestDueAt: runAt.toISOString() }] });
      const page = await browser!.newPage();
      await page.goto(base);
      await page.waitForFunction(() => document.body.dataset.refreshedAt !== undefined, undefined, { timeout: UI_TIMEOUT_MS });
      expect(await page.isVisible('#unclaimed')).toBe(true);
      const rows = await page.$$eval('#unclaimed-kinds tbody tr', (trs) => trs.map((tr) => [...tr.children].slice(0, 3).map((td) => td.textContent)));
      expect(rows).toEqual([['default', 'close-reservaton', '1']]);
      await page.close();
      expect(await stopChild(child)).toBe(0);
    } finally {
      expect(await store.cancel(typo.id)).toBe('CANCELLED');
    }
  });

  it('shows the paused queues and kinds, pauses a kind from its form (by dashboard) and resumes it with its button (docs/contract.md#pause-and-resume)', async () => {
    expect(await store.pause({ queue: 'mail' }, { reason: 'provider down', by: 'ops' })).toBe(true);
    try {
      const { child, url: base } = await startDashboard();
      const overview = JSON.parse((await http('GET', `${base}api/overview`)).body) as { paused: { scope: string; name: string; pausedBy: string; reason: string }[] };
      expect(overview.paused).toMatchObject([{ scope: 'queue', name: 'mail', pausedBy: 'ops', reason: 'provider down' }]);
      const page = await browser!.newPage();
      await page.goto(base);
      await page.waitForFunction(() => document.body.dataset.refreshedAt !== undefined, undefined, { timeout: UI_TIMEOUT_MS });
      const pausedRows = () => page.$$eval('#paused tbody tr', (trs) => trs.map((tr) => [...tr.children].slice(0, 5).map((td) => td.textContent)));
      expect((await pausedRows()).map((r) => [r[0], r[1], r[3], r[4]])).toEqual([['queue', 'mail', 'ops', 'provider down']]);

      await page.selectOption('#pause-scope', 'kind');
      await page.fill('#pause-name', 'remind');
      await page.fill('#pause-reason', 'too many reminders');
      await page.click('#pause-form button[type="submit"]');
      await page.waitForFunction(() => document.getElementById('pause-message')?.textContent === 'paused kind remind', undefined, { timeout: UI_TIMEOUT_MS });
      expect((await store.listPaused()).map((p) => [p.scope, p.name, p.pausedBy, p.reason])).toEqual([
        ['queue', 'mail', 'ops', 'provider down'],
        ['kind', 'remind', 'dashboard', 'too many reminders'],
      ]);
      await page.waitForFunction(() => document.querySelectorAll('#paused tbody tr').length === 2, undefined, { timeout: UI_TIMEOUT_MS });
      expect(await page.$$eval('#by-kind tbody tr[data-paused="true"]', (trs) => trs.map((tr) => tr.firstChild?.textContent))).toEqual(['remind (paused)']);

      await page.click('#paused tbody tr[data-name="remind"] .resume-button');
      await page.waitForFunction(() => document.getElementById('pause-message')?.textContent === 'resumed kind remind', undefined, { timeout: UI_TIMEOUT_MS });
      expect((await store.listPaused()).map((p) => p.name)).toEqual(['mail']);
      // Bad input is the store's ValidationError: 400, nothing paused.
      const csrf = (await page.getAttribute('meta[name="csrf-token"]', 'content')) as string;
      const origin = base.replace(/\/$/, '');
      const bad = await page.evaluate(
        async ([token]) => (await fetch('/api/pause', { method: 'POST', headers: { 'x-csrf-token': token as string, 'content-type': 'application/json' }, body: '{"queue":"a","kind":"b"}' })).status,
        [csrf],
      );
      expect(bad).toBe(400);
      expect((await http('POST', `${base}api/resume`, { Origin: origin })).status).toBe(403);
      expect((await store.listPaused()).map((p) => p.name)).toEqual(['mail']);
      await page.close();
      expect(await stopChild(child)).toBe(0);
    } finally {
      await store.resume({ queue: 'mail' });
      await store.resume({ kind: 'remind' });
    }
  });

  it('the stats view lists the rate limits with their use now (store.listRateLimits, listKeyRateLimits)', async () => {
    await store.setRateLimit({ kind: 'send-email', limit: 20, windowMs: 1_000 });
    await store.setKeyRateLimit({ kind: 'tenant-sync', limit: 5, windowMs: 2_000 });
    try {
      const { child, url: base } = await startDashboard();
      const overview = JSON.parse((await http('GET', `${base}api/overview`)).body) as { rateLimits: unknown[]; keyRateLimits: unknown[] };
      expect(overview.rateLimits).toMatchObject([{ scope: 'kind', name: 'send-email', limit: 20, windowMs: 1_000, used: 0 }]);
      expect(overview.keyRateLimits).toEqual([{ kind: 'tenant-sync', limit: 5, windowMs: 2_000, heldKeys: 0 }]);
      const page = await browser!.newPage();
      await page.goto(base);
      await page.waitForFunction(() => document.body.dataset.refreshedAt !== undefined, undefined, { timeout: UI_TIMEOUT_MS });
      expect(await page.isVisible('#rate-limits')).toBe(true);
      const rows = await page.$$eval('#rate-limit-rows tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
      expect(rows).toEqual([
        ['kind', 'send-email', '20', '1.0 s', '0', 'open'],
        ['each key of kind', 'tenant-sync', '5', '2.0 s', '0 keys full', 'open'],
      ]);
      await page.close();
      expect(await stopChild(child)).toBe(0);
    } finally {
      expect(await store.deleteRateLimit({ kind: 'send-email' })).toBe(true);
      expect(await store.deleteKeyRateLimit({ kind: 'tenant-sync' })).toBe(true);
    }
  });

  it('with --token, every request must carry it; the token link sets an HttpOnly cookie', async () => {
    const token = 'tok-0123456789abcdef0123';
    const { child, url: base } = await startDashboard(['--token', token]);
    expect((await http('GET', base)).status).toBe(401);
    expect((await http('GET', `${base}api/overview`, { Authorization: 'Bearer wrong-token-0123456789' })).status).toBe(401);
    expect((await http('GET', `${base}api/overview`, { Authorization: `Bearer ${token}` })).status).toBe(200);
    const link = await http('GET', `${base}?token=${token}`);
    expect(link.status).toBe(303);
    expect(link.headers['set-cookie']).toEqual([`postpone_dashboard_token=${token}; HttpOnly; SameSite=Strict; Path=/`]);
    const page = await http('GET', base, { Cookie: `postpone_dashboard_token=${token}` });
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(await stopChild(child)).toBe(0);
  });

  it('answers 503 POOL_TIMEOUT, not 500, when every pooled connection is busy (the page retries)', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 200 });
    const held = await pool.connect();
    const store = createPgStore({ pool, schema: layoutSchema });
    try {
      const app = createDashboardApp({ store, schema: layoutSchema, token: null, refreshMs: 5_000, host: '127.0.0.1', port: () => 7070 });
      const response = await app.request('/api/overview', { headers: { host: '127.0.0.1:7070' } });
      expect(response.status).toBe(503);
      expect(((await response.json()) as { error: string }).error).toBe('POOL_TIMEOUT');
    } finally {
      held.release();
      await store.close();
      await pool.end();
    }
  });

  it('the task API keeps ids past 2^53 exact: listed, shown, cancelled and retried by their digits (issue #26)', async () => {
    const own = uniqueSchemaName('dash_big_ids');
    const big = createPgStore({ connectionString: url, schema: own });
    try {
      await big.migrate();
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`alter table "${own}".task alter column id restart with ${2n ** 53n}`);
      await admin.end();
      const [a, b] = await big.scheduleMany([{ kind: 'big' }, { kind: 'big' }]);
      expect([a!.id, b!.id]).toEqual(['9007199254740992', '9007199254740993']);
      const app = createDashboardApp({ store: big, schema: own, token: null, refreshMs: 5_000, host: '127.0.0.1', port: () => 7070 });
      const headers = { host: '127.0.0.1:7070' };
      const listed = (await (await app.request('/api/tasks?kind=big', { headers })).json()) as { tasks: { id: string }[] };
      expect(listed.tasks.map((t) => t.id)).toEqual(['9007199254740993', '9007199254740992']);
      const shown = (await (await app.request('/api/tasks/9007199254740993', { headers })).json()) as { task: { id: string } };
      expect(shown.task.id).toBe('9007199254740993');
      const page = await (await app.request('/', { headers })).text();
      const csrf = /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '';
      const post = (path: string) => app.request(path, { method: 'POST', headers: { ...headers, origin: 'http://127.0.0.1:7070', 'x-csrf-token': csrf } });
      expect(await (await post('/api/tasks/9007199254740993/cancel')).json()).toEqual({ outcome: 'CANCELLED' });
      expect(await (await post('/api/tasks/9007199254740993/retry')).json()).toMatchObject({ outcome: 'RETRIED', id: '9007199254740994' });
      expect((await big.getTask('9007199254740992'))?.state).toBe('SCHEDULED');
    } finally {
      await big.close();
      await dropSchema(url, own);
    }
  });

  it('tells loopback addresses from others and checks the options before binding', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '192.168.1.10', '10.0.0.1', 'example.com', '::ffff:10.0.0.1', '']) expect(isLoopbackHost(host), host).toBe(false);
    const raw = { host: '127.0.0.1', port: '0', refresh: '5s' };
    expect(checkDashboardOptions(raw)).toEqual({ host: '127.0.0.1', port: 0, token: null, refreshMs: 5_000 });
    const code = (over: Record<string, string>) => {
      try {
        checkDashboardOptions({ ...raw, ...over });
        return 'OK';
      } catch (error) {
        return (error as { code: string }).code;
      }
    };
    expect(code({ port: '65536' })).toBe('INVALID_OPTION');
    expect(code({ refresh: '500ms' })).toBe('INVALID_OPTION');
    expect(code({ refresh: '2m' })).toBe('INVALID_OPTION');
    expect(code({ token: 'short' })).toBe('INVALID_OPTION');
    expect(code({ token: 'has;semicolon-0123456789' })).toBe('INVALID_OPTION');
    expect(code({ host: '0.0.0.0' })).toBe('TOKEN_REQUIRED');
    expect(code({ host: '0.0.0.0', token: 'tok-0123456789abcdef0123' })).toBe('OK');
  });

  it('a port in use is PORT_IN_USE, exit 1; the first dashboard keeps serving', async () => {
    const first = await startDashboard();
    const port = new URL(first.url).port;
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, '--schema', schema, 'dashboard', '--port', port], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url }, timeout: 30_000 }, (error, _stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr }),
      );
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`postpone: error PORT_IN_USE: 127.0.0.1:${port} is already in use: pick another --port (0: any free port)\n`);
    expect((await fetch(first.url)).status).toBe(200);
    expect(await stopChild(first.child)).toBe(0);
  });

  it('refuses a non-loopback --host without --token: exit 2, TOKEN_REQUIRED, nothing bound', async () => {
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, 'dashboard', '--host', '0.0.0.0', '--port', '0'], { env: { PATH: process.env.PATH ?? '' }, timeout: 30_000 }, (error, _stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr }),
      );
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^postpone: error TOKEN_REQUIRED: --host 0\.0\.0\.0 is not a loopback address/);
  });
});
