/**
 * A contender in the side-by-side runs: one system in one of its settings, and the context every
 * measured run shares.
 */
import type { StatementCounter } from './db/statements.js';
import type { RunDatabases } from './run-databases.js';
import type { SystemAdmin } from './systems/system.js';

export interface Contender {
  readonly admin: SystemAdmin;
  readonly setting: string;
}

/** `postpone tuned`, `graphile-worker default`, … */
export function contenderLabel(c: Contender): string {
  return `${c.admin.system} ${c.setting}`;
}

export interface RunContext {
  /** URL of the server's admin database. */
  readonly adminUrl: string;
  readonly databases: RunDatabases;
  readonly counter: StatementCounter;
}
