#!/usr/bin/env bash
# Builds every publishable package (packages/* and apps/* without "private": true), packs it with pnpm (as it
# would be published: workspace: ranges rewritten), and checks the tarball with publint (--strict:
# warnings fail too) and @arethetypeswrong/cli (profile esm-only: the packages are ESM-only, so the
# CommonJS `require` resolutions are not judged); then installs the tarballs a PostgreSQL worker needs
# into a fresh npm project outside the repository and runs one task with them (needs the npm registry
# for `pg`). Prints one line per package and check, and exits non-zero when any check fails.
set -uo pipefail
cd "$(dirname "$0")/.."

mapfile -t dirs < <(node -e '
  const { readdirSync, readFileSync, existsSync } = require("node:fs");
  for (const root of ["packages", "apps"])
    for (const d of readdirSync(root).sort()) {
      const f = `${root}/${d}/package.json`;
      if (existsSync(f) && !JSON.parse(readFileSync(f, "utf8")).private) console.log(`${root}/${d}`);
    }')
if [ "${#dirs[@]}" -eq 0 ]; then echo "check-packages: no publishable package found"; exit 1; fi

filters=()
for d in "${dirs[@]}"; do filters+=("--filter=./$d"); done
if ! pnpm turbo run build "${filters[@]}" --output-logs=errors-only >/dev/null; then
  echo "check-packages: build failed"; exit 1
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
failures=0
for d in "${dirs[@]}"; do
  name="$(node -p "require('./$d/package.json').name")"
  if ! tarball="$(cd "$d" && pnpm pack --pack-destination "$out" 2>"$out/pack.err" | tail -n 1)" || [ ! -f "$tarball" ]; then
    echo "FAIL $name pack: $(tail -n 3 "$out/pack.err")"; failures=$((failures + 1)); continue
  fi
  if log="$(pnpm exec publint run "$tarball" --strict 2>&1)"; then
    echo "PASS $name publint"
  else
    echo "FAIL $name publint"; echo "$log" | sed 's/^/    /'; failures=$((failures + 1))
  fi
  # A command-only package (`bin`, no `exports`/`main`: the CLI) has no import entry to type; attw
  # still unpacks it and checks what it can, with "no resolution" of the root expected.
  attw_extra=() note=""
  if [ "$(node -p "const p=require('./$d/package.json'); !p.exports && !p.main && !!p.bin")" = true ]; then
    attw_extra=(--ignore-rules no-resolution) note=" (command only: no import entry)"
  fi
  if log="$(pnpm exec attw "$tarball" --profile esm-only --no-emoji --no-color "${attw_extra[@]}" 2>&1)"; then
    echo "PASS $name attw$note"
  else
    echo "FAIL $name attw"; echo "$log" | sed 's/^/    /'; failures=$((failures + 1))
  fi
done
# The README's "Use the packages in your own application" steps, outside the repository: a fresh npm
# project installs the packed tarballs of a PostgreSQL worker (core, postgres, worker, wheel) with `pg`
# from the registry, and a 10-line script schedules one task and runs it against an embedded PostgreSQL
# (started from this checkout's @postpone/embedded; DATABASE_URL, when set, is used instead).
app="$out/app"
mkdir -p "$app"
tarballs=()
for n in core postgres worker wheel; do tarballs+=("$(ls "$out"/postpone-"$n"-*.tgz 2>/dev/null | head -n 1)"); done
cat >"$app/main.js" <<'JS'
import { createPgStore } from '@postpone/postgres/pg';
import { createWorker } from '@postpone/worker';

const store = createPgStore({ connectionString: process.env.DATABASE_URL });
await store.migrate();
let done;
const ran = new Promise((resolve) => (done = resolve));
const worker = createWorker({ store, pollIntervalMs: 100, logLevel: 'warn', handlers: { hello: async (task) => done(task) } }).start();
const { id } = await store.schedule({ kind: 'hello', payload: { to: 'world' }, delayMs: 200 });
const task = await ran;
await worker.stop();
await store.close();
console.log(`task=${task.id === id ? 'ran' : 'other'} payload=${JSON.stringify(task.payload)}`);
JS
if ! (cd "$app" && npm init -y >/dev/null && npm pkg set type=module &&
  npm install --no-audit --no-fund --prefer-offline "${tarballs[@]}" pg >"$out/npm.log" 2>&1); then
  echo "FAIL outside-app install: $(tail -n 5 "$out/npm.log" | tr '\n' ' ')"; failures=$((failures + 1))
elif result="$(cd packages/embedded && APP="$app" timeout 120 node --input-type=module -e "
import { spawnSync } from 'node:child_process';
import { startEmbeddedPostgres } from './dist/index.js';
const db = process.env.DATABASE_URL ? null : await startEmbeddedPostgres();
const url = process.env.DATABASE_URL ?? db.url;
const run = spawnSync(process.execPath, ['main.js'], { cwd: process.env.APP, env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8', timeout: 60_000 });
await db?.stop();
process.stdout.write(run.stdout + run.stderr);
process.exit(run.status ?? 1);
" 2>&1)" && [[ "$result" == *'task=ran payload={"to":"world"}'* ]]; then
  echo "PASS outside-app: npm install of the packed core, postgres, worker, wheel + pg; one task scheduled and run ($result)"
else
  echo "FAIL outside-app run: $(echo "$result" | tail -n 5 | tr '\n' ' ')"; failures=$((failures + 1))
fi

echo "check-packages: ${#dirs[@]} packages, $failures failed check(s)"
[ "$failures" -eq 0 ]
