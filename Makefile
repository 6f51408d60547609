# guards: the two commands a new machine needs are `make demo` and `make test`.
# Both do all their own set-up (cargo fetches crates; Python parts build a local venv).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never
ROOT := $(CURDIR)
TARGET := $(ROOT)/target
LOOM_TARGET := $(TARGET)/loom
NOSTD_TARGET := $(TARGET)/nostd
LOOM_MAX_PREEMPTIONS ?= 3

.PHONY: demo test fmt-check clippy test-rust test-loom test-nostd bench help

help:
	@echo "make demo   - run the demo"
	@echo "make test   - run every test (what CI runs)"
	@echo "make bench  - run the criterion benchmarks and print ratios to the atomic baseline"

demo:
	$(CARGO) run --release -p guards-core --example demo

test: fmt-check clippy test-rust test-loom test-nostd
	@echo "make test: all passed"

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test-rust:
	$(CARGO) test
	$(CARGO) test -p guards-core --benches
	# the simulator's figure tests (seed.md's C0-C8 figures) run in release only
	$(CARGO) test -p guards-sim --release

test-loom:
	@for f in core/tests/loom_*.rs; do \
	  [ -e "$$f" ] || continue; t=$$(basename $$f .rs); \
	  echo "loom: $$t"; \
	  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(LOOM_TARGET) LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
	    $(CARGO) test -q -p guards-core --release --test $$t; \
	done

# core must build as a #![no_std], panic=abort static library with no allocator.
test-nostd:
	cd core/nostd-check && CARGO_TARGET_DIR=$(NOSTD_TARGET) $(CARGO) build --release
	@if rustup target list --installed 2>/dev/null | grep -q thumbv7em-none-eabihf; then \
	  cd core/nostd-check && CARGO_TARGET_DIR=$(NOSTD_TARGET) $(CARGO) build --release --target thumbv7em-none-eabihf; \
	  echo "no_std: built for the host and for thumbv7em-none-eabihf"; \
	else echo "no_std: built for the host (thumbv7em-none-eabihf not installed; skipped)"; fi
	@! grep -rnE '^\s*(extern crate (std|alloc)|use (std|alloc)::)' core/src || (echo "std/alloc used in core/src" && false)

bench:
	$(CARGO) bench -p guards-core
	python3 scripts/bench_report.py $(TARGET)/criterion
