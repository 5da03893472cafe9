/**
 * The dashboard's HTTP server (Hono on `node:http`): one page, its static files, and a JSON API under
 * `/api/` that the page reads and writes through.
 *
 * Routes: `GET /` the page; `GET /assets/…` its script, style sheet and Chart.js (served from the
 * installed `chart.js` package); `GET /api/overview` counts, due histogram, lateness; `GET /api/tasks`
 * a page of tasks (`state`, `kind`, `queue`, `hasError`, `cursor`, `limit` query parameters, as `listTasks`);
 * `GET /api/tasks/:id` one task with its completion; `GET /api/batches/:id` one batch (`getBatch`); `POST /api/tasks/:id/retry` and
 * `POST /api/tasks/:id/cancel` the two writing actions on one task; `POST /api/pause` and `POST /api/resume`
 * (a JSON body `{ queue }` or `{ kind }`, pause also `reason`; docs/contract.md#pause-and-resume);
 * `POST /api/bulk/cancel|retry|delete` (body `{ filter, dryRun? }`) the bulk actions, which the page runs
 * with `dryRun` first to state the count.
 *
 * Guards, on every request: with an access token, the request must carry it (`Authorization: Bearer`,
 * the cookie set by opening `/?token=…` once, or `?token=`), else 401; without one (loopback only),
 * the `Host` header must name this loopback listener, else 403 (a DNS-rebinding page cannot read the
 * API). On every POST: the `x-csrf-token` header must equal this process's random CSRF token (it is
 * only in the page) and `Origin` must be this server's own, else 403. Responses carry a strict
 * Content-Security-Policy (scripts from this server only, no inline script), `nosniff` and no framing.
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdaptorServer } from '@hono/node-server';
import { OutcomeError, UsageError } from '../args.js';
import { type BulkFilter, parseTaskId, type PauseTarget, PostponeError, TASK_STATES, type TaskState, ValidationError } from '@postpone/core';
import { type Context, Hono } from 'hono';
import { type DashboardStore, overview, taskDetail } from './data.js';
import { keyBacklogView } from './key-backlog.js';
import { pageHtml } from './page.js';
import { CSRF_HEADER, isLoopbackHost, loopbackHostHeaders, randomToken, readCookie, sameSecret, TOKEN_COOKIE } from './security.js';

/** Bounds of the page's auto-refresh period (ms). */
export const MIN_REFRESH_MS = 1_000;
export const MAX_REFRESH_MS = 60_000;
export const DEFAULT_REFRESH_MS = 5_000;
/** Page size of the task list (the page asks for it; the API caps it). */
export const DASHBOARD_LIST_LIMIT = 50;
const MAX_API_LIST_LIMIT = 200;

export interface DashboardAppOptions {
  readonly store: DashboardStore;
  /** The schema shown in the page header. */
  readonly schema: string;
  /** Access token every request must carry, or null (loopback only: then `Host` is checked). */
  readonly token: string | null;
  /** The page's auto-refresh period, {@link MIN_REFRESH_MS}..{@link MAX_REFRESH_MS}. */
  readonly refreshMs: number;
  /** CSRF token embedded in the page (default: a fresh random one). */
  readonly csrfToken?: string;
  /** The bound address (its `host:port` is an accepted `Host` header besides the loopback names). */
  readonly host: string;
  /** The listening port, read per request (known only after `listen` when port 0 was asked). */
  readonly port: () => number;
}

interface Asset {
  readonly body: string;
  readonly type: string;
}

const here = dirname(fileURLToPath(import.meta.url));
/** `apps/cli/assets/` (from `dist/dashboard/` or `src/dashboard/`). */
const ASSETS_DIR = join(here, '..', '..', 'assets');

function loadAssets(): Map<string, Asset> {
  const require = createRequire(import.meta.url);
  const chartDir = dirname(require.resolve('chart.js')); // …/chart.js/dist (the package's `require` entry)
  const read = (path: string) => readFileSync(path, 'utf8');
  return new Map<string, Asset>([
    ['chart.umd.min.js', { body: read(join(chartDir, 'chart.umd.min.js')), type: 'text/javascript; charset=utf-8' }],
    ['dashboard.js', { body: read(join(ASSETS_DIR, 'dashboard.js')), type: 'text/javascript; charset=utf-8' }],
    ['dashboard.css', { body: read(join(ASSETS_DIR, 'dashboard.css')), type: 'text/css; charset=utf-8' }],
  ]);
}

/** An address as it appears in a URL (IPv6 in brackets). */
const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** 400 bad input, 503 the database cannot be reached or every pooled connection is busy (the page retries), 500 anything else. */
function errorBody(error: unknown): { status: 400 | 500 | 503; body: { error: string; message: string } } {
  if (ValidationError.isInstance(error)) return { status: 400, body: { error: error.code, message: error.message } };
  if (PostponeError.isInstance(error)) {
    const unavailable = error.code === 'CONNECTION_FAILED' || error.code === 'CONNECTION_LOST' || error.code === 'POOL_TIMEOUT';
    return { status: unavailable ? 503 : 500, body: { error: error.code, message: error.message } };
  }
  return { status: 500, body: { error: 'UNEXPECTED', message: error instanceof Error ? error.message : String(error) } };
}

/** Builds the Hono app (no listening): usable with `app.request(...)` as well as a server. */
export function createDashboardApp(options: DashboardAppOptions): Hono {
  const { store, token } = options;
  const csrfToken = options.csrfToken ?? randomToken();
  const assets = loadAssets();
  const html = pageHtml({ csrfToken, refreshMs: options.refreshMs, listLimit: DASHBOARD_LIST_LIMIT });
  const app = new Hono();

  app.use('*', async (c, next) => {
    c.header('Content-Security-Policy', CSP);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('X-Frame-Options', 'DENY');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('Cache-Control', 'no-store');
    if (token === null) {
      const allowed = loopbackHostHeaders(options.port()).add(`${urlHost(options.host)}:${options.port()}`);
      if (!allowed.has(c.req.header('host') ?? '')) return c.json({ error: 'FORBIDDEN', message: 'unexpected Host header' }, 403);
    } else {
      const bearer = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1];
      const given = bearer ?? readCookie(c.req.header('cookie'), TOKEN_COOKIE) ?? c.req.query('token');
      if (!sameSecret(given, token)) return c.json({ error: 'UNAUTHORIZED', message: 'a valid token is required: open /?token=<token> or send Authorization: Bearer <token>' }, 401);
      if (c.req.method === 'GET' && c.req.path === '/' && c.req.query('token') !== undefined) {
        // Keep the token in an HttpOnly, same-site cookie and drop it from the address bar.
        c.header('Set-Cookie', `${TOKEN_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/`);
        return c.redirect('/', 303);
      }
    }
    if (c.req.method === 'POST') {
      const origin = c.req.header('origin');
      const ownOrigin = `http://${c.req.header('host') ?? ''}`;
      if (!sameSecret(c.req.header(CSRF_HEADER), csrfToken) || origin !== ownOrigin) {
        return c.json({ error: 'CSRF', message: `a POST needs the page's ${CSRF_HEADER} header and this server's Origin` }, 403);
      }
    }
    return next();
  });

  app.onError((error, c) => {
    const { status, body } = errorBody(error);
    if (status !== 400) process.stderr.write(`postpone dashboard: ${c.req.method} ${c.req.path}: ${body.error}: ${body.message}\n`);
    return c.json(body, status);
  });
  app.notFound((c) => c.json({ error: 'NOT_FOUND', message: 'no such page' }, 404));

  app.get('/', (c) => c.html(html));
  app.get('/assets/:name', (c) => {
    const asset = assets.get(c.req.param('name'));
    if (asset === undefined) return c.json({ error: 'NOT_FOUND', message: 'no such asset' }, 404);
    return c.body(asset.body, 200, { 'Content-Type': asset.type });
  });

  app.get('/api/overview', async (c) => c.json({ schema: options.schema, refreshMs: options.refreshMs, ...(await overview(store)) }));

  // The per-key backlog of the key-limited kinds (docs/contract.md#key-backlog): see ./key-backlog.ts.
  app.get('/api/key-backlog', async (c) => c.json(await keyBacklogView(store)));

  app.get('/api/tasks', async (c) => {
    const states = c.req.queries('state')?.filter((s) => s !== '');
    const kinds = c.req.queries('kind')?.filter((k) => k !== '');
    const queue = c.req.query('queue');
    const hasError = c.req.query('hasError');
    const cursor = c.req.query('cursor');
    const limit = Math.min(Number(c.req.query('limit') ?? DASHBOARD_LIST_LIMIT), MAX_API_LIST_LIMIT);
    for (const s of states ?? []) {
      if (!TASK_STATES.includes(s as TaskState)) throw new ValidationError('INVALID_OPTION', 'state', `must be one of ${TASK_STATES.join(', ')}`);
    }
    const page = await store.listTasks({
      ...(states !== undefined && states.length > 0 ? { states: states as TaskState[] } : {}),
      ...(kinds !== undefined && kinds.length > 0 ? { kinds } : {}),
      ...(queue !== undefined && queue !== '' ? { queue } : {}),
      ...(hasError === 'true' ? { hasError: true } : hasError === 'false' ? { hasError: false } : {}),
      ...(cursor !== undefined && cursor !== '' ? { cursor } : {}),
      limit,
    });
    return c.json(page);
  });

  const taskId = (c: Context) => parseTaskId(c.req.param('id'));
  app.get('/api/tasks/:id', async (c) => {
    const found = await taskDetail(store, taskId(c));
    return found === null ? c.json({ error: 'NOT_FOUND', message: 'no such task' }, 404) : c.json(found);
  });
  // One batch (docs/contract.md#batches): counts, seal and callback; 404 for an unknown id.
  app.get('/api/batches/:id', async (c) => {
    const found = await store.getBatch(parseTaskId(c.req.param('id'), 'batchId'));
    return found === null ? c.json({ error: 'NOT_FOUND', message: 'no such batch' }, 404) : c.json(found);
  });
  app.post('/api/tasks/:id/retry', async (c) => c.json(await store.retry({ id: taskId(c) })));
  app.post('/api/tasks/:id/cancel', async (c) => c.json({ outcome: await store.cancel(taskId(c)) }));
  // Bulk actions (docs/contract.md#bulk-operations): body `{ filter, dryRun? }`; the store validates
  // the filter (one naming nothing is a 400) and runs the batches. The page asks with `dryRun` first.
  app.post('/api/bulk/:op', async (c) => {
    const op = c.req.param('op');
    if (op !== 'cancel' && op !== 'retry' && op !== 'delete') return c.json({ error: 'NOT_FOUND', message: 'no such bulk operation' }, 404);
    const body = (await c.req.json().catch(() => null)) as { filter?: unknown; dryRun?: unknown } | null;
    if (body === null || typeof body !== 'object') throw new ValidationError('INVALID_OPTION', 'body', 'must be JSON { filter, dryRun? }');
    const options = { dryRun: body.dryRun === true };
    const filter = body.filter as BulkFilter;
    const result = op === 'cancel' ? await store.cancelMany(filter, options) : op === 'retry' ? await store.retryMany(filter, options) : await store.deleteMany(filter, options);
    return c.json(result);
  });
  // Pause and resume: the body is checked by the store (a ValidationError is a 400); `by` names the dashboard.
  const pauseBody = async (c: Context): Promise<{ target: { queue?: string; kind?: string }; reason?: string }> => {
    const body = (await c.req.json().catch(() => null)) as Record<string, unknown> | null;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ValidationError('INVALID_OPTION', 'body', 'must be a JSON object { queue } or { kind }');
    const { reason, ...target } = body;
    return { target: target as { queue?: string; kind?: string }, ...(reason === undefined || reason === '' ? {} : { reason: reason as string }) };
  };
  app.post('/api/pause', async (c) => {
    const { target, reason } = await pauseBody(c);
    const changed = await store.pause(target as PauseTarget, { by: 'dashboard', ...(reason === undefined ? {} : { reason }) });
    return c.json({ changed });
  });
  app.post('/api/resume', async (c) => c.json({ changed: await store.resume((await pauseBody(c)).target as PauseTarget) }));
  return app;
}

export interface StartDashboardOptions extends Omit<DashboardAppOptions, 'port'> {
  /** Address to bind; not loopback → `token` is required. */
  readonly host: string;
  /** Port to bind, 0 for any free one. */
  readonly port: number;
}

export interface RunningDashboard {
  /** `http://host:port/` with the bound port. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting connections and closes open ones. */
  close(): Promise<void>;
}

/** The error `startDashboard` throws when a non-loopback address has no token. */
export class TokenRequiredError extends Error {
  readonly code = 'TOKEN_REQUIRED';
}

/**
 * Listens on `host:port` and serves the dashboard.
 * @throws TokenRequiredError when `host` is not loopback and `token` is null (nothing is bound)
 * @throws OutcomeError PORT_IN_USE (EADDRINUSE), UsageError INVALID_OPTION (EADDRNOTAVAIL), else the `listen` error
 */
export async function startDashboard(options: StartDashboardOptions): Promise<RunningDashboard> {
  if (options.token === null && !isLoopbackHost(options.host)) {
    throw new TokenRequiredError(`${options.host} is not a loopback address: pass --token (or POSTPONE_DASHBOARD_TOKEN) so every request must carry it`);
  }
  let boundPort = options.port;
  const app = createDashboardApp({ ...options, port: () => boundPort });
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') reject(new OutcomeError('PORT_IN_USE', `${options.host}:${options.port} is already in use: pick another --port (0: any free port)`));
      else if (error.code === 'EADDRNOTAVAIL') reject(new UsageError('INVALID_OPTION', `--host ${options.host}: no interface of this machine has that address`));
      else reject(error);
    };
    server.once('error', failed);
    server.listen(options.port, options.host, () => {
      server.off('error', failed);
      // Once listening, a server error (say, out of file descriptors) is reported, never thrown.
      server.on('error', (error) => process.stderr.write(`postpone dashboard: server error: ${error.message}\n`));
      resolve();
    });
  });
  boundPort = (server.address() as AddressInfo).port;
  return {
    url: `http://${urlHost(options.host)}:${boundPort}/`,
    port: boundPort,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
