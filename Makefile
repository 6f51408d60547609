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
	test-c-cxx test-c-install test-c-vectors install node node-deps node-dts-check test-node bench-node demo-node demo-fleet \
	test-c-region bench-region test-c-example print-version version-check package-core docs docs-rust \
	docs-python docs-node docs-c docs-pages docs-check docs-shot live-build live-smoke live live-faults live-soak bench-servers \
	bench-servers-deps bench-servers-instructions

help:
	@echo "make demo   - run the demo"
	@echo "make test   - run every test (what CI runs)"
	@echo "make bench  - run the criterion benchmarks and print ratios to the atomic baseline"
	@echo "make install PREFIX=/usr/local - install libguards (.a, .so), include/guards.h, guards.pc"
	@echo "make test-node / bench-node - the Node package's tests / its overhead beside opossum and cockatiel"
	@echo "make bench-servers - guards' admission middleware inside Express, Fastify, node:http, uvicorn, the C server (wrk, h2load)"
	@echo "make bench-servers-instructions - the same servers' instructions per request, counted under valgrind"

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
	@echo
	$(MAKE) -s redis-server
	$(VPY) examples/fleet/demo.py

test: fmt-check clippy redis-server test-rust test-loom test-nostd test-c test-c-region test-python test-node version-check \
	package-core docs-check live-smoke test-dist
	@echo "make test: all passed"

fmt-check:
	$(CARGO) fmt --all --check

# The fleet tests (ffi/tests/fleet_redis.rs) start a real redis-server on a free port.
.PHONY: redis-server
redis-server:
	@command -v redis-server >/dev/null || { apt-get -o DPkg::Lock::Timeout=600 install -y redis-server || \
	  { apt-get update && apt-get -o DPkg::Lock::Timeout=600 install -y redis-server; }; }
	@redis-server --version

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

test-python: python redis-server
	$(VPY) -m pytest python/tests -q
	$(VPY) -m mypy.stubtest guards._guards
	$(VPY) -m mypy.stubtest guards.shared
	$(VPY) -m mypy.stubtest guards.fleet

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

# The soname ffi/build.rs gives libguards.so, read back from the library (one source).
SONAME_OF = readelf -d $(1) | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p'

ffi-lib:
	$(CARGO) build -q -p guards-ffi --release
	@# the soname's link, so a program linked here with -lguards finds the library at run time
	ln -sf libguards.so $(FFI_OUT)/$$($(call SONAME_OF,$(FFI_OUT)/libguards.so))

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
# The shared library is libguards.so.VERSION with the soname's link and the -lguards link.
# PC_RELOCATABLE=1 (dist-c) writes guards.pc's prefix relative to the .pc file itself.
install: ffi-lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/guards.h $(DESTDIR)$(PREFIX)/include/guards.h
	install -m 644 $(FFI_OUT)/libguards.a $(DESTDIR)$(PREFIX)/lib/libguards.a
	soname=$$($(call SONAME_OF,$(FFI_OUT)/libguards.so)); test -n "$$soname"; \
	install -m 755 $(FFI_OUT)/libguards.so $(DESTDIR)$(PREFIX)/lib/libguards.so.$(GUARDS_VERSION); \
	ln -sf libguards.so.$(GUARDS_VERSION) $(DESTDIR)$(PREFIX)/lib/$$soname; \
	ln -sf $$soname $(DESTDIR)$(PREFIX)/lib/libguards.so
	sed -e 's|@PREFIX@|$(if $(PC_RELOCATABLE),$${pcfiledir}/../..,$(PREFIX))|' -e 's|@VERSION@|$(GUARDS_VERSION)|' \
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
test-node: node-dts-check redis-server
	cd node && node --test --test-concurrency=1 test/*.test.js

bench-node: node
	cd node && node bench/overhead.js
	cd node && node bench/region.js

# Four hosts sharing one allowance through a local redis-server (examples/fleet/).
demo-fleet: python redis-server
	$(VPY) examples/fleet/demo.py

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

# ---- One version, the crate package and the API reference site (make docs) ----
# The version of every artefact is the workspace's ([workspace.package] in Cargo.toml);
# version-check compares every source and every built artefact with it (CHANGELOG.md too).
print-version:
	@echo $(GUARDS_VERSION)

version-check:
	$(PYTHON) scripts/version_check.py

# The crate as crates.io would get it, built and tested from the packaged sources.
package-core:
	$(CARGO) package -q -p guards-core

# make docs: one static site in target/site/ (landing page docs/site/index.html, the
# getting-started pages and guides of docs/ as HTML, the API reference of each language).
# Every step fails on an undocumented public item and on any warning.
SITE := $(TARGET)/site
RUSTDOC_FLAGS := -D warnings -D missing_docs -D rustdoc::broken_intra_doc_links \
	-D rustdoc::private_intra_doc_links -D rustdoc::invalid_rust_codeblocks -D rustdoc::bare_urls

$(VENV)/.docs-tools: $(VENV)/.tools
	$(VPY) -m pip install -q 'pdoc>=15,<17' 'markdown>=3.5,<4'
	touch $@

docs/site/node_modules/.installed: docs/site/package.json docs/site/package-lock.json
	cd docs/site && npm ci --no-audit --no-fund --loglevel=error
	touch $@

docs-rust:
	RUSTDOCFLAGS="$(RUSTDOC_FLAGS)" $(CARGO) doc -q -p guards-core -p guards-sim --no-deps
	$(CARGO) test -q -p guards-core --doc
	rm -rf $(SITE)/rust && mkdir -p $(SITE) && cp -a $(TARGET)/doc $(SITE)/rust

docs-python: python $(VENV)/.docs-tools
	$(VPY) scripts/py_api_doc.py $(SITE)/python

docs-node: docs/site/node_modules/.installed
	cd docs/site && npx typedoc --options typedoc.json --out $(SITE)/node --logLevel Warn

docs-c: $(VENV)/.docs-tools
	$(VPY) scripts/c_api_doc.py include/guards.h $(SITE)/c/index.html --css ../style.css

docs-pages: $(VENV)/.docs-tools
	$(VPY) scripts/site.py $(SITE)

docs: docs-rust docs-python docs-node docs-c docs-pages
	@echo "make docs: $(SITE)/index.html"

# The undocumented-item checks alone (no site written): what make test runs.
docs-check: python $(VENV)/.docs-tools docs/site/node_modules/.installed
	RUSTDOCFLAGS="$(RUSTDOC_FLAGS)" $(CARGO) doc -q -p guards-core -p guards-sim --no-deps
	$(VPY) scripts/py_api_doc.py --check
	cd docs/site && npx typedoc --options typedoc.json --emit none --logLevel Warn
	$(VPY) scripts/c_api_doc.py include/guards.h --check

# A headless Chromium screenshot of the landing page, served on a free loopback port.
docs-shot: docs
	@command -v chromium >/dev/null || { apt-get -o DPkg::Lock::Timeout=600 install -y chromium \
	  || { apt-get update && apt-get -o DPkg::Lock::Timeout=600 install -y chromium; }; }
	$(PYTHON) scripts/site_shot.py $(SITE) out/docs-landing.png
# ---- Release artefacts (docs/install.md) and their install tests ----
# dist/ gets the C tarball, the Python wheel + sdist and the npm tarball. Each install
# test uses the artefact alone, in a scratch place, with no cargo or rustc on PATH.
DIST := $(ROOT)/dist
DIST_WORK := $(TARGET)/dist
ARCH := $(shell uname -m)
DIST_C_NAME := guards-$(GUARDS_VERSION)-linux-$(ARCH)
DIST_C := $(DIST)/$(DIST_C_NAME).tar.gz
NO_RUST_PATH := /usr/local/bin:/usr/bin:/bin

.PHONY: dist dist-c test-dist test-dist-c dist-python test-dist-python

dist: dist-c dist-python dist-node

# The three install tests (docs/install.md); each builds its artefact first.
test-dist: test-dist-c test-dist-python test-dist-node
	@echo "test-dist: the C tarball, the wheel and the npm tarball install and run with no Rust"

# The C tarball: `make install` into a staging tree (guards.pc relocatable), stripped,
# with the docs, the example server's source, the licences and the third-party notice.
dist-c: ffi-lib
	rm -rf $(DIST_WORK)/c && mkdir -p $(DIST_WORK)/c $(DIST)
	$(MAKE) -s install PREFIX=$(DIST_WORK)/c/$(DIST_C_NAME) PC_RELOCATABLE=1
	cd $(DIST_WORK)/c/$(DIST_C_NAME) && \
	  strip --strip-debug lib/libguards.a && strip --strip-unneeded lib/libguards.so.$(GUARDS_VERSION) && \
	  install -d share/doc/guards share/guards/examples/c && \
	  install -m 644 $(ROOT)/README.md $(ROOT)/docs/*.md share/doc/guards/ && \
	  install -m 644 $(ROOT)/ffi/README.md share/doc/guards/c-api.md && \
	  install -m 644 $(addprefix $(ROOT)/examples/c/,Makefile README.md server.c) share/guards/examples/c/ && \
	  install -m 644 $(ROOT)/LICENSE-MIT $(ROOT)/LICENSE-APACHE . && \
	  $(PYTHON) $(ROOT)/scripts/third_party.py guards-ffi "libguards (the C release tarball)" > LICENSE-THIRD-PARTY.md
	@# the shared library exports the C API only, and has its soname
	@bad=$$(nm -D --defined-only $(DIST_WORK)/c/$(DIST_C_NAME)/lib/libguards.so | awk '{print $$3}' | grep -v '^guards_' || true); \
	  test -z "$$bad" || { echo "libguards.so exports non-guards_ symbols: $$bad"; false; }
	@readelf -d $(DIST_WORK)/c/$(DIST_C_NAME)/lib/libguards.so | grep 'Library soname: \[libguards.so.' >/dev/null \
	  || { echo "libguards.so has no soname"; false; }
	tar -C $(DIST_WORK)/c --owner=0 --group=0 -czf $(DIST_C) $(DIST_C_NAME)
	@echo "dist-c: $(DIST_C) ($$(du -k $(DIST_C) | cut -f1) KiB; $$(nm -D --defined-only $(DIST_WORK)/c/$(DIST_C_NAME)/lib/libguards.so | grep -c ' guards_') exported guards_* symbols, none else)"

# Unpack the tarball somewhere new and build tests/dist/smoke.c with pkg-config only,
# against the shared library (found through the .pc file's libdir) and the static one.
# grep reads its whole input in these checks, never -q: under pipefail an early exit of
# grep -q can fail the pipeline with the writer's SIGPIPE.
test-dist-c: dist-c
	rm -rf $(DIST_WORK)/c-test && mkdir -p $(DIST_WORK)/c-test
	tar -C $(DIST_WORK)/c-test -xzf $(DIST_C)
	cp tests/dist/smoke.c $(DIST_WORK)/c-test/
	cd $(DIST_WORK)/c-test && env -u CARGO PATH=$(NO_RUST_PATH) \
	  PKG_CONFIG_PATH=$$PWD/$(DIST_C_NAME)/lib/pkgconfig bash -euo pipefail -c '\
	  ! command -v cargo >/dev/null && ! command -v rustc >/dev/null; \
	  libdir=$$(pkg-config --variable=libdir guards); \
	  $(CC) $(C_WARN) smoke.c $$(pkg-config --cflags --libs guards) -Wl,-rpath,$$libdir -o smoke-shared; \
	  ldd smoke-shared | grep "libguards.so.* => $$PWD/$(DIST_C_NAME)/lib/" >/dev/null; ./smoke-shared; \
	  $(CC) $(C_WARN) smoke.c $$(pkg-config --cflags guards) -Wl,-Bstatic $$(pkg-config --libs guards) \
	    -Wl,-Bdynamic $$(pkg-config --libs-only-l --static guards | sed "s/-lguards//") -o smoke-static; \
	  ! ldd smoke-static 2>/dev/null | grep libguards >/dev/null; ./smoke-static; \
	  $(MAKE) -s -C $(DIST_C_NAME)/share/guards/examples/c OUT=$$PWD/guards-server; \
	  ldd guards-server | grep "libguards.so.* => $$PWD/$(DIST_C_NAME)/lib/" >/dev/null'
	@echo "test-dist-c: the unpacked tarball builds and runs the smoke program (shared and static) and builds the example server"

# The Python wheel (abi3, CPython >= 3.10) for manylinux_2_28, linked with zig's cc
# against that glibc (plain cargo here would tag the host's manylinux_2_36), checked with
# auditwheel; and the sdist. maturin has its own target dir. The wheel carries the licences
# and the third-party notice (copied into python/ for the build; git ignores them there).
PY_COMPAT ?= manylinux_2_28
DIST_MATURIN_TARGET := $(TARGET)/dist-maturin
PY_NOTICES := python/LICENSE-MIT python/LICENSE-APACHE python/LICENSE-THIRD-PARTY.md

$(VENV)/.dist-tools: $(VENV)/.tools
	$(VPY) -m pip install -q 'ziglang>=0.13,<0.16' 'auditwheel>=6,<7'
	touch $@

dist-python: $(VENV)/.dist-tools
	mkdir -p $(DIST) && rm -rf $(DIST)/guards-*.whl $(DIST)/guards-$(GUARDS_VERSION).tar.gz $(DIST_WORK)/wheel-raw
	cp LICENSE-MIT LICENSE-APACHE python/
	$(PYTHON) scripts/third_party.py guards-py "the guards Python wheel" > python/LICENSE-THIRD-PARTY.md
	cd python && PATH=$(VENV)/bin:$$PATH CARGO_TARGET_DIR=$(DIST_MATURIN_TARGET) \
	  $(VENV)/bin/maturin build -q --release --strip --zig --compatibility $(PY_COMPAT) --out $(DIST_WORK)/wheel-raw
	PATH=$(VENV)/bin:$$PATH $(VENV)/bin/auditwheel show $(DIST_WORK)/wheel-raw/guards-$(GUARDS_VERSION)-*.whl \
	  | tee $(DIST_WORK)/auditwheel.txt
	@tr '\n' ' ' < $(DIST_WORK)/auditwheel.txt | grep 'is consistent with *the following platform tag' >/dev/null

	@# the tag the wheel carries must be the one auditwheel finds
	@tag=$$(basename $(DIST_WORK)/wheel-raw/guards-$(GUARDS_VERSION)-*.whl .whl | cut -d- -f5); \
	  grep -q "\"$${tag%%.*}" $(DIST_WORK)/auditwheel.txt \
	  || { echo "wheel tag $$tag is not what auditwheel reports"; false; }
	mv $(DIST_WORK)/wheel-raw/guards-$(GUARDS_VERSION)-*.whl $(DIST)/
	cd python && PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin sdist --out $(DIST)
	rm -f $(PY_NOTICES)
	@ls -l $(DIST)/guards-$(GUARDS_VERSION)*.whl $(DIST)/guards-$(GUARDS_VERSION).tar.gz

# A fresh venv with nothing but the wheel (no cargo or rustc on PATH): the smoke program,
# then the wheel again with every extra (from PyPI) and each extra's module imported.
PY_WHEEL = $(firstword $(wildcard $(DIST)/guards-$(GUARDS_VERSION)-*.whl))
PY_EXTRAS := otel,httpx,prometheus,ray,sim
test-dist-python: dist-python
	rm -rf $(DIST_WORK)/py-test && mkdir -p $(DIST_WORK)/py-test
	cp tests/dist/smoke.py $(DIST_WORK)/py-test/
	cd $(DIST_WORK)/py-test && env -u CARGO -u CARGO_TARGET_DIR PATH=$(NO_RUST_PATH) bash -euo pipefail -c '\
	  ! command -v cargo >/dev/null && ! command -v rustc >/dev/null; \
	  $(PYTHON) -m venv venv; venv/bin/python -m pip install -q --no-cache-dir --only-binary guards "$(PY_WHEEL)"; \
	  venv/bin/python smoke.py; \
	  venv/bin/python -m pip install -q "guards[$(PY_EXTRAS)] @ file://$(PY_WHEEL)"; \
	  venv/bin/python -m pip check; \
	  venv/bin/python smoke.py guards.httpx guards.otel guards.prometheus matplotlib ray'
	@echo "test-dist-python: $(notdir $(PY_WHEEL)) ($$(du -k $(PY_WHEEL) | cut -f1) KiB) installs and runs with no Rust, extras $(PY_EXTRAS) included"

# The npm tarball: the addon built again for linux-x64-gnu linked by zig against glibc 2.28
# (what Node 20's own binaries need; a plain build here needs the host's 2.34), bundled in
# the package as guards.linux-x64-gnu.node (lib/native.js picks it, or names the platform
# it lacks), with the licences and the third-party notice; `npm pack` then packs node/.
NODE_DIST_TARGET := $(TARGET)/dist-node
NODE_GLIBC := 2.28
NODE_PLATFORM := linux-x64-gnu
NODE_TGZ := $(DIST)/guards-$(GUARDS_VERSION).tgz
.PHONY: dist-node test-dist-node

dist-node: node-deps $(VENV)/.dist-tools
	mkdir -p $(NODE_DIST_TARGET)/out $(DIST)
	printf '#!/bin/sh\nPATH=$(VENV)/bin:$$PATH exec $(VENV)/bin/maturin zig cc -- -target x86_64-linux-gnu.$(NODE_GLIBC) "$$@"\n' \
	  > $(NODE_DIST_TARGET)/zigcc && chmod +x $(NODE_DIST_TARGET)/zigcc
	cd node && CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=$(NODE_DIST_TARGET)/zigcc \
	  npx napi build --release --target x86_64-unknown-linux-gnu --target-dir $(NODE_DIST_TARGET) \
	  --output-dir $(NODE_DIST_TARGET)/out
	strip --strip-unneeded -o node/guards.$(NODE_PLATFORM).node $(NODE_DIST_TARGET)/out/guards.node
	@max=$$(objdump -T node/guards.$(NODE_PLATFORM).node | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1); \
	  test "$$max" = "GLIBC_$(NODE_GLIBC)" -o "$$(printf '%s\n' $$max GLIBC_$(NODE_GLIBC) | sort -V | tail -1)" = "GLIBC_$(NODE_GLIBC)" \
	  || { echo "the addon needs $$max, more than glibc $(NODE_GLIBC)"; false; }
	cp LICENSE-MIT LICENSE-APACHE node/
	$(PYTHON) scripts/third_party.py guards-node "the guards npm package" > node/LICENSE-THIRD-PARTY.md
	rm -f $(NODE_TGZ) && cd node && npm pack --silent --pack-destination $(DIST) >/dev/null
	rm -f node/guards.$(NODE_PLATFORM).node node/LICENSE-MIT node/LICENSE-APACHE node/LICENSE-THIRD-PARTY.md
	@echo "dist-node: $(NODE_TGZ) ($$(du -k $(NODE_TGZ) | cut -f1) KiB): $$(tar tzf $(NODE_TGZ) | wc -l) files"

# A fresh npm project with no cargo or rustc on PATH installs the tarball (and, from npm,
# typescript and @types/node for the type check): require and import smokes, then tsc
# --noEmit over an .mts and a .cts file with moduleResolution node16 and bundler.
test-dist-node: dist-node
	rm -rf $(DIST_WORK)/node-test && mkdir -p $(DIST_WORK)/node-test
	cp tests/dist/smoke.cjs tests/dist/smoke.mjs tests/dist/smoke.mts tests/dist/smoke.cts $(DIST_WORK)/node-test/
	cd $(DIST_WORK)/node-test && env -u CARGO PATH=$(NO_RUST_PATH) bash -euo pipefail -c '\
	  ! command -v cargo >/dev/null && ! command -v rustc >/dev/null; \
	  printf "{\"name\":\"guards-install-test\",\"version\":\"1.0.0\",\"private\":true}\n" > package.json; \
	  npm install --no-audit --no-fund --loglevel=error $(NODE_TGZ) typescript@5 @types/node@20; \
	  test ! -e node_modules/express -a ! -e node_modules/fastify -a ! -e node_modules/prom-client; \
	  node smoke.cjs; node smoke.mjs; \
	  npx tsc --noEmit --strict --types node --target es2022 --module node16 --moduleResolution node16 smoke.mts smoke.cts; \
	  npx tsc --noEmit --strict --types node --target es2022 --module esnext --moduleResolution bundler smoke.mts'
	@echo "test-dist-node: $(notdir $(NODE_TGZ)) ($$(du -k $(NODE_TGZ) | cut -f1) KiB) installs with no Rust and no build step; require, import and tsc (node16, bundler) pass"
# ---- The live testbed (tests/live/, docs/live.md): a simulator topology run as real ----
# processes on loopback (C stock behind libguards, Python or Node callers, an asyncio
# database with the timeline's slow-down, open-loop apps) and compared with the simulator.
LIVE_OUT := $(TARGET)/live
LIVE_SETTINGS ?= live-C0 live-C4 live-C6 live-C7 live-C8

$(LIVE_OUT)/live-stock: tests/live/stock.c include/guards.h ffi-lib
	@mkdir -p $(LIVE_OUT)
	$(CC) $(C_WARN) -O2 -g -Iinclude tests/live/stock.c $(STATIC_LINK) -pthread -o $@

# The Python processes of the testbed run on uvloop with uvicorn's httptools parser, as a
# production asyncio service does (LIVE_LOOP=asyncio / LIVE_HTTP=h11 for the standard ones).
# sniffio: without it httpcore retries a failed `import sniffio` on every request.
$(VENV)/.live-tools: $(VENV)/.tools
	$(VPY) -m pip install -q 'uvloop>=0.19' 'httptools>=0.6' 'sniffio>=1.3'
	touch $@

live-build: python $(VENV)/.live-tools $(LIVE_OUT)/live-stock

# 30 s of live-C8: checks only that every request is accounted for and that every process
# exits cleanly with its guards back to 0 (never the figures: it cannot flake on a busy machine).
# Then 25 s at the healthy rate with the dependency killed with SIGKILL at 8 s and a new one
# started on its port at 11 s: again every request accounted for and every guard back to 0.
# Then 25 s with the caller tier as 2 processes sharing a region, one SIGKILLed at 10 s: the
# region reclaims its permits, and every request (the dead caller's lost ones included) is
# accounted for.
live-smoke: live-build
	$(VPY) tests/live/run.py live-C8 --duration 30 --smoke --out $(LIVE_OUT)/smoke
	$(VPY) tests/live/run.py live-C8 --healthy --restart-stock 8:3 --duration 25 --smoke --out $(LIVE_OUT)/smoke
	$(VPY) tests/live/run.py live-C8 --caller-procs 2 --kill-caller 10 --duration 25 --smoke --out $(LIVE_OUT)/smoke

# The faults, measured against the simulator (not in CI): the dependency restarted mid-run
# (the simulator's counterpart: an outage of stock over the same seconds), with each caller
# tier; then the 10-minute soak at the healthy rate (RSS slope of every process).
live-faults: live-build node
	$(VPY) tests/live/run.py live-C8 --healthy --restart-stock 10:5 --duration 40 --callers node --out $(LIVE_OUT)/runs || true
	$(VPY) tests/live/run.py live-C8 --healthy --restart-stock 10:5 --duration 40 --out $(LIVE_OUT)/runs || true
	$(VPY) tests/live/run.py live-C8 --caller-procs 2 --kill-caller 10 --out $(LIVE_OUT)/runs || true
	$(VPY) tests/live/run.py live-C8 --caller-procs 2 --kill-caller 10 --callers node --out $(LIVE_OUT)/runs || true

live-soak: live-build
	$(VPY) tests/live/run.py live-C8 --soak --out $(LIVE_OUT)/runs

# The full comparison, measured vs predicted, for each setting with each caller tier, once
# per seed of LIVE_SEEDS (the apps' arrivals), then one table per run and the pooled means
# (not in CI: about 17 minutes per seed, C0's drain of abandoned work most of it).
LIVE_SEEDS ?= 1
live: live-build node
	@start=$$(date +%s); dirs=""; \
	for seed in $(LIVE_SEEDS); do dirs="$$dirs $(LIVE_OUT)/runs-seed$$seed"; \
	  for s in $(LIVE_SETTINGS); do for c in python node; do \
	    $(VPY) tests/live/run.py $$s --callers $$c --seed $$seed --out $(LIVE_OUT)/runs-seed$$seed || true; \
	  done; done; done; \
	for d in $$dirs; do $(VPY) tests/live/summary.py $$d; done; \
	$(VPY) tests/live/summary.py --pool $$dirs; \
	echo "make live: $$(( $$(date +%s) - start )) s"
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

bench-servers: bench-servers-deps
	$(PYTHON) bench/servers/run.py --python $(VPY) --pythonpath $(BENCH_SRV)/pydeps \
	  --c-server $(BENCH_SRV)/guards-server --out $(TARGET)/bench-servers.md $(BENCH_SERVERS_ARGS)

# What both need: the packages, the load tools, valgrind and the C example server.
bench-servers-deps: python node ffi-lib $(BENCH_SRV)/pydeps/.installed
	@command -v wrk >/dev/null && command -v h2load >/dev/null || \
	  apt-get -o DPkg::Lock::Timeout=600 install -y wrk nghttp2-client || \
	  { apt-get update && apt-get -o DPkg::Lock::Timeout=600 install -y wrk nghttp2-client; }
	rm -rf $(BENCH_SRV)/prefix
	$(MAKE) -s install PREFIX=$(BENCH_SRV)/prefix
	rm -f $(BENCH_SRV)/guards-server
	PKG_CONFIG_PATH=$(BENCH_SRV)/prefix/lib/pkgconfig $(MAKE) -s -C examples/c OUT=$(BENCH_SRV)/guards-server
	@command -v valgrind >/dev/null || apt-get -o DPkg::Lock::Timeout=600 install -y valgrind || \
	  { apt-get update && apt-get -o DPkg::Lock::Timeout=600 install -y valgrind; }

# The same servers' instructions per request, counted under valgrind (cachegrind): the
# figure the machine's other load cannot move (bench/servers/instructions.py).
bench-servers-instructions: bench-servers-deps
	$(PYTHON) bench/servers/instructions.py --python $(VPY) --pythonpath $(BENCH_SRV)/pydeps \
	  --c-server $(BENCH_SRV)/guards-server --out $(TARGET)/bench-servers-instructions.md $(BENCH_SERVERS_ARGS)
