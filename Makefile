# Thin wrappers over cargo and the project's scripts. `make` lists the targets.

.DEFAULT_GOAL := help
CARGO ?= cargo
PYTHON ?= python3

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DOCDIR ?= $(PREFIX)/share/doc/morloc-mcp
BIN ?= target/release/morloc-mcp
DOCS := $(sort $(wildcard docs/*.md))
# Beside the installed docs: the directories `make install` made (missing
# before), which `make uninstall` removes once empty; it leaves the others.
MADE := .installed-directories
# Tests at once, for `cargo test` here and in the static stage: the
# integration tests mostly wait on the servers, pools and clients they
# start (about 5 test-seconds per CPU-second), so 4 per CPU; each holds at
# any load (tests/support/time.rs). Set RUST_TEST_THREADS to override.
export RUST_TEST_THREADS ?= $(shell echo $$((4 * $$(nproc 2>/dev/null || echo 1))))

.PHONY: install install-files uninstall help build check test test-rust test-pool test-real test-scale lint demo bench fuzz-smoke static e2e e2e-static

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

build: ## Build the release binary
	$(CARGO) build --release

install: build ## Install the release binary, README, LICENSE and docs/ under PREFIX (default /usr/local; DESTDIR is honoured)
	$(MAKE) install-files

install-files: ## Install BIN (default the release binary) without building it
	@made=$$(for leaf in "$(BINDIR)" "$(DOCDIR)/docs"; do \
	    dir=$$leaf; \
	    while [ -n "$$dir" ] && [ "$$dir" != / ] && [ "$$dir" != . ] && [ "$$dir" != "$(PREFIX)" ] && \
	        [ ! -d "$(DESTDIR)$$dir" ]; do echo "$$dir"; dir=$$(dirname "$$dir"); done; done); \
	echo 'install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(DOCDIR)/docs"'; \
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(DOCDIR)/docs" && \
	if [ -n "$$made" ]; then printf '%s\n' "$$made" >>"$(DESTDIR)$(DOCDIR)/$(MADE)"; else : >>"$(DESTDIR)$(DOCDIR)/$(MADE)"; fi
	install -m 755 "$(BIN)" "$(DESTDIR)$(BINDIR)/morloc-mcp"
	install -m 644 README.md LICENSE "$(DESTDIR)$(DOCDIR)/"
	install -m 644 $(DOCS) "$(DESTDIR)$(DOCDIR)/docs/"

uninstall: ## Remove what `make install` put under PREFIX, and the directories it made (not those that were there before) once they are empty
	rm -f "$(DESTDIR)$(BINDIR)/morloc-mcp" "$(DESTDIR)$(DOCDIR)/README.md" "$(DESTDIR)$(DOCDIR)/LICENSE"
	rm -f $(addprefix "$(DESTDIR)$(DOCDIR)/,$(addsuffix ",$(DOCS)))
	-@made=$$(LC_ALL=C sort -r -u "$(DESTDIR)$(DOCDIR)/$(MADE)" 2>/dev/null); \
	rm -f "$(DESTDIR)$(DOCDIR)/$(MADE)"; \
	printf '%s\n' "$(DOCDIR)/docs" "$(DOCDIR)" "$$made" | while IFS= read -r dir; do \
	    if [ -n "$$dir" ] && [ -d "$(DESTDIR)$$dir" ]; then rmdir "$(DESTDIR)$$dir" 2>/dev/null || true; fi; done

check: lint ## The inner loop: formatting, clippy, then the unit and integration tests (no release build, no clients)
	$(CARGO) test --all-targets

test: ## Every test stage, each even after a failure, then a summary table (what CI runs; tests/run_all.sh)
	sh tests/run_all.sh

test-rust: ## Unit, golden and end-to-end tests of the server
	$(CARGO) test --all-targets

test-real: ## The real Morloc runtime, natively (MORLOC_HOME, `morloc` on PATH) or in a root (MORLOC_ROOT, default /opt/morloc-root), beside morloc-nexus (skips without one)
	sh tests/real/run.sh

test-scale: ## Three instances behind nginx and HAProxy from deploy/ (skips a balancer that is not installed)
	sh tests/scale/run.sh

test-pool: ## Check the test pool against the reference wire bytes
	$(PYTHON) -m unittest discover -s tests/pool -t tests/pool

lint: ## Formatting and clippy
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

demo: build ## Serve the example program and drive a short scripted session
	$(PYTHON) examples/demo.py target/release/morloc-mcp

bench: build ## Benchmarks; results go to bench/RESULTS.md (HTTP load and soak: bench/http_bench.py, bench/soak.py)
	$(PYTHON) bench/run.py target/release/morloc-mcp
	$(PYTHON) bench/modern_bench.py target/release/morloc-mcp
	$(PYTHON) bench/scale_bench.py target/release/morloc-mcp
	$(PYTHON) bench/big_results.py target/release/morloc-mcp
	$(PYTHON) bench/structured_results.py target/release/morloc-mcp
	$(PYTHON) bench/replicas.py target/release/morloc-mcp
	$(PYTHON) bench/bursts.py target/release/morloc-mcp
	$(PYTHON) bench/threaded.py target/release/morloc-mcp
	$(PYTHON) bench/latency.py target/release/morloc-mcp
	$(PYTHON) bench/args_memory.py target/release/morloc-mcp
	$(PYTHON) bench/health_under_bodies.py target/release/morloc-mcp
	$(PYTHON) bench/health_under_result_files.py target/release/morloc-mcp
	$(PYTHON) bench/queue_bench.py target/release/morloc-mcp
	$(PYTHON) bench/hostile_bench.py target/release/morloc-mcp
	$(PYTHON) bench/http_bench.py target/release/morloc-mcp --tool addOne
	$(PYTHON) bench/http_bench.py target/release/morloc-mcp --tool pureAnswer

fuzz-smoke: ## Run every fuzz target briefly (needs nightly + cargo-fuzz)
	sh fuzz/smoke.sh

e2e: ## Real MCP clients and the conformance suite against the server (installs them into .cache/)
	sh e2e/run.sh

e2e-static: static ## The same against the static binary (skipped when `make static` was)
	@if [ -x target/static/morloc-mcp ]; then E2E_BIN=$(CURDIR)/target/static/morloc-mcp sh e2e/run.sh; fi

static: ## Fully static musl binary: size budget, then the end-to-end tests of what differs between the builds against it (bench/static.sh says which; STATIC_TESTS=all for every one; skips without musl-tools unless MORLOC_MCP_REQUIRE_STATIC=1)
	sh bench/static.sh
