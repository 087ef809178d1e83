#!/usr/bin/env bash
# Builds the npm package into pkg/: the crate for wasm32 (with the pinned nightly of Cargo.toml's
# [package.metadata.pkg], which scripts/bootstrap.sh installs), wasm-bindgen --target web, npm's wasm-opt 132
# (never Debian's: see TOOLCHAIN.md), then the entry files, package.json, types and README from
# pkg-template/.
#
#   bash scripts/build_pkg.sh
#
# Honours CARGO_TARGET_DIR (default: target/); the nightly build goes to its pkg/ subfolder.
set -euo pipefail

cd "$(dirname "$0")/.."
root="$PWD"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
out="$root/pkg"

say() { echo "build_pkg: $*" >&2; }

need() {
    if ! command -v "$1" >/dev/null 2>&1; then
        say "missing $1: $2"
        exit 1
    fi
}
need wasm-bindgen "cargo install wasm-bindgen-cli --version 0.2.130"
need node "install Node.js 20+"

wasm_opt="$root/node_modules/.bin/wasm-opt"
if [[ ! -x "$wasm_opt" ]]; then
    say "installing npm's binaryen (wasm-opt 132)"
    npm install --no-audit --no-fund >/dev/null
fi

pinned="$(sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' Cargo.toml)"
have="$(wasm-bindgen --version | awk '{print $2}')"
if [[ -n "$pinned" && "$pinned" != "$have" ]]; then
    say "wasm-bindgen CLI $have does not match the crate's pin $pinned"
    exit 1
fi

# The pinned nightly rebuilds std for size (optimize_for_size), about 6 KB less gzipped wasm than stable.
# Panics still run the panic hook (src/wasm/mod.rs) before they abort: panic=immediate-abort would save
# 4 KB more but turn an internal bug into a bare "RuntimeError: unreachable". Legacy symbol mangling
# keeps wasm-bindgen's generated export names short. -Zfmt-debug=none compiles `{:?}` to nothing (3.2 KB
# less gzipped): the crate's messages never use it (tests run on stable, where it still prints), so only
# std's own panic texts (`unwrap` on an `Err`) lose their value.
source scripts/wasm_size_settings.sh
if ! rustup run "$wasm_toolchain" rustc --version >/dev/null 2>&1; then
    say "missing rust $wasm_toolchain: run scripts/bootstrap.sh"
    exit 1
fi
say "cargo +$wasm_toolchain build (release, wasm32-unknown-unknown, -Z build-std)"
pkg_target_dir="$target_dir/pkg"
RUSTFLAGS="$wasm_rustflags" CARGO_TARGET_DIR="$pkg_target_dir" \
    cargo "+$wasm_toolchain" build -p edgelimit "${wasm_build_args[@]}"
wasm="$pkg_target_dir/wasm32-unknown-unknown/release/edgelimit.wasm"

rm -rf "$out"
mkdir -p "$out"
say "wasm-bindgen --target web"
wasm-bindgen --target web --out-dir "$out" --out-name edgelimit --no-typescript "$wasm"

# -Os --converge: 0.3 KB less gzipped than -Oz (which is smaller before gzip); -O3 and opt-level "s"
# or 3 in Cargo.toml are larger.
say "wasm-opt -Os --converge ($("$wasm_opt" --version))"
"$wasm_opt" "${wasm_opt_size_args[@]}" "$out/edgelimit_bg.wasm" -o "$out/edgelimit_bg.opt.wasm"
mv "$out/edgelimit_bg.opt.wasm" "$out/edgelimit_bg.wasm"

# The interface names of the .wasm and the generated glue, minified (scripts/minify_pkg.mjs).
say "minify the wasm's import and export names and the glue"
node scripts/minify_pkg.mjs "$wasm_opt" "$out" "${wasm_opt_features[@]}"

cp pkg-template/*.js pkg-template/index.d.ts pkg-template/README.md "$out/"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
sed "s/\"version\": \"0.0.0\"/\"version\": \"$version\"/" pkg-template/package.json >"$out/package.json"

# Every file package.json names must exist.
node -e '
const fs = require("fs"), path = require("path");
const dir = process.argv[1];
const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
const walk = (v) => typeof v === "string" ? [v] : Object.values(v).flatMap(walk);
for (const file of [...walk(pkg.exports), ...pkg.files]) {
  if (!fs.existsSync(path.join(dir, file))) { console.error("build_pkg: missing " + file); process.exit(1); }
}' "$out"

size() { printf '%-22s %8d bytes  %7d gzipped\n' "$(basename "$1")" "$(stat -c %s "$1")" "$(gzip -9c "$1" | wc -c)"; }
say "built $out (version $version)"
size "$out/edgelimit_bg.wasm"
size "$out/edgelimit.js"
