#!/bin/sh
# Installs Debian's pgbouncer when it is missing (the pgbouncer tests call this).
# Exit 0 with pgbouncer on PATH; exit 3 when it cannot be installed here (no apt-get, not root).
set -eu
PATH="$PATH:/usr/sbin:/sbin"
if command -v pgbouncer >/dev/null 2>&1; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then echo "apt-get is not available" >&2; exit 3; fi
if [ "$(id -u)" != 0 ]; then echo "installing pgbouncer needs root" >&2; exit 3; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null
# The package starts a service on Debian; this test starts its own instance.
(service pgbouncer stop || true) >/dev/null 2>&1
command -v pgbouncer >/dev/null 2>&1
