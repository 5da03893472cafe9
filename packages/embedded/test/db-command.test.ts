/**
 * `pnpm db` (bin/postpone-db.js): starts the embedded server, prints the URL to export, serves
 * queries until SIGTERM, then stops the server and deletes its data folder.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/postpone-db.js', import.meta.url));

it('prints an export line, serves queries, and on SIGTERM stops the server and deletes its data', async () => {
  const child = spawn(process.execPath, [BIN], { env: { PATH: process.env.PATH ?? '', TMPDIR: process.env.TMPDIR ?? '/tmp' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  // 'close', not 'exit': 'exit' may come before the last of stdout and stderr has been read.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL within 60 s; stderr: ${err}`)), 60_000);
      const check = () => {
        const m = /export DATABASE_URL='(postgres:\/\/[^']+)'/.exec(out);
        if (m !== null) {
          clearTimeout(timer);
          resolve(m[1] as string);
        }
      };
      child.stdout.on('data', check);
      void exited.then((code) => reject(new Error(`exited ${code} before printing a URL; stderr: ${err}`)));
    });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ dir: string }>('select current_setting($1) as dir', ['data_directory']);
    await client.end();
    const dataDir = rows[0]?.dir as string;
    expect(existsSync(dataDir)).toBe(true);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toMatch(/PostgreSQL stopped, data deleted\.\n$/);
    expect(existsSync(dataDir)).toBe(false);
    const after = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    await expect(after.connect()).rejects.toThrow(/ECONNREFUSED/);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}, 90_000);
