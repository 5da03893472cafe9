/**
 * `postpone limits keys backlog --kind K` (docs/contract.md#key-backlog): a kind's per-key limit
 * beside its keys' backlog — due, not yet due, CLAIMED, the oldest due task's lateness — most due
 * first. Keys are user data: printed through `table`, which shows control characters escaped.
 */
import type { KeyBacklogPage, KeyConcurrencyRecord } from '@postpone/core';
import { table } from './format.js';

/** What `--json` prints: the declaration (null when the kind has none) and the page. */
export interface KeyBacklogReport extends KeyBacklogPage {
  readonly limit: number | null;
}

/** The report of one page: `limits` is every declaration (`listKeyConcurrency`). */
export function keyBacklogReport(page: KeyBacklogPage, limits: readonly KeyConcurrencyRecord[]): KeyBacklogReport {
  return { ...page, limit: limits.find((l) => l.kind === page.kind)?.limit ?? null };
}

export function keyBacklogText(report: KeyBacklogReport): string {
  const head = report.limit === null ? `kind ${report.kind}: no per-key limit` : `kind ${report.kind}: at most ${report.limit} CLAIMED per limit key`;
  if (report.entries.length === 0) return `${head}\nno task with a limit key is scheduled or claimed`;
  const rows = report.entries.map((e) => [
    e.limitKey,
    String(e.due),
    String(e.notDue),
    report.limit === null ? String(e.claimed) : `${e.claimed} of ${report.limit}`,
    e.oldestDueAt === null ? '-' : `${e.latenessMs} ms`,
  ]);
  const more = report.nextCursor === null ? '' : `\nmore keys: --cursor ${shellQuoted(report.nextCursor)}`;
  return `${head}\n${table(['LIMIT KEY', 'DUE', 'NOT DUE', 'CLAIMED', 'OLDEST DUE WAITING'], rows)}${more}`;
}

/**
 * `text` as one shell word to paste (the cursor holds the last key, user data: spaces, `<`, `;`,
 * quotes, control characters): as it is when it is plain; in single quotes, each `'` written `'\''`
 * (POSIX); with a control character, as `$'…'` with `\xHH` escapes (bash, zsh), so none reaches
 * the terminal raw.
 */
export function shellQuoted(text: string): string {
  if (/^[\w.:,/@%+=-]+$/.test(text)) return text;
  if (!/[\u0000-\u001f\u007f]/.test(text)) return `'${text.replaceAll("'", "'\\''")}'`;
  return `$'${text.replace(/[\\'\u0000-\u001f\u007f]/g, (c) => (c === '\\' || c === "'" ? `\\${c}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`))}'`;
}
