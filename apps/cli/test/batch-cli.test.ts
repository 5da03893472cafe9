/** `postpone batch show ID` (docs/contract.md#batches): state, counts and the callback task of one batch; NOT_FOUND exits 1. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dropSchema, uniqueSchemaName } from '@postpone/embedded';
import { testDatabaseUrl } from '@postpone/embedded/vitest-setup';
import { createPgStore } from '@postpone/postgres/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/postpone.js', import.meta.url));
const schema = uniqueSchemaName('cli_batch');
let url = '';

function postpone(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, '--schema', schema, ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: url }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  url = testDatabaseUrl();
  expect((await postpone(['migrate'])).code).toBe(0);
});
afterAll(async () => {
  await dropSchema(url, schema);
});

describe('postpone batch show', () => {
  it('prints OPEN with counts, then CALLED_BACK with the callback task; --json; an unknown batch exits 1', async () => {
    const store = createPgStore({ connectionString: url, schema });
    try {
      const id = await store.createBatch({ callback: { kind: 'import-done', queue: 'ops' } });
      const [, held] = await store.scheduleInBatch(id, [{ kind: 'row' }, { kind: 'row', delayMs: 3_600_000 }]);
      const open = await postpone(['batch', 'show', id]);
      expect(open.code).toBe(0);
      expect(open.stdout).toMatch(new RegExp(`^batch +${id}\\nstate +OPEN\\nmembers +2 \\(remaining 2, DONE 0, DEAD 0, CANCELLED 0\\)\\ncallback +import-done in queue ops\\n`));
      const [c] = await store.claim({ owner: 'w', limit: 1, leaseMs: 60_000, kinds: ['row'] });
      expect(await store.complete({ id: c?.id as string, attempt: c?.attempt as number, owner: 'w' })).toBe('DONE');
      expect(await store.cancel(held?.id as string)).toBe('CANCELLED');
      const sealed = await store.sealBatch(id);
      expect(sealed.state).toBe('CALLED_BACK');
      const shown = await postpone(['batch', 'show', id]);
      expect(shown.stdout).toMatch(/^state +CALLED_BACK$/m);
      expect(shown.stdout).toMatch(/^members +2 \(remaining 0, DONE 1, DEAD 0, CANCELLED 1\)$/m);
      expect(shown.stdout).toMatch(new RegExp(`^callback +import-done in queue ops: task ${sealed.callbackTaskId}$`, 'm'));
      const json = await postpone(['--json', 'batch', 'show', id]);
      expect(JSON.parse(json.stdout)).toMatchObject({ id, state: 'CALLED_BACK', total: 2, done: 1, cancelled: 1, callbackTaskId: sealed.callbackTaskId });
      const missing = await postpone(['batch', 'show', '987654321']);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/no batch 987654321/);
    } finally {
      await store.close();
    }
  });
});
