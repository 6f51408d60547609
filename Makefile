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
PYTHON ?= python3
VENV := $(ROOT)/.venv
VPY := $(VENV)/bin/python
# maturin gets its own (absolute) target dir so it never fights cargo over pyo3's build
MATURIN_TARGET := $(TARGET)/maturin

.PHONY: demo test fmt-check clippy test-rust test-loom test-nostd test-python python bench help

help:
	@echo "make demo   - run the demo"
	@echo "make test   - run every test (what CI runs)"
	@echo "make bench  - run the criterion benchmarks and print ratios to the atomic baseline"

# Part 1: guards-core protecting a failing / slowing dependency (Rust, virtual time).
# Part 2: the simulator replays the Basketly incident with every setting C0..C8 side by side.
demo: $(VENV)/.tools
	$(CARGO) run --release -q -p guards-core --example demo
	@echo
	PATH=$(VENV)/bin:$$PATH CARGO_TARGET_DIR=$(MATURIN_TARGET) $(VPY) -m pip install -q --no-build-isolation './python[sim]'
	$(VPY) -m guards.sim basketly --compare C0 C1 C2 C3 C4 C5 C6 C7 C8 --plot out/compare.png
	@echo "plot written to out/compare.png"

test: fmt-check clippy test-rust test-loom test-nostd test-python
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

# A local virtualenv with the build and test tools; the package is (re)built into it.
$(VENV)/.tools: python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q 'maturin>=1.16,<2'
	touch $@

python: $(VENV)/.tools
	PATH=$(VENV)/bin:$$PATH CARGO_TARGET_DIR=$(MATURIN_TARGET) $(VPY) -m pip install -q --no-build-isolation './python[test]'

test-python: python
	$(VPY) -m pytest python/tests -q
	$(VPY) -m mypy.stubtest guards._guards

bench:
	$(CARGO) bench -p guards-core --benches -- --warm-up-time 1 --measurement-time 3
	python3 scripts/bench_report.py $(TARGET)/criterion
