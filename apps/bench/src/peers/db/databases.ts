/**
 * Fresh databases for each measured run: every system starts from an empty, freshly migrated
 * database, so no run inherits another's bloat, statistics or cached plans.
 *
 * A system is migrated once into a template database; each run clones it with
 * `CREATE DATABASE ... TEMPLATE` (PostgreSQL 17 §22.3: the template must have no other
 * connections while it is copied) and drops the clone afterwards with `DROP DATABASE ... WITH (FORCE)`
 * (PostgreSQL 17 DROP DATABASE: FORCE terminates remaining connections).
 */
import pg from 'pg';
import { databaseUrl, withClient } from './admin.js';

let counter = 0;

/** A fresh, lowercase database name `<prefix>_<pid>_<n>`, safe as an identifier. */
export function freshDatabaseName(prefix: string): string {
  counter++;
  const clean = prefix.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 40);
  return `${clean}_${process.pid.toString(36)}_${counter}`;
}

/**
 * Creates database `name` (optionally as a copy of `template`) on the server of `adminUrl`.
 * @returns its connection URL
 */
export async function createDatabase(adminUrl: string, name: string, template?: string): Promise<string> {
  await withClient(adminUrl, async (client) => {
    const from = template ? ` template ${pg.escapeIdentifier(template)}` : '';
    await client.query(`create database ${pg.escapeIdentifier(name)}${from}`);
  });
  return databaseUrl(adminUrl, name);
}

/** Drops database `name`, ending its remaining connections. Idempotent. */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, async (client) => {
    await client.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
  });
}
