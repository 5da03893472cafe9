/**
 * The dashboard's guards: which addresses count as loopback, the access token, the CSRF token and
 * the Origin / Host checks. Tokens are compared in constant time (SHA-256 digests through
 * `crypto.timingSafeEqual`, so their lengths leak nothing either).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

/** Shortest `--token` accepted (characters). */
export const MIN_TOKEN_LENGTH = 16;
/** Name of the cookie that carries the access token after `/?token=…` was opened once. */
export const TOKEN_COOKIE = 'postpone_dashboard_token';
/** Request header that carries the CSRF token on every POST. */
export const CSRF_HEADER = 'x-csrf-token';

/**
 * True for addresses only this machine can reach: `localhost`, 127.0.0.0/8, `::1` (also as
 * `::ffff:127.x.x.x`). Everything else — `0.0.0.0`, `::`, a LAN or public address, any other name —
 * is not loopback and needs a token.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  if (isIPv4(h)) return h.startsWith('127.');
  if (isIPv6(h)) {
    if (h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    return mapped !== null && (mapped[1] as string).startsWith('127.');
  }
  return false;
}

/** A fresh random token: 32 bytes as 64 hex digits (the per-process CSRF token). */
export function randomToken(): string {
  return randomBytes(32).toString('hex');
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** Constant-time equality of two secrets (false when `given` is missing). */
export function sameSecret(given: string | undefined | null, expected: string): boolean {
  if (given === undefined || given === null) return false;
  return timingSafeEqual(digest(given), digest(expected));
}

/** The `host:port` forms a browser on this machine sends as `Host` for a loopback listener on `port`. */
export function loopbackHostHeaders(port: number): Set<string> {
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
}

/** Reads one cookie from a `Cookie` header (no decoding: the token is plain text). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
