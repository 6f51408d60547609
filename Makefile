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

.PHONY: demo test fmt-check clippy test-rust test-loom test-nostd test-python python bench help \
	ffi-lib header header-check test-c test-c-plain test-c-shared test-c-valgrind test-c-sanitize \
	test-c-cxx test-c-install test-c-vectors install node node-deps node-dts-check test-node bench-node demo-node \
	test-c-region bench-region test-c-example bench-servers

help:
	@echo "make demo   - run the demo"
	@echo "make test   - run every test (what CI runs)"
	@echo "make bench  - run the criterion benchmarks and print ratios to the atomic baseline"
	@echo "make install PREFIX=/usr/local - install libguards (.a, .so), include/guards.h, guards.pc"
	@echo "make test-node / bench-node - the Node package's tests / its overhead beside opossum and cockatiel"
	@echo "make bench-servers - guards' admission middleware inside Express, Fastify, node:http, uvicorn, the C server (wrk, h2load)"

# Part 1: guards-core protecting a failing / slowing dependency (Rust, virtual time).
# Part 2: the simulator replays the Basketly incident with every setting C0..C8 side by side.
demo: $(VENV)/.tools
	$(CARGO) run --release -q -p guards-core --example demo
	@echo
	PATH=$(VENV)/bin:$$PATH CARGO_TARGET_DIR=$(MATURIN_TARGET) $(VPY) -m pip install -q --no-build-isolation './python[sim]'
	$(VPY) -m guards.sim basketly --compare C0 C1 C2 C3 C4 C5 C6 C7 C8 --plot out/compare.png
	@echo "plot written to out/compare.png"
	@echo
	$(MAKE) -s demo-node

test: fmt-check clippy test-rust test-loom test-nostd test-c test-c-region test-python test-node
	@echo "make test: all passed"

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test-rust:
	$(CARGO) test
	$(CARGO) test -p guards-core --benches
	# the simulator's figure tests (the Basketly C0-C8 figures, docs/basketly.md) run in release only
	$(CARGO) test -p guards-sim --release

test-loom:
	@for f in core/tests/loom_*.rs; do \
	  [ -e "$$f" ] || continue; t=$$(basename $$f .rs); \
	  echo "loom: $$t"; \
	  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(LOOM_TARGET) LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
	    $(CARGO) test -q -p guards-core --release --test $$t; \
	done
	@for f in ffi/tests/loom_*.rs; do \
	  [ -e "$$f" ] || continue; t=$$(basename $$f .rs); \
	  echo "loom: $$t"; \
	  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(LOOM_TARGET) LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
	    $(CARGO) test -q -p guards-ffi --release --test $$t; \
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
	$(VPY) -m mypy.stubtest guards.shared

bench:
	$(CARGO) bench -p guards-core --benches -- --warm-up-time 1 --measurement-time 3
	$(CARGO) bench -p guards-ffi --benches -- --warm-up-time 1 --measurement-time 3
	python3 scripts/bench_report.py $(TARGET)/criterion

# ---- The C library (ffi/): libguards.a, libguards.so, include/guards.h, guards.pc ----
FFI_OUT := $(TARGET)/release
C_TESTS := $(TARGET)/c-tests
C_WARN := -std=c11 -Wall -Wextra -Werror -pedantic
CXX_WARN := -std=c++11 -Wall -Wextra -Werror -pedantic
# What Rust's standard library needs when libguards.a is linked statically (Linux; from
# `cargo rustc -p guards-ffi --release --crate-type staticlib -- --print native-static-libs`).
NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
STATIC_LINK := $(FFI_OUT)/libguards.a $(NATIVE_LIBS)
PREFIX ?= /usr/local
GUARDS_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

ffi-lib:
	$(CARGO) build -q -p guards-ffi --release

# include/guards.h is generated by cbindgen (ffi/examples/gen_header.rs) and committed.
header:
	$(CARGO) run -q -p guards-ffi --example gen_header

header-check: header
	@git diff --exit-code -- include/guards.h \
	  || (echo "include/guards.h is out of date: run 'make header' and commit it" && false)

test-c: header-check test-c-plain test-c-shared test-c-valgrind test-c-sanitize test-c-cxx test-c-install \
	test-c-vectors test-c-example
	@echo "C suite: plain, shared, valgrind, ASan/UBSan, C++ header, installed with pkg-config, vectors, example server: all passed"

# The C suite: one file per guard plus main.c (ffi/tests/c/test.h).
C_SUITE := ffi/tests/c/main.c $(sort $(wildcard ffi/tests/c/test_*.c))

$(C_TESTS)/test_guards: $(C_SUITE) ffi/tests/c/test.h include/guards.h ffi-lib
	@mkdir -p $(C_TESTS)
	$(CC) $(C_WARN) -O2 -g -Iinclude -Iffi/tests/c $(C_SUITE) $(STATIC_LINK) -pthread -lm -o $@

test-c-plain: $(C_TESTS)/test_guards
	$(C_TESTS)/test_guards

test-c-shared: ffi-lib
	@mkdir -p $(C_TESTS)
	$(CC) $(C_WARN) -O2 -g -Iinclude $(C_SUITE) -L$(FFI_OUT) -lguards \
	  -Wl,-rpath,$(FFI_OUT) -pthread -lm -o $(C_TESTS)/test_guards_shared
	$(C_TESTS)/test_guards_shared

test-c-valgrind: $(C_TESTS)/test_guards
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  --show-leak-kinds=definite,indirect $(C_TESTS)/test_guards

test-c-sanitize: ffi-lib
	@mkdir -p $(C_TESTS)
	$(CC) $(C_WARN) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	  -fno-sanitize-recover=all -Iinclude $(C_SUITE) $(STATIC_LINK) -pthread -lm \
	  -o $(C_TESTS)/test_guards_asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(C_TESTS)/test_guards_asan

test-c-cxx: ffi-lib
	@mkdir -p $(C_TESTS)
	$(CXX) $(CXX_WARN) -Iinclude ffi/tests/c/header_cxx.cpp $(STATIC_LINK) -pthread \
	  -o $(C_TESTS)/header_cxx
	$(C_TESTS)/header_cxx

# Every tests/vectors file replayed through the C API by the shared interpreter
# (ffi/tests/c/vectors/, one file per guard; an op the C API lacks is reported as not
# covered); then again under valgrind and ASan/UBSan (report on stdout only from the first
# run).
C_VECTORS := $(sort $(wildcard ffi/tests/c/vectors/*.c))

$(C_TESTS)/vectors: $(C_VECTORS) ffi/tests/c/vectors/vectors.h include/guards.h ffi-lib
	@mkdir -p $(C_TESTS)
	$(CC) $(C_WARN) -O2 -g -Iinclude $(C_VECTORS) $(STATIC_LINK) -pthread -lm -o $@

test-c-vectors: $(C_TESTS)/vectors
	$(C_TESTS)/vectors tests/vectors
	@# A wrong expected value must fail through C too (never pass unnoticed).
	@mkdir -p $(C_TESTS)/tampered
	sed 's/"in_flight": 1, "max_concurrent": 1}, "repeat": 3/"in_flight": 2, "max_concurrent": 1}, "repeat": 3/' \
	  tests/vectors/bulkhead.json > $(C_TESTS)/tampered/bulkhead.json
	{ $(C_TESTS)/vectors $(C_TESTS)/tampered/bulkhead.json || true; } \
	  | grep -q 'FAILED bulkhead.json:[0-9]*: .*at `in_flight`: expected 2, got 1'
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  --show-leak-kinds=definite,indirect $(C_TESTS)/vectors tests/vectors >/dev/null
	$(CC) $(C_WARN) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	  -fno-sanitize-recover=all -Iinclude $(C_VECTORS) $(STATIC_LINK) -pthread -lm \
	  -o $(C_TESTS)/vectors_asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(C_TESTS)/vectors_asan tests/vectors >/dev/null

# `make install` into a scratch prefix, then build the suite the way a user would: with
# pkg-config, against the shared library and (--static) the static one.
INSTALL_TEST := $(TARGET)/install-test
test-c-install: ffi-lib
	rm -rf $(INSTALL_TEST)
	$(MAKE) -s install PREFIX=$(INSTALL_TEST)
	PKG_CONFIG_PATH=$(INSTALL_TEST)/lib/pkgconfig; export PKG_CONFIG_PATH; \
	$(CC) $(C_WARN) -O2 $(C_SUITE) $$(pkg-config --cflags --libs guards) \
	  -Wl,-rpath,$(INSTALL_TEST)/lib -pthread -lm -o $(C_TESTS)/test_guards_pc_shared && \
	$(C_TESTS)/test_guards_pc_shared && \
	$(CC) $(C_WARN) -O2 $(C_SUITE) $$(pkg-config --cflags guards) \
	  $(INSTALL_TEST)/lib/libguards.a $$(pkg-config --libs-only-l --static guards | sed 's/-lguards//') \
	  -pthread -o $(C_TESTS)/test_guards_pc_static && \
	$(C_TESTS)/test_guards_pc_static

# examples/c: the HTTP server built the way its README says (against the installed
# library, with pkg-config), with ASan/LeakSanitizer, driven on loopback by test_server.py:
# threaded, then prefork (--workers 4 sharing one breaker and one bulkhead through a region).
test-c-example: test-c-install
	PKG_CONFIG_PATH=$(INSTALL_TEST)/lib/pkgconfig $(MAKE) -s -C examples/c SANITIZE=1 \
	  OUT=$(C_TESTS)/guards-server-asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(PYTHON) examples/c/test_server.py $(C_TESTS)/guards-server-asan

# Install the header, both libraries and guards.pc under $(PREFIX) (DESTDIR honoured).
install: ffi-lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/guards.h $(DESTDIR)$(PREFIX)/include/guards.h
	install -m 644 $(FFI_OUT)/libguards.a $(DESTDIR)$(PREFIX)/lib/libguards.a
	install -m 755 $(FFI_OUT)/libguards.so $(DESTDIR)$(PREFIX)/lib/libguards.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(GUARDS_VERSION)|' \
	  -e 's|@NATIVE_LIBS@|$(NATIVE_LIBS)|' ffi/guards.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/guards.pc
	@echo "installed libguards $(GUARDS_VERSION) under $(DESTDIR)$(PREFIX)"

# ---- The Node package (node/): the napi-rs addon and the npm package `guards` ----
# npm installs the dev tools (napi CLI, express, fastify, opossum, cockatiel, prom-client)
# from node/package-lock.json; the addon gets its own cargo target dir (absolute: the napi
# CLI runs cargo from node/).
NODE_TARGET := $(TARGET)/node

node/node_modules/.installed: node/package.json node/package-lock.json
	cd node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

node-deps: node/node_modules/.installed

# Builds node/guards.node and regenerates node/index.d.ts (napi-rs types + the option
# interfaces generated from ffi's config schemas).
node: node-deps
	@mkdir -p $(NODE_TARGET)
	cd node && npx napi build --release --target-dir $(NODE_TARGET) --dts .native.d.ts
	cd node && node scripts/gen-dts.js .native.d.ts

node-dts-check: node
	@git diff --exit-code -- node/index.d.ts \
	  || (echo "node/index.d.ts is out of date: run 'make node' and commit it" && false)

# The node:test suites (test/*.test.js; test/vectors/ is the conformance backend they
# load), after the index.d.ts drift check.
test-node: node-dts-check
	cd node && node --test --test-concurrency=1 test/*.test.js

bench-node: node
	cd node && node bench/overhead.js
	cd node && node bench/region.js

demo-node: node
	cd node && node examples/demo.js
	cd node && node examples/cluster.js

# ---- Host-wide guards (ffi/src/shared, ffi/src/c/shared.rs; docs/shared.md) ----
# The C suite of the region API: processes made with fork() sharing a region's guards,
# kill -9 of a holder, guards in caller memory. Plain, under valgrind (children included:
# valgrind follows fork) and under ASan/UBSan. The Rust side (tests/shared_*.rs and the
# loom model tests/loom_shared.rs) runs in test-rust and test-loom.
test-c-region: header-check ffi-lib
	@mkdir -p $(C_TESTS)
	$(CC) $(C_WARN) -O2 -g -Iinclude ffi/tests/c/shared_region.c $(STATIC_LINK) \
	  -o $(C_TESTS)/shared_region
	$(C_TESTS)/shared_region
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  --show-leak-kinds=definite,indirect $(C_TESTS)/shared_region
	$(CC) $(C_WARN) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	  -fno-sanitize-recover=all -Iinclude ffi/tests/c/shared_region.c $(STATIC_LINK) \
	  -o $(C_TESTS)/shared_region_asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(C_TESTS)/shared_region_asan
	@echo "C region suite: plain, valgrind, ASan/UBSan: all passed"

# One operation on a shared guard beside the same on a private one, in one run: criterion
# (ffi/benches/shared.rs) and the C program ffi/tests/c/shared_bench.c (every kind with C
# verbs; `shared_bench OPS ROUNDS KIND` runs one kind).
bench-region: ffi-lib
	$(CARGO) bench -p guards-ffi --bench shared -- --warm-up-time 1 --measurement-time 3
	@mkdir -p $(C_TESTS)
	$(CC) -std=c11 -O2 -Iinclude ffi/tests/c/shared_bench.c $(STATIC_LINK) -pthread -o $(C_TESTS)/shared_bench
	$(C_TESTS)/shared_bench

# ---- The cost inside a real server (bench/servers/; docs/benchmarks.md) ----
# Express, Fastify, node:http, an ASGI app under uvicorn and examples/c's guards-server, each
# started on a free loopback port without guards and with the package's admission
# middleware, saturated by wrk (h2load for Fastify over HTTP/2) in turns, A B / B A, for
# several rounds: requests per second and p99 with and without, in one run. The table goes
# to stdout and target/bench-servers.md. BENCH_SERVERS_ARGS passes options to run.py
# (e.g. `--only express,c --rounds 3`).
BENCH_SRV := $(TARGET)/bench-servers
BENCH_SERVERS_ARGS ?=

$(BENCH_SRV)/pydeps/.installed: $(VENV)/.tools
	rm -rf $(BENCH_SRV)/pydeps
	$(VPY) -m pip install -q --target $(BENCH_SRV)/pydeps 'uvloop>=0.19' 'httptools>=0.6'
	touch $@

bench-servers: python node ffi-lib $(BENCH_SRV)/pydeps/.installed
	@command -v wrk >/dev/null && command -v h2load >/dev/null || \
	  apt-get -o DPkg::Lock::Timeout=600 install -y wrk nghttp2-client || \
	  { apt-get update && apt-get -o DPkg::Lock::Timeout=600 install -y wrk nghttp2-client; }
	rm -rf $(BENCH_SRV)/prefix
	$(MAKE) -s install PREFIX=$(BENCH_SRV)/prefix
	rm -f $(BENCH_SRV)/guards-server
	PKG_CONFIG_PATH=$(BENCH_SRV)/prefix/lib/pkgconfig $(MAKE) -s -C examples/c OUT=$(BENCH_SRV)/guards-server
	$(PYTHON) bench/servers/run.py --python $(VPY) --pythonpath $(BENCH_SRV)/pydeps \
	  --c-server $(BENCH_SRV)/guards-server --out $(TARGET)/bench-servers.md $(BENCH_SERVERS_ARGS)
