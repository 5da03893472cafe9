#!/usr/bin/env bash
# The demo on a local 3-node Citus 13.2 cluster (a coordinator and two workers, PostgreSQL 15,
# loopback only), through the sharded front (docs/sharding.md): two shard groups, one per worker
# node, 3 worker processes, one SIGKILLed mid-run; exits with the demo's code (0 = every invariant
# holds). The cluster is started in a fresh temp folder and stopped and deleted on every exit.
#
#   CITUS_TARBALL=/path/to/citus-13.2.2-pg15-debian12-x86_64.tar.gz pnpm demo:citus [demo flags]
#
# Settings (environment):
#   CITUS_TARBALL   the Citus 13.2 build for PostgreSQL 15 (required)
#   CITUS_DIR       folder holding install-citus.sh and citus-cluster.sh (default: the tarball's folder)
#   CITUS_BASEPORT  coordinator port, workers on the next two (default: a free one in 20000-29997)
# install-citus.sh needs root the first time (it installs Debian's postgresql-15 if missing and
# unpacks the extension); when Citus is already installed a non-root user can run this too.
set -euo pipefail

die() { echo "citus-demo: $*" >&2; exit 2; }

[ -n "${CITUS_TARBALL:-}" ] || die "CITUS_TARBALL is not set: point it at a Citus 13.2 tarball for PostgreSQL 15 (citus-13.2.2-pg15-debian12-x86_64.tar.gz, with install-citus.sh and citus-cluster.sh beside it or in CITUS_DIR)"
[ -f "$CITUS_TARBALL" ] || die "CITUS_TARBALL=$CITUS_TARBALL: no such file"
CITUS_DIR="${CITUS_DIR:-$(cd "$(dirname "$CITUS_TARBALL")" && pwd)}"
for f in install-citus.sh citus-cluster.sh; do [ -f "$CITUS_DIR/$f" ] || die "$CITUS_DIR/$f not found (set CITUS_DIR to the folder holding it)"; done
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -f "$ROOT/apps/demo/dist/main.js" ] || die "the demo is not built: run 'pnpm demo:citus' (it builds first) or 'pnpm turbo run build --filter=@postpone/demo...'"

PGLIB="${PGBIN:-/usr/lib/postgresql/15/bin}/../lib"
if [ "$(id -u)" = 0 ]; then
  bash "$CITUS_DIR/install-citus.sh" "$CITUS_TARBALL" >&2
elif [ ! -f "$PGLIB/citus.so" ]; then
  die "Citus is not installed and installing it needs root: run 'sudo bash $CITUS_DIR/install-citus.sh $CITUS_TARBALL' once"
fi

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if [ -n "${CITUS_BASEPORT:-}" ]; then
  PORT="$CITUS_BASEPORT"
else
  PORT=""
  for _ in 1 2 3 4 5; do
    p=$((20000 + RANDOM % 9997))
    if port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)); then PORT="$p"; break; fi
  done
  [ -n "$PORT" ] || die "no three consecutive free loopback ports found in 5 tries: set CITUS_BASEPORT"
fi

# As root the servers run as user postgres: the folder must be searchable by it (mktemp makes 0700).
PARENT="$(mktemp -d "${TMPDIR:-/tmp}/postpone-citus-demo-XXXXXX")"
chmod 0755 "$PARENT"
DATA="$PARENT/cluster"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  bash "$CITUS_DIR/citus-cluster.sh" stop "$DATA" "$PORT" >&2 || true
  rm -rf "$PARENT"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM   # until the demo starts

echo "citus-demo: starting a 3-node Citus cluster on 127.0.0.1:$PORT..$((PORT + 2))" >&2
URL="$(bash "$CITUS_DIR/citus-cluster.sh" start "$DATA" "$PORT" | tail -n1)"
case "$URL" in postgres://*) ;; *) die "citus-cluster.sh printed no coordinator URL (last line: $URL)" ;; esac

# Two shard groups: Citus places each new group on a worker node; the demo's log line names where.
# The demo runs in the background so that a signal to this script reaches it at once (the demo stops
# its workers and exits 130); the EXIT trap then stops the cluster.
DATABASE_URL="$URL" node "$ROOT/apps/demo/dist/main.js" --groups 2 "$@" &
DEMO_PID=$!
trap 'kill -INT "$DEMO_PID" 2>/dev/null || true' INT TERM
set +e
wait "$DEMO_PID"
rc=$?
# A trapped signal ends `wait` early: wait again until the demo has exited, keeping its exit code.
while kill -0 "$DEMO_PID" 2>/dev/null; do
  wait "$DEMO_PID"
  rc=$?
done
exit "$rc"
