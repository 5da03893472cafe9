/**
 * After the database is unreachable for ~1.5 s under load, the store it created reconnects within
 * about a second of it coming back (issue 10 item 5: postgres.js's default backoff waited up to
 * 20 s). The proxy resets every connection (open and new) during the outage, as a restarting
 * server does; then the first calls after it must succeed within a bounded number of bounded tries.
 */
import { ConnectionError, ConnectionLostError } from '@postpone/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TcpProxy } from '@postpone/testkit';
import type { PostgresStore } from '../src/index.js';
import { createPgStore } from '../src/drivers/pg.js';
import { createPostgresJsStore } from '../src/drivers/postgres-js.js';
import { Admin, DRIVERS, makeKit } from './support/kits.js';

const OUTAGE_MS = 1_500;
const LOAD_LOOPS = 5;
/** After the outage: at most this many tries, each given at most TRY_MS, TRY_GAP_MS apart. */
const TRIES = 3;
const TRY_MS = 1_000;
const TRY_GAP_MS = 100;

const admin = Admin.create('reconnect');
afterAll(() => admin.drop());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves true when `call` succeeded within `ms`, false when it failed or is still pending. */
async function within(call: () => Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([call().then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe.each(DRIVERS)('reconnect after a short outage (%s, store-created connections)', (driver) => {
  const kit = makeKit(driver);
  let proxy: TcpProxy;
  let store: PostgresStore<any>;
  beforeAll(async () => {
    await kit.store({ schema: admin.schema }).migrate();
    proxy = await TcpProxy.forUrl(kit.url);
    const url = proxy.rewrite(kit.url);
    store =
      driver === 'pg'
        ? createPgStore({ connectionString: url, schema: admin.schema })
        : createPostgresJsStore({ connectionString: url, schema: admin.schema });
  });
  afterAll(async () => {
    await store.close();
    await proxy.close();
    await kit.close();
  });

  it(`a call succeeds within ${TRIES} tries of ${TRY_MS} ms after a ${OUTAGE_MS} ms outage under load`, async () => {
    await Promise.all(Array.from({ length: LOAD_LOOPS }, () => store.countByState()));

    proxy.setFault({ mode: 'drop' });
    const outageEnds = performance.now() + OUTAGE_MS;
    const errors: unknown[] = [];
    // Load during the outage: every failed connection attempt raises postgres.js's shared retry count.
    await Promise.all(
      Array.from({ length: LOAD_LOOPS }, async () => {
        while (performance.now() < outageEnds) {
          await within(
            () =>
              store.schedule({ kind: 'outage' }).catch((error: unknown) => {
                errors.push(error);
                throw error;
              }),
            OUTAGE_MS,
          );
          await sleep(50);
        }
      }),
    );
    proxy.setFault({ mode: 'pass' });

    // Every failure during the outage was a typed connection error.
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.filter((e) => !(e instanceof ConnectionLostError || e instanceof ConnectionError))).toEqual([]);

    let tries = 0;
    let ok = false;
    while (!ok && tries < TRIES) {
      tries++;
      ok = await within(() => store.schedule({ kind: 'after-outage' }), TRY_MS);
      if (!ok) await sleep(TRY_GAP_MS);
    }
    expect({ ok, tries }).toMatchObject({ ok: true });
    // And the store is whole again: several calls in parallel all succeed.
    const results = await Promise.all(Array.from({ length: LOAD_LOOPS }, () => within(() => store.countByState(), TRY_MS)));
    expect(results).toEqual(Array.from({ length: LOAD_LOOPS }, () => true));
  });
});
