# edgelimit's commands. A newcomer needs two: `make demo` and `make test`.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(CURDIR)/node_modules/.bin:$(PATH)

.PHONY: bootstrap lint build pkg test demo demo-rust www bench bench-smoke

## Install what is missing (wasm32 target, wasm-bindgen-cli, wasm-pack, redis-server, chromium, npm packages).
bootstrap:
	bash scripts/bootstrap.sh

## Formatting and clippy, natively and for wasm32, warnings as errors.
lint: bootstrap
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy -p edgelimit --target wasm32-unknown-unknown --tests -- -D warnings
	cargo clippy -p edgelimit --target wasm32-unknown-unknown --no-default-features -- -D warnings

## The WebAssembly build of the crate.
build: bootstrap
	cargo build -p edgelimit --release --target wasm32-unknown-unknown

## The npm package in pkg/, every feature (MultiRegionRatelimit too): wasm32 release build,
## wasm-bindgen, npm's wasm-opt 132, pkg-template/.
pkg: bootstrap
	bash scripts/build_pkg.sh

## Everything: lint, every test (native, wasm under node and Chromium, the npm package under node and
## in the runtimes, then built from its tarball by each framework's toolchain: tests/frameworks/).
test: lint
	cargo test --workspace
	bash scripts/with_gateway.sh wasm-pack test --node
	bash scripts/with_gateway.sh wasm-pack test --headless --chrome
	$(MAKE) --no-print-directory pkg
	bash scripts/with_gateway.sh node --test tests/js/
	bash scripts/with_gateway.sh node --test --test-concurrency=2 tests/frameworks/
	$(MAKE) --no-print-directory bench-smoke

## A Worker protected by the package, in workerd (miniflare), with Redis behind the gateway: a few seconds
## of traffic from several clients, what the limiter decided each second, and the headers a client saw.
## See examples/worker/demo.mjs.
demo: pkg
	bash scripts/with_gateway.sh node examples/worker/demo.mjs

## The Rust API: every algorithm on the in-memory backend and on Redis through the gateway, decision by
## decision.
demo-rust: bootstrap
	bash scripts/with_gateway.sh cargo run -q --example demo

## The playground: a page that runs the package in the browser, on an in-memory store or on Redis
## through the gateway (both started here), and MultiRegionRatelimit over three regions (redis-servers
## started here too), at http://127.0.0.1:8080/ (PORT=... for another) until stopped with Ctrl-C. See www/.
www: pkg
	bash scripts/with_gateway.sh node www/serve.mjs $${PORT:-8080}

## Benchmarks beside the peers, measured in one run on a release gateway: target/bench/report.md (printed
## at the end), report.json and cpu.svg. See bench/README.md.
bench: pkg
	gateway="$$(bash bench/gateway/build.sh)" && \
	EDGELIMIT_GATEWAY_BIN="$$gateway" bash scripts/with_gateway.sh node --expose-gc bench/js/main.mjs

## The benchmark code on tiny counts, checking that every section produces numbers (never timings);
## report in target/bench/smoke/; fails when the package passes its size ceiling. Needs pkg/ (make pkg).
bench-smoke:
	BENCH_SMOKE=1 bash scripts/with_gateway.sh node --expose-gc bench/js/main.mjs >/dev/null
