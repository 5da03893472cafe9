/**
 * Which limits exist is read with ONE statement (`limitDeclarations`) at most once a second
 * (LIMIT_DECLARATIONS_REFRESH_MS), for the rate limits, per-key concurrency and per-key rate limits
 * together. Before, each had a statement and a 1 s cache of its own: 3 idle default workers polling
 * every second sent 12.4 statements/s instead of about 3 (evidence/bench/report.md, "Throughput II").
 * The statements each claim sends are recorded on the store's own pool (a real `pg.Pool`; every
 * client it connects has its `query` wrapped to note the text).
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPgStore } from '../src/drivers/pg.js';
import { keyLimitStatements, keyRateStatements, rateLimitStatements, statements } from '../src/sql/index.js';
import { LIMIT_DECLARATIONS_REFRESH_MS } from '../src/store/limit-declarations.js';
import { Admin } from './support/kits.js';

/** A store on its own pool whose every statement text is pushed to `sent`. */
function recordedStore(admin: Admin) {
  const sent: string[] = [];
  const pool = new pg.Pool({ connectionString: admin.url, max: 2 });
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => {
      const first = args[0];
      sent.push(typeof first === 'string' ? first : String((first as { text?: string }).text));
      return query(...args);
    }) as never;
  });
  const store = createPgStore({ pool, schema: admin.schema });
  return {
    store,
    sent,
    async close() {
      await store.close();
      await pool.end();
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('limit declarations: one statement a second', () => {
  const admin = Admin.create('limitdecl');
  afterAll(() => admin.drop());

  it('an empty claim reads the declarations once, in one statement; a claim within the second reads none', async () => {
    const { store, sent, close } = recordedStore(admin);
    try {
      await store.migrate();
      const rate = rateLimitStatements(admin.schema);
      const claim = { owner: 'w1', limit: 10, leaseMs: 30_000 };
      sent.length = 0;
      // The cache is filled after this instant: while less than the refresh has passed since, it holds.
      const filledAfter = performance.now();
      expect(await store.claim(claim)).toEqual([]);
      const first = sent.splice(0);
      expect(first.filter((t) => t === rate.limitDeclarations)).toHaveLength(1);
      expect(first.filter((t) => t === rate.rateLimitKeys || t === keyLimitStatements(admin.schema).keyLimitList || t === keyRateStatements(admin.schema).keyRateLimitKinds)).toEqual([]);
      expect(first.at(-1)).toBe(statements(admin.schema).taskClaim);
      // Within the refresh: the claim alone (a machine that stalled past the refresh may read once, never more).
      expect(await store.claim(claim)).toEqual([]);
      const second = sent.splice(0);
      if (performance.now() - filledAfter < LIMIT_DECLARATIONS_REFRESH_MS) expect(second).toEqual([statements(admin.schema).taskClaim]);
      else expect(second.filter((t) => t === rate.limitDeclarations).length).toBeLessThanOrEqual(1);
      // After it: one read again.
      await sleep(LIMIT_DECLARATIONS_REFRESH_MS + 50);
      await store.claim(claim);
      expect(sent.splice(0).filter((t) => t === rate.limitDeclarations)).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it('a declaration of each sort made by this process is applied by its next claim (the cache is dropped)', async () => {
    const { store, sent, close } = recordedStore(admin);
    try {
      await admin.truncate();
      const claim = { owner: 'w1', limit: 10, leaseMs: 30_000 };
      await store.claim(claim);
      await store.scheduleMany([
        { kind: 'rated', payload: null },
        { kind: 'rated', payload: null },
        { kind: 'keyed', payload: null, limitKey: 'a' },
        { kind: 'keyed', payload: null, limitKey: 'a' },
        { kind: 'keyrated', payload: null, limitKey: 'b' },
        { kind: 'keyrated', payload: null, limitKey: 'b' },
      ]);
      await store.setRateLimit({ kind: 'rated', limit: 1, windowMs: 60_000 });
      await store.setKeyConcurrency({ kind: 'keyed', limit: 1 });
      await store.setKeyRateLimit({ kind: 'keyrated', limit: 1, windowMs: 60_000 });
      sent.length = 0;
      const claimed = await store.claim(claim);
      // One of each limited kind, though two of each are due: every declaration was applied at once.
      expect(claimed.map((t) => t.kind).sort()).toEqual(['keyed', 'keyrated', 'rated']);
      expect(sent.filter((t) => t === rateLimitStatements(admin.schema).limitDeclarations)).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it('a schema without one of the tables (older than its migration) reads each table alone, from then on, and claims as before', async () => {
    const { store, sent, close } = recordedStore(admin);
    try {
      await admin.truncate();
      await admin.query(`drop table ${admin.t('key_rate_log')}, ${admin.t('key_rate_limit')}`);
      await store.scheduleMany([{ kind: 'rated', payload: null }, { kind: 'rated', payload: null }]);
      await store.setRateLimit({ kind: 'rated', limit: 1, windowMs: 60_000 });
      sent.length = 0;
      const claim = { owner: 'w1', limit: 10, leaseMs: 30_000 };
      // The rate limit still holds: one of the two due tasks.
      expect((await store.claim(claim)).map((t) => t.kind)).toEqual(['rated']);
      const rate = rateLimitStatements(admin.schema);
      const reads: string[] = [rate.limitDeclarations, rate.rateLimitKeys, keyLimitStatements(admin.schema).keyLimitList, keyRateStatements(admin.schema).keyRateLimitKinds];
      expect(sent.splice(0).filter((t) => reads.includes(t))).toEqual(reads);
      // The union is not tried again: no failing statement a second.
      await sleep(LIMIT_DECLARATIONS_REFRESH_MS + 50);
      await store.claim(claim);
      expect(sent.splice(0).filter((t) => reads.includes(t))).toEqual(reads.slice(1));
    } finally {
      await close();
    }
  });
});
