/**
 * Every connection-phase failure is a typed `ConnectionError` naming the reason and keeping the
 * SQLSTATE (issue 10 item 11), on both drivers, with real failures: refused, DNS, TLS refused by
 * the server, wrong password (28P01; never MIGRATION_ERROR), database missing (3D000), too many
 * connections (53300).
 */
import { ConnectionError, type ConnectionFailure, PostponeError } from '@postpone/core';
import { freePort } from '@postpone/embedded';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureError } from '@postpone/conformance';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import type { PostgresStore } from '../src/index.js';
import { Admin, DRIVERS, type DriverName } from './support/kits.js';

const admin = Admin.create('connect_errors');
const ROLE = `${admin.schema}_limited`;

beforeAll(async () => {
  // A role that may hold no connection at all: connecting as it fails with 53300.
  await admin.query(`create role ${ROLE} login password 'limited' connection limit 0`);
});
afterAll(async () => {
  await admin.query(`drop role if exists ${ROLE}`);
  await admin.drop();
});

function storeAt(driver: DriverName, url: string, tls = false): PostgresStore<any> {
  return driver === 'pg'
    ? createPgStore({ connectionString: url, schema: admin.schema, ...(tls ? { poolConfig: { ssl: { rejectUnauthorized: false } } } : {}) })
    : createPostgresJsStore({ connectionString: url, schema: admin.schema, connectionOptions: { max: 1, ...(tls ? { ssl: 'require' as const } : {}) } });
}

function withUrl(patch: (u: URL) => void): string {
  const u = new URL(admin.url);
  patch(u);
  return u.toString();
}

const CASES: readonly {
  readonly name: string;
  readonly url: () => Promise<string>;
  readonly tls?: boolean;
  readonly reason: ConnectionFailure;
  /** The SQLSTATE, or per driver when one driver finds the failure before the server answers. */
  readonly sqlState?: string | Partial<Record<DriverName, string>>;
}[] = [
  {
    name: 'nothing listening (ECONNREFUSED)',
    url: async () => {
      const port = await freePort();
      return withUrl((u) => (u.port = String(port)));
    },
    reason: 'REFUSED',
  },
  { name: 'a host name that does not resolve', url: async () => withUrl((u) => (u.hostname = 'no-such-host.invalid')), reason: 'DNS' },
  { name: 'TLS required by the client, not offered by the server', url: async () => admin.url, tls: true, reason: 'TLS' },
  { name: 'a wrong password', url: async () => withUrl((u) => (u.password = 'wrong')), reason: 'AUTHENTICATION', sqlState: '28P01' },
  // pg refuses itself ("client password must be a string") before the server's 28P01.
  { name: 'no password where the server asks for one', url: async () => withUrl((u) => (u.password = '')), reason: 'AUTHENTICATION', sqlState: { postgres: '28P01' } },
  {
    name: 'a database that does not exist',
    url: async () => withUrl((u) => (u.pathname = `/${admin.schema}_missing`)),
    reason: 'DATABASE_MISSING',
    sqlState: '3D000',
  },
  {
    name: 'too many connections',
    url: async () =>
      withUrl((u) => {
        u.username = ROLE;
        u.password = 'limited';
      }),
    reason: 'TOO_MANY_CONNECTIONS',
    sqlState: '53300',
  },
];

describe.each(DRIVERS)('connection-phase failures are named (%s)', (driver) => {
  for (const c of CASES) {
    const sqlState = typeof c.sqlState === 'object' ? c.sqlState[driver] : c.sqlState;
    it(`${c.name} → ConnectionError ${c.reason}${sqlState ? ` (${sqlState})` : ''}, on a call and on migrate; close() leaves no socket`, async () => {
      const sockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
      const before = sockets();
      const store = storeAt(driver, await c.url(), c.tls);
      try {
        for (const call of [() => store.countByState(), () => store.migrate()]) {
          const error = await captureError(call);
          expect(PostponeError.isInstance(error)).toBe(true);
          expect(error, String(error)).toBeInstanceOf(ConnectionError);
          const e = error as ConnectionError;
          expect(e.code).toBe('CONNECTION_FAILED');
          expect(e.reason).toBe(c.reason);
          expect(e.sqlState).toBe(sqlState);
          expect(e.message).toContain(c.reason);
          if (sqlState) expect(e.message).toContain(sqlState);
        }
      } finally {
        await store.close();
      }
      // A socket left open would keep the user's process alive after close() (pg 8 did after a failed SASL exchange).
      for (let i = 0; i < 50 && sockets() > before; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(sockets()).toBeLessThanOrEqual(before);
    });
  }
});
