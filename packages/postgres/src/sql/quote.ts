/**
 * Quoting for SQL text built from constants and schema names. The one definition both SQL packages
 * use (`@postpone/postgres` re-exports it).
 */

/** Quotes an SQL identifier (PostgreSQL 17 §4.1.1): doubles embedded quotes. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** An SQL string literal (PostgreSQL 17 §4.1.2.1). Only for constants and schema names, never for user input. */
export function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
