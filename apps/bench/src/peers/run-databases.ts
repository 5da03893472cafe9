/**
 * A fresh database per measured run, for every system: each system is migrated once into a template
 * database, and each run gets a clone (see `db/databases.ts`) that is dropped when the run ends.
 */
import { createDatabase, dropDatabase, freshDatabaseName } from './db/databases.js';
import { delay } from './util/wait.js';
import type { SystemAdmin } from './systems/system.js';

/** SQLSTATE 55006 object_in_use: the template still has a connection closing (PostgreSQL 17 Appendix A). */
const OBJECT_IN_USE = '55006';

export class RunDatabases {
  private readonly templates = new Map<string, Promise<string>>();

  constructor(private readonly adminUrl: string) {}

  /** The migrated template of `admin`'s system (created on first use). */
  template(admin: SystemAdmin): Promise<string> {
    let name = this.templates.get(admin.system);
    if (!name) {
      name = (async () => {
        const db = freshDatabaseName(`bench_tmpl_${admin.system}`);
        const url = await createDatabase(this.adminUrl, db);
        await admin.migrate(url);
        return db;
      })();
      this.templates.set(admin.system, name);
    }
    return name;
  }

  /**
   * Runs `fn` with a fresh clone of the system's template, and drops the clone afterwards.
   * @param label part of the database name (e.g. `tp3`)
   */
  async withFresh<T>(admin: SystemAdmin, label: string, fn: (url: string, database: string) => Promise<T>): Promise<T> {
    const template = await this.template(admin);
    const name = freshDatabaseName(`bench_${admin.system}_${label}`);
    const url = await this.cloneWithRetry(name, template);
    try {
      return await fn(url, name);
    } finally {
      await dropDatabase(this.adminUrl, name);
    }
  }

  private async cloneWithRetry(name: string, template: string): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await createDatabase(this.adminUrl, name, template);
      } catch (error) {
        if ((error as { code?: string }).code !== OBJECT_IN_USE || attempt >= 50) throw error;
        await delay(100);
      }
    }
  }

  /** Drops every template. */
  async dropTemplates(): Promise<void> {
    for (const name of this.templates.values()) {
      const db = await name.catch(() => undefined);
      if (db) await dropDatabase(this.adminUrl, db);
    }
    this.templates.clear();
  }
}
