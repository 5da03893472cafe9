/**
 * Number and table formatting for the Markdown report.
 */
import type { RoundSummary } from '../peers/util/stats.js';

/** `12 345`, `12.3`, `0.042`: thousands separated by a narrow space, digits by magnitude (none for integers); `—` for NaN. */
export function num(n: number, digits?: number): string {
  if (!Number.isFinite(n)) return '—';
  const d = digits ?? (Number.isInteger(n) || Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : Math.abs(n) >= 1 ? 2 : 3);
  const [int, frac] = n.toFixed(d).split('.');
  const grouped = (int ?? '').replace(/\B(?=(\d{3})+(?!\d))/g, '\u202f');
  return frac ? `${grouped}.${frac}` : grouped;
}

/** `1.52×`, `—` for NaN. */
export function times(r: number): string {
  return Number.isFinite(r) ? `${r >= 10 ? r.toFixed(0) : r.toFixed(2)}×` : '—';
}

/** `1 234 (1 200–1 260)`: median and range over rounds (no range for one round). */
export function medianRange(s: RoundSummary, digits?: number): string {
  if (s.rounds === 0) return '—';
  if (s.rounds === 1 || s.low === s.high) return num(s.median, digits);
  return `${num(s.median, digits)} (${num(s.low, digits)}–${num(s.high, digits)})`;
}

/** A Markdown table. Cells must not contain `|` (it is escaped). */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const esc = (c: string) => c.replaceAll('|', '\\|').replaceAll('\n', ' ');
  const line = (cells: readonly string[]) => `| ${cells.map(esc).join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}
