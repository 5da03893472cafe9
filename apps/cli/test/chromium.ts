/**
 * The browser of the dashboard test: Debian's `chromium`, installed here when it is missing.
 *
 * `chromium` on PATH → its path. Missing and root → `apt-get update && apt-get install -y chromium`
 * (bounded by a timeout), then its path. Missing and not root, or the install failed → an Error
 * naming the remedy: the test fails, it is never skipped.
 */
import { spawnSync } from 'node:child_process';
import { type Browser, chromium } from 'playwright-core';

/** Longest the apt-get steps may take together (ms). */
export const CHROMIUM_INSTALL_TIMEOUT_MS = 900_000;

function which(name: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const path = r.stdout.trim();
  return r.status === 0 && path !== '' ? path : null;
}

function apt(args: readonly string[], deadline: number): void {
  const timeout = Math.max(1_000, deadline - Date.now());
  const r = spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=120', ...args], {
    encoding: 'utf8',
    timeout,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (r.status !== 0) {
    const tail = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    const why = r.error !== undefined ? r.error.message : `exit ${r.status ?? r.signal}`;
    throw new Error(`the dashboard test needs Debian's chromium; \`apt-get ${args.join(' ')}\` failed (${why}):\n${tail}`);
  }
}

/** The path of `chromium`, installing it first when missing (see the module comment). */
export function ensureChromium(): string {
  const found = which('chromium');
  if (found !== null) return found;
  if (process.getuid?.() !== 0) {
    throw new Error('the dashboard test needs Debian\'s chromium, which is not on PATH, and cannot install it (not root): run `apt-get install -y chromium` as root');
  }
  const deadline = Date.now() + CHROMIUM_INSTALL_TIMEOUT_MS;
  apt(['update'], deadline);
  apt(['install', '-y', 'chromium'], deadline);
  const installed = which('chromium');
  if (installed === null) throw new Error('apt-get installed chromium but `chromium` is still not on PATH');
  return installed;
}

/** Headless Chromium at `executablePath` (from {@link ensureChromium}); as root without its sandbox, which refuses root. */
export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox', '--disable-dev-shm-usage'] : ['--disable-dev-shm-usage'],
  });
}
