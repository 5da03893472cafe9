#!/usr/bin/env node
// `pnpm db` (at the repository root): starts an embedded PostgreSQL 17 to try Postpone by hand — the
// CLI, the dashboard, the README's examples — prints its DATABASE_URL, and runs until Ctrl-C
// (SIGINT) or SIGTERM; then it stops the server and deletes its data folder.
import { EmbeddedPostgresError, startEmbeddedPostgres } from '../dist/index.js';

let db;
try {
  db = await startEmbeddedPostgres();
} catch (error) {
  const code = EmbeddedPostgresError.isInstance(error) ? error.code : 'UNEXPECTED';
  process.stderr.write(`postpone-db: error ${code}: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
process.stdout.write(
  `PostgreSQL 17 is running on 127.0.0.1:${db.port}; its data is deleted when this stops.\n` +
    `In another terminal:\n  export DATABASE_URL='${db.url}'\nCtrl-C stops it.\n`,
);
const keepAlive = setInterval(() => {}, 2 ** 30);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  clearInterval(keepAlive);
  await db.stop();
  process.stdout.write('PostgreSQL stopped, data deleted.\n');
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
