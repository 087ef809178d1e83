# edgelimit's commands. A newcomer needs two: `make demo` and `make test`.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(CURDIR)/node_modules/.bin:$(PATH)

.PHONY: bootstrap lint build pkg test demo bench

## Install what is missing (wasm32 target, wasm-bindgen-cli, wasm-pack, redis-server, chromium, npm packages).
bootstrap:
	bash scripts/bootstrap.sh

## Formatting and clippy, natively and for wasm32, warnings as errors.
lint: bootstrap
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy -p edgelimit --target wasm32-unknown-unknown --tests -- -D warnings

## The WebAssembly build of the crate.
build: bootstrap
	cargo build -p edgelimit --release --target wasm32-unknown-unknown

## The npm package in pkg/: wasm32 release build, wasm-bindgen, npm's wasm-opt 132, pkg-template/.
pkg: bootstrap
	bash scripts/build_pkg.sh

## Everything: lint, every test (native, wasm under node and Chromium, the npm package under node).
test: lint
	cargo test --workspace
	bash scripts/with_gateway.sh wasm-pack test --node
	bash scripts/with_gateway.sh wasm-pack test --headless --chrome
	$(MAKE) --no-print-directory pkg
	bash scripts/with_gateway.sh node --test tests/js/

## Every algorithm on the in-memory backend and on Redis through the gateway, decision by decision.
demo: bootstrap
	bash scripts/with_gateway.sh cargo run -q --example demo

## Benchmarks beside the peers, measured in the same run; tables in target/bench/.
bench: bootstrap
	cargo bench --bench memory_backend
	mkdir -p target/bench && python3 scripts/criterion_table.py target/criterion | tee target/bench/memory_backend.md
	bash bench/gateway/run.sh | tee target/bench/gateway.md
	$(MAKE) --no-print-directory pkg
	node bench/size/run.mjs | tee target/bench/size.md
