#!/usr/bin/env bash
# Builds the two size probes into target/bench/probes/, each as scripts/build_pkg.sh builds the package
# (same nightly, flags, wasm-bindgen and wasm-opt -Os, interface names minified), for bench/size/run.mjs:
#   floor.wasm  bench/size/floor: one fetch round trip behind a two-class wasm-bindgen API, nothing else;
#   core.wasm   edgelimit with src/wasm/ replaced by bench/size/core_probe.rs: the core without its JS API.
#
#   bash bench/size/probes.sh        (after npm install: it uses npm's wasm-opt)
set -euo pipefail

cd "$(dirname "$0")/../.."
root="$PWD"
source scripts/wasm_size_settings.sh
out="$root/target/bench/probes"
wasm_opt="$root/node_modules/.bin/wasm-opt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# wasm-bindgen, then wasm-opt as the package gets it: $1 the crate's .wasm, $2 the probe's name.
optimise() {
    wasm-bindgen --target web --out-dir "$work/$2" --out-name "$2" --no-typescript "$1"
    "$wasm_opt" "${wasm_opt_size_args[@]}" "$work/$2/$2_bg.wasm" -o "$work/$2/opt.wasm"
    "$wasm_opt" --minify-imports-and-exports-and-modules "${wasm_opt_features[@]}" \
        "$work/$2/opt.wasm" -o "$out/$2.wasm" >/dev/null
}

build() {
    RUSTFLAGS="$wasm_rustflags" CARGO_TARGET_DIR="$out/target" cargo "+$wasm_toolchain" build -q "$@" "${wasm_build_args[@]}"
}

build --manifest-path bench/size/floor/Cargo.toml --locked
optimise "$out/target/wasm32-unknown-unknown/release/size_floor.wasm" floor

# The core: a copy of the crate whose lib.rs declares the probe where it declared the bindings.
mkdir "$work/crate"
cp -r Cargo.toml Cargo.lock build.rs src "$work/crate/"
sed -i 's/^members = .*/members = ["."]/' "$work/crate/Cargo.toml"
sed -i 's/^mod wasm;$/mod probe;/' "$work/crate/src/lib.rs"
grep -qx 'mod probe;' "$work/crate/src/lib.rs" || { echo "probes: src/lib.rs declares no 'mod wasm;'" >&2; exit 1; }
cp bench/size/core_probe.rs "$work/crate/src/probe.rs"
build --manifest-path "$work/crate/Cargo.toml" -p edgelimit
optimise "$out/target/wasm32-unknown-unknown/release/edgelimit.wasm" core
