/**
 * Splits a SQL script (a migration's text) into its single statements, so `migrate()` sends each as a
 * query of its own: one statement per query works on every driver and protocol (extended-protocol
 * clients, and Citus, which forwards a DDL's query string to its worker nodes as a prepared statement
 * and there refuses several commands: 42601 "cannot insert multiple commands into a prepared statement").
 *
 * The lexer knows what the PostgreSQL scanner knows about where a `;` does NOT end a statement
 * (PostgreSQL 17 §4.1): inside a single-quoted string (`''` an escaped quote; `E'…'` also `\'`), a
 * double-quoted identifier (`""`), a dollar-quoted body (`$tag$ … $tag$`, the tag an identifier
 * without `$`, or empty), a `--` line comment, or a `/* … *\/` block comment (which nests). It does not
 * know `BEGIN ATOMIC … END` bodies of SQL-standard functions: a script holding one throws.
 */

/** Why a script cannot be split: an unterminated quote, comment or dollar body, or `begin atomic`. */
export class SqlSplitError extends Error {
  override readonly name = 'SqlSplitError';
  /** 0-based offset in the script where the unterminated construct starts. */
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(`${message} at offset ${offset}`);
    this.offset = offset;
  }
}

const IDENT_START = /[A-Za-z_\u0080-\uffff]/;
const IDENT_PART = /[A-Za-z0-9_\u0080-\uffff]/;

/** The dollar-quote opening tag (`$tag$` or `$$`) at `i`, or undefined when `$` there is not one (`$1`, `a$b`). */
function dollarTagAt(sql: string, i: number): string | undefined {
  // A `$` continuing an identifier (`a$b`) or a parameter (`$1`) opens no quote.
  if (i > 0 && IDENT_PART.test(sql.charAt(i - 1))) return undefined;
  let j = i + 1;
  if (sql.charAt(j) === '$') return '$$';
  if (!IDENT_START.test(sql.charAt(j))) return undefined;
  // Bounded by the script's length.
  while (j < sql.length && IDENT_PART.test(sql.charAt(j))) j += 1;
  return sql.charAt(j) === '$' ? sql.slice(i, j + 1) : undefined;
}

/**
 * The statements of `sql`, in order, each trimmed of surrounding whitespace and without its
 * terminating `;`; empty statements (only whitespace and comments) are left out. Comments inside a
 * statement are kept as they are. Joining the result with `;\n` gives a script PostgreSQL runs the
 * same way as `sql`.
 * @param sql a script of zero or more statements separated by `;`
 * @returns the statements, possibly none
 * @throws SqlSplitError for an unterminated string, identifier, comment or dollar-quoted body, or a `begin atomic` body
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let start = 0;
  /** True once the current statement holds something other than whitespace and comments. */
  let substantive = false;
  const push = (end: number): void => {
    if (substantive) out.push(sql.slice(start, end).trim());
    start = end + 1;
    substantive = false;
  };
  let i = 0;
  // Each step advances i by at least one: bounded by the script's length.
  while (i < sql.length) {
    const c = sql.charAt(i);
    const next = sql.charAt(i + 1);
    if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i + 2);
      i = end === -1 ? sql.length : end + 1;
      continue;
    }
    if (c === '/' && next === '*') {
      let depth = 1;
      let j = i + 2;
      while (depth > 0) {
        if (j >= sql.length) throw new SqlSplitError('unterminated block comment', i);
        if (sql.charAt(j) === '/' && sql.charAt(j + 1) === '*') {
          depth += 1;
          j += 2;
        } else if (sql.charAt(j) === '*' && sql.charAt(j + 1) === '/') {
          depth -= 1;
          j += 2;
        } else j += 1;
      }
      i = j;
      continue;
    }
    if (c === ';') {
      push(i);
      i += 1;
      continue;
    }
    if (/\s/.test(c)) {
      i += 1;
      continue;
    }
    substantive = true;
    if (c === "'") {
      const escapes = i > 0 && (sql.charAt(i - 1) === 'E' || sql.charAt(i - 1) === 'e') && (i < 2 || !IDENT_PART.test(sql.charAt(i - 2)));
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) throw new SqlSplitError('unterminated string', i);
        const d = sql.charAt(j);
        if (escapes && d === '\\') j += 2;
        else if (d === "'" && sql.charAt(j + 1) === "'") j += 2;
        else if (d === "'") break;
        else j += 1;
      }
      i = j + 1;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) throw new SqlSplitError('unterminated quoted identifier', i);
        if (sql.charAt(j) === '"' && sql.charAt(j + 1) === '"') j += 2;
        else if (sql.charAt(j) === '"') break;
        else j += 1;
      }
      i = j + 1;
      continue;
    }
    if (c === '$') {
      const tag = dollarTagAt(sql, i);
      if (tag !== undefined) {
        const end = sql.indexOf(tag, i + tag.length);
        if (end === -1) throw new SqlSplitError(`unterminated dollar-quoted body ${tag}`, i);
        i = end + tag.length;
        continue;
      }
    }
    if ((c === 'b' || c === 'B') && /^begin\s+atomic\b/i.test(sql.slice(i, i + 40)) && (i === 0 || !IDENT_PART.test(sql.charAt(i - 1)))) {
      throw new SqlSplitError('a BEGIN ATOMIC body cannot be split', i);
    }
    if (IDENT_PART.test(c)) {
      // A whole word at once, so `a$b` and `E'` are seen with their context.
      let j = i + 1;
      while (j < sql.length && (IDENT_PART.test(sql.charAt(j)) || sql.charAt(j) === '$')) j += 1;
      // Stop before a quote so `E'…'` is read as a string starting at the quote.
      i = j;
      continue;
    }
    i += 1;
  }
  push(sql.length);
  return out;
}
