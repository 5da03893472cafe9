#!/usr/bin/env bash
# Builds every publishable package (packages/* and apps/* without "private": true), packs it with pnpm (as it
# would be published: workspace: ranges rewritten), and checks the tarball with publint (--strict:
# warnings fail too) and @arethetypeswrong/cli (profile esm-only: the packages are ESM-only, so the
# CommonJS `require` resolutions are not judged). Prints one line per package and check, and exits
# non-zero when any check fails.
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
echo "check-packages: ${#dirs[@]} packages, $failures failed check(s)"
[ "$failures" -eq 0 ]
