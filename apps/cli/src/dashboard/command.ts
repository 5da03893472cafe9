/**
 * `postpone dashboard`: the command's options, their checks, and the serve-until-signal loop.
 *
 * Rules: binds 127.0.0.1 by default; `--port 0` takes any free port; the URL is printed on stdout
 * once listening. On an address that is not loopback (`0.0.0.0`, a LAN address, a name) it refuses to
 * start without `--token` (exit 2, code TOKEN_REQUIRED); a token, when given, is checked on every
 * request. Stops on SIGINT or SIGTERM (exit 0).
 */
import { type Command, Option } from 'commander';
import { parseDuration, parseInteger, UsageError } from '../args.js';
import type { DashboardStore } from './data.js';
import { MIN_TOKEN_LENGTH, isLoopbackHost } from './security.js';
import { DEFAULT_REFRESH_MS, MAX_REFRESH_MS, MIN_REFRESH_MS, startDashboard } from './server.js';

/** Default port of `postpone dashboard`. */
export const DEFAULT_DASHBOARD_PORT = 7070;

export interface DashboardCliOptions {
  readonly host: string;
  readonly port: number;
  readonly token: string | null;
  readonly refreshMs: number;
}

interface RawOptions {
  host: string;
  port: string;
  token?: string;
  refresh: string;
}

/**
 * Checks the options before anything connects or binds.
 * @throws UsageError INVALID_OPTION (port, refresh, token shape), TOKEN_REQUIRED (not loopback, no token)
 */
export function checkDashboardOptions(raw: RawOptions): DashboardCliOptions {
  const port = parseInteger(raw.port, '--port');
  if (port < 0 || port > 65_535) throw new UsageError('INVALID_OPTION', `--port: expected 0..65535, got ${port}`);
  const refreshMs = parseDuration(raw.refresh, '--refresh');
  if (refreshMs < MIN_REFRESH_MS || refreshMs > MAX_REFRESH_MS) {
    throw new UsageError('INVALID_OPTION', `--refresh: expected ${MIN_REFRESH_MS / 1000}s..${MAX_REFRESH_MS / 1000}s, got ${raw.refresh}`);
  }
  const token = raw.token === undefined || raw.token === '' ? null : raw.token;
  if (token !== null && !new RegExp(`^[A-Za-z0-9._~-]{${MIN_TOKEN_LENGTH},200}$`).test(token)) {
    throw new UsageError('INVALID_OPTION', `--token: expected ${MIN_TOKEN_LENGTH}..200 characters of A-Z a-z 0-9 . _ ~ - (e.g. openssl rand -hex 32)`);
  }
  const host = raw.host.trim();
  if (token === null && !isLoopbackHost(host)) {
    throw new UsageError('TOKEN_REQUIRED', `--host ${host} is not a loopback address: pass --token (or set POSTPONE_DASHBOARD_TOKEN); every request must then carry it`);
  }
  return { host, port, token, refreshMs };
}

/** Adds the `dashboard` command to `program`; `start` gets the checked options. */
export function registerDashboard(program: Command, start: (options: DashboardCliOptions, cmd: Command) => Promise<void>): void {
  program
    .command('dashboard')
    .description('serve the web dashboard: counts, due tasks, lateness, the task list, retry and cancel (Ctrl-C stops it)')
    .option('--host <address>', 'address to bind; anything but loopback requires --token', '127.0.0.1')
    .option('--port <n>', 'port to bind, 0 for any free port', String(DEFAULT_DASHBOARD_PORT))
    .addOption(new Option('--token <token>', `access token every request must carry (${MIN_TOKEN_LENGTH}+ characters)`).env('POSTPONE_DASHBOARD_TOKEN'))
    .option('--refresh <duration>', 'auto-refresh period of the page, 1s..60s', `${DEFAULT_REFRESH_MS / 1000}s`)
    .action(async (raw: RawOptions, cmd: Command) => start(checkDashboardOptions(raw), cmd));
}

/**
 * Serves the dashboard on `store` until SIGINT or SIGTERM, then closes the server (the caller closes
 * the store). Prints the URL once listening.
 */
export async function serveDashboard(store: DashboardStore, schema: string, options: DashboardCliOptions, out: { stdout: (text: string) => void }): Promise<void> {
  const running = await startDashboard({ store, schema, host: options.host, port: options.port, token: options.token, refreshMs: options.refreshMs });
  const how = options.token === null ? '' : ` (open ${running.url}?token=<your token> once, or send Authorization: Bearer <token>)`;
  // The URL ends the phrase with a space after it, so a terminal's link never takes in the punctuation.
  out.stdout(`postpone dashboard listening on ${running.url} ${how.trim()}${how ? ' ' : ''}(Ctrl-C stops it)`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await running.close();
}
