/**
 * The child's `migrate` mode: on each `migrate` control, a fresh store of the configured driver on the
 * named schema runs `migrate()`; the child reports `migrated` with the time taken or the error.
 */
import { createPgStore } from '@postpone/postgres/pg';
import { createPostgresJsStore } from '@postpone/postgres/postgres-js';
import type { ParentChannel } from './channel.js';
import type { ChildConfig } from './protocol.js';
import type { Runner } from './resources.js';

export function prepareMigrate(config: ChildConfig, channel: ParentChannel): Runner {
  const driver = config.connection?.driver ?? 'pg';
  channel.onControl((control) => {
    if (control.type !== 'migrate') return;
    const { schema } = control;
    void (async () => {
      const store =
        driver === 'pg'
          ? createPgStore({ connectionString: config.databaseUrl, schema, poolConfig: { max: 1 } })
          : createPostgresJsStore({ connectionString: config.databaseUrl, schema, connectionOptions: { max: 1 } });
      const started = performance.now();
      try {
        await store.migrate();
        await channel.emit({ type: 'migrated', schema, ms: performance.now() - started });
      } catch (error) {
        const message = error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (cause: ${error.cause.message})` : ''}` : String(error);
        await channel.emit({ type: 'migrated', schema, ms: performance.now() - started, error: message });
      } finally {
        await store.close().catch(() => {});
      }
    })();
  });
  return { start() {}, async stop() {} };
}
