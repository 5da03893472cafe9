#!/usr/bin/env bash
# The first run of a new user, as root in a folder only its owner may enter (mktemp -d is 0700), with a
# space in the path: clone this repository there, install, and start the embedded PostgreSQL once.
# Prints one line `CHECK fresh_clone_embedded PASS|FAIL ...` and exits non-zero on failure.
set -uo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
clone="$dir/fresh clone"
fail() { echo "CHECK fresh_clone_embedded FAIL $1 (folder mode $(stat -c %a "$dir"), user $(id -un))"; exit 1; }
git clone -q "$src" "$clone" || fail "git clone"
cd "$clone" || fail "cd"
pnpm install --frozen-lockfile --offline >/dev/null 2>&1 || pnpm install --frozen-lockfile >/dev/null 2>&1 || fail "pnpm install"
pnpm --filter @postpone/embedded build >/dev/null 2>&1 || fail "build"
cd packages/embedded || fail "cd"
out=$(env -u DATABASE_URL node --input-type=module -e "
import { startEmbeddedPostgres } from './dist/index.js';
import pg from 'pg';
const db = await startEmbeddedPostgres();
const client = new pg.Client({ connectionString: db.url });
await client.connect();
const { rows } = await client.query('select 1 as one');
await client.end();
await db.stop();
console.log('one=' + rows[0].one + ' binDir=' + (db.binDir.includes('postpone-pgbin-') ? 'mirror' : 'in-place'));
" 2>&1) || fail "start: $(echo "$out" | tail -5 | tr '\n' ' ')"
echo "CHECK fresh_clone_embedded PASS folder_mode=$(stat -c %a "$dir") user=$(id -un) $out"
