import { cpus, arch, release, type } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { evidenceDir, recordEnv } from '@postpone/testkit';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { CASE_WORKER, CLAIM_LOAD, childEntry, describeSettings, STALL_WORKER } from '../src/index.js';

describe('evidence environment', () => {
  it('records PostgreSQL, Node.js, CPUs and the lease and poll settings in evidence/env.txt', async () => {
    const client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
    const { rows } = await client.query<{ version: string }>('select version() as version');
    await client.end();
    const cpuList = cpus();
    const entries = {
      PostgreSQL: rows[0]?.version ?? 'unknown',
      'Node.js': process.version,
      CPUs: `${cpuList.length} x ${cpuList[0]?.model.trim() ?? 'unknown'}`,
      OS: `${type()} ${release()} ${arch()}`,
      'harness workers': describeSettings(CASE_WORKER),
      'harness workers (stall_event_loop_fenced)': describeSettings(STALL_WORKER),
      'harness claim load (naive control and its twin)': Object.entries(CLAIM_LOAD).map(([k, n]) => `${k}=${n}`).join(' '),
      'harness child entry': childEntry().pathname.endsWith('.ts') ? '@postpone/faultnet src/child/worker-main.ts through tsx' : '@postpone/faultnet dist/child/worker-main.js',
    };
    recordEnv(entries);
    const text = readFileSync(join(evidenceDir(), 'env.txt'), 'utf8');
    for (const [key, value] of Object.entries(entries)) expect(text).toContain(`${key}: ${value}`);
    expect(entries.PostgreSQL).toMatch(/^PostgreSQL \d+/);
  });
});
