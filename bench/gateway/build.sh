#!/usr/bin/env bash
# Builds the gateway and its load generator for benchmarks: release, with speed settings (the
# workspace's release profile optimises for size, for wasm), into target/gw/ (or CARGO_TARGET_DIR).
# Prints the gateway binary's path.
#
#   bash bench/gateway/build.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MANIFEST="${CARGO_MANIFEST:-$ROOT/gateway/Cargo.toml}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/gw}"

export CARGO_PROFILE_RELEASE_OPT_LEVEL=3 CARGO_PROFILE_RELEASE_LTO=false \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_PANIC=unwind
cargo build --quiet --release --manifest-path "$MANIFEST" -p edgelimit-gateway \
  --bin edgelimit-gateway --example load
echo "$CARGO_TARGET_DIR/release/edgelimit-gateway"
