# The settings the npm package's .wasm is built and optimised with, shared by scripts/build_pkg.sh, the
# size probes of bench/size/probes.sh (so that both measure the same build) and scripts/bootstrap.sh
# (which installs the toolchain). Sourced, not run; the reasons for each setting are in
# scripts/build_pkg.sh.

# The pinned nightly of Cargo.toml's [package.metadata.pkg] (scripts/bootstrap.sh installs it).
wasm_toolchain="$(sed -n 's/^toolchain = "\(nightly-[0-9-]*\)"$/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml")"
wasm_rustflags="-Zunstable-options -Csymbol-mangling-version=legacy -Zlocation-detail=none -Zfmt-debug=none"
wasm_build_args=(--release --target wasm32-unknown-unknown -Z build-std=std,panic_abort -Z build-std-features=optimize_for_size)
# The wasm features every supported runtime has, which wasm-opt must be told about.
wasm_opt_features=(--enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
    --enable-reference-types --enable-multivalue --enable-mutable-globals)
# The size optimisation wasm-opt gives the output of wasm-bindgen.
wasm_opt_size_args=(-Os --converge --strip-debug --strip-producers "${wasm_opt_features[@]}")
