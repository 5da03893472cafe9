#!/usr/bin/env sh
# Generates the Prisma 7 client of the tests (./generated, not committed) from ./schema.prisma.
# `prisma generate` runs no engine, but the CLI first downloads the schema engine binary, which this
# machine cannot reach (only the npm registry is reachable): pointing PRISMA_SCHEMA_ENGINE_BINARY at
# an existing file (this script; it is never run) skips that download. The client itself needs no binary: with @prisma/adapter-pg
# it compiles queries in WebAssembly shipped inside @prisma/client and sends them through `pg`.
set -eu
cd "$(dirname "$0")/../../.."
# CHECKPOINT_DISABLE: no update check over the network.
CHECKPOINT_DISABLE=1 PRISMA_SCHEMA_ENGINE_BINARY="${PRISMA_SCHEMA_ENGINE_BINARY:-$(pwd)/test/orm/prisma/generate.sh}" exec prisma generate
