#!/bin/sh
# Installs the Debian tools the fault cases need when they are missing: libfaketime (wall_clock_steps)
# and pgbouncer (pgbouncer_transaction_mode). Needs root (or sudo) and apt; exits 0 when both exist.
set -eu
need=""
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || [ -n "$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null)" ] || need="$need faketime"
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || need="$need pgbouncer"
[ -z "$need" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $need
