/**
 * A worker and the embedded database in one process: SIGTERM must stop them in order (the worker
 * finishes or hands back, `onStopped` runs, then the database stops) and the process must exit by
 * itself with code 0. Before the fix the database's own signal handler ended the process with 143
 * about 1 s after the signal, in the middle of the handler.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const CHILD = fileURLToPath(new URL('./fixtures/embedded-worker-child.mjs', import.meta.url));

it('SIGTERM in a process running a worker on the embedded database: handler finishes, onStopped runs, database stops, exit 0', async () => {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [CHILD], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const started = new Promise<void>((resolve) =>
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      if (stdout.includes('handler-started')) resolve();
    }),
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  await Promise.race([started, exited]);
  child.kill('SIGTERM');
  const { code, signal } = await exited;
  expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
  const lines = stdout.trim().split('\n');
  expect(lines.map((l) => l.split(' ')[0])).toEqual(['handler-started', 'handler-finished', 'onStopped']);
  expect(lines[2]).toContain('state=DONE');
  const dataDir = lines[2]?.split('root=')[1] ?? '';
  expect(dataDir).not.toBe('');
  expect(existsSync(dirname(dataDir))).toBe(false);
});
