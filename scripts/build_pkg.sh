#!/usr/bin/env bash
# Builds the npm package into pkg/: the crate for wasm32 on the stable toolchain, wasm-bindgen --target
# bundler (glue that leaves instantiation to the package's entries), npm's wasm-opt 132 (never Debian's:
# see TOOLCHAIN.md), then the entry files, package.json, types and README from pkg-template/.
#
#   bash scripts/build_pkg.sh                                  # pkg/
#
# One package, every feature: the crate's default features, MultiRegionRatelimit included (the size
# ceiling, 192 KiB gzipped for the whole package, is measured by `make bench` and its smoke run).
# Honours CARGO_TARGET_DIR (default: target/).
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

say "cargo build (release, wasm32-unknown-unknown)"
# The default features: `native` does nothing on wasm32, `multi-region` is MultiRegionRatelimit.
cargo build -p edgelimit --release --target wasm32-unknown-unknown
wasm="$target_dir/wasm32-unknown-unknown/release/edgelimit.wasm"

rm -rf "$out"
mkdir -p "$out"
say "wasm-bindgen --target bundler"
# --keep-debug keeps the functions' names for target/pkg-names/ (below); the package drops them.
wasm-bindgen --target bundler --keep-debug --out-dir "$out" --out-name edgelimit --no-typescript "$wasm"
# Its edgelimit.js imports the .wasm as an ES module, which no runtime does unaided: each entry of
# pkg-template/ instantiates the module as its runtime delivers it (wasm_instance.js).
rm "$out/edgelimit.js"

# -O3 for speed. The features are those every supported runtime has, which wasm-opt must be told of.
# --low-memory-unused lets it fold a constant added to an address into the load's or store's offset,
# which gives another address only when the sum wraps past 2^32 into the first KiB: Rust's pointer
# arithmetic never wraps (LLVM's inbounds). Smaller code (about 1 KB of the package gzipped) and fewer
# instructions.
# -ocimfs 0: no function is inlined only for having one caller. LLVM has inlined what it judged worth
# it (and what is marked #[inline]); what is marked #[inline(never)], the paths few decisions take, stays
# out of the bodies of the functions every decision runs, which V8 compiles whole on their first call.
features=(--enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
    --enable-reference-types --enable-multivalue --enable-mutable-globals --low-memory-unused -ocimfs 0)
say "wasm-opt -O3 ($("$wasm_opt" --version))"
"$wasm_opt" -O3 --strip-debug --strip-producers "${features[@]}" \
    "$out/edgelimit_bg.wasm" -o "$out/edgelimit_bg.opt.wasm"
# The same with the functions' names (-g), for `make bench`'s size report and compile trace: binaryen
# optimises a module with names a little differently (its code within 0.2% of the package's).
names="$target_dir/pkg-names"
mkdir -p "$names"
"$wasm_opt" -O3 -g --strip-dwarf --strip-producers "${features[@]}" \
    "$out/edgelimit_bg.wasm" -o "$names/edgelimit_bg.wasm"
mv "$out/edgelimit_bg.opt.wasm" "$out/edgelimit_bg.wasm"

cp pkg-template/*.js pkg-template/index.d.ts pkg-template/README.md "$out/"
# The snippets' folder is named by wasm-bindgen (crate name and hash); the module imports from it too.
snippets="$(basename "$(find "$out/snippets" -mindepth 1 -maxdepth 1 -type d)")"
sed -i "s#/SNIPPETS/#/$snippets/#g" "$out/wasm_instance.js"
# The JavaScript without its comments and whitespace (esbuild), as edge bundlers would ship it: the
# package's size is counted as shipped. Names stay as written, for stack traces and class names, and
# because keeping them after renaming (--keep-names) costs CPU on every closure made. Every test runs
# on these files.
say "esbuild --minify-whitespace --minify-syntax ($("$root/node_modules/.bin/esbuild" --version))"
find "$out" -name '*.js' -print0 | while IFS= read -r -d '' file; do
    "$root/node_modules/.bin/esbuild" "$file" --minify-whitespace --minify-syntax --format=esm \
        --log-level=warning --outfile="$file.min"
    mv "$file.min" "$file"
done
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
# The entries supply every module the .wasm imports, and Node starts the package.
node --input-type=module -e '
const dir = process.argv[1];
const { readFileSync } = await import("node:fs");
const { imports } = await import(`${dir}/wasm_instance.js`);
const module = new WebAssembly.Module(readFileSync(`${dir}/edgelimit_bg.wasm`));
const wanted = [...new Set(WebAssembly.Module.imports(module).map((entry) => entry.module))].sort();
const supplied = Object.keys(imports).sort();
if (JSON.stringify(wanted) !== JSON.stringify(supplied)) {
  console.error(`build_pkg: the .wasm imports ${wanted.join(", ")}; wasm_instance.js supplies ${supplied.join(", ")}`);
  process.exit(1);
}
await import(`${dir}/index.node.js`);' "$out"

size() { printf '%-22s %8d bytes  %7d gzipped\n' "$(basename "$1")" "$(stat -c %s "$1")" "$(gzip -9c "$1" | wc -c)"; }
say "built $out (version $version)"
size "$out/edgelimit_bg.wasm"
size "$out/edgelimit_bg.js"
