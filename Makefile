# One entry point for development. `make test` is what CI runs (.ci/run).
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip

.PHONY: demo install test lint lint-python lint-imports lint-rust typecheck stubs test-rust test-python bench e2e fuzz fuzz-corpus

# Quick start: install from source, then replay a real loop through the stream guard.
demo:
	$(PIP) install -q .
	loopbreak demo --fast

# Builds the extension in place, with everything the tests need: the Python extras, and from
# Debian's packages the real terminal (tmux) and browser (chromium) that the tests of
# `loopbreak runs` and `loopbreak scan --html` look through.
install:
	$(PIP) install -q -e '.[test]'
	command -v tmux >/dev/null && command -v chromium >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq tmux chromium)

# Everything: the style and type gates, the core, the Python suite, then a real model end to end.
test: install lint test-rust test-python e2e

# The gates, each runnable alone: style (ruff, rustfmt, clippy), types (mypy --strict) and the
# hand-written stubs against the built module (stubtest).
lint: lint-python lint-rust typecheck stubs lint-imports

lint-python:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

# The layering contracts of [tool.importlinter] in pyproject.toml.
lint-imports:
	$(PYTHON) -c "from importlinter.cli import lint_imports_command; lint_imports_command()" --no-cache

lint-rust:
	cargo fmt --all --check
	cargo fmt --all --check --manifest-path fuzz/Cargo.toml
	cargo clippy --release --all-targets -- -D warnings
	cargo clippy --release --all-targets --features python -- -D warnings

# The criterion benches run once each (`--test`), so they cannot rot.
test-rust:
	cargo test --release
	cargo test --manifest-path fuzz/Cargo.toml --lib --no-default-features --features oracle
	cargo bench --bench core -- --test

test-python:
	$(PYTHON) -m pytest -q

typecheck:
	$(PYTHON) -m mypy

# stubtest compares python/loopbreak/_core.pyi with the built extension; the allowlist names
# the differences stubtest cannot judge, each with its reason.
stubs:
	$(PYTHON) -m mypy.stubtest loopbreak._core --allowlist .ci/stubtest-allowlist.txt

# Benchmarks: criterion for the core, pytest-benchmark and the side-by-side comparison.
bench: install
	cargo bench --bench core
	$(PYTHON) -m pytest -q benches --benchmark-enable --benchmark-only
	$(PYTHON) benches/compare.py

# A real small model end to end: SmolLM2-135M served by llama-cpp-python on localhost, streamed
# through the OpenAI adapter, and loaded in-process by llama-cpp-python and by transformers (torch
# on CPU: ~3.0 GB downloaded, ~3 min cold) for the engine integrations. The first install builds llama-cpp-python (~13 min on 2 cores; pip
# caches the wheel). Built for any x86-64 with AVX2 (GGML_NATIVE=OFF), not just this CPU: the
# default -march=native build died with SIGILL on the first request here, and a cached wheel may
# be reused on another machine.
E2E_CMAKE_ARGS ?= -DGGML_NATIVE=OFF
e2e:
	CMAKE_ARGS="$(E2E_CMAKE_ARGS)" $(PIP) install -q -e '.[test,e2e]'
	$(PYTHON) -m pytest -q -m e2e tests/e2e

# Fuzzing (fuzz/, cargo-fuzz): every target for FUZZ_SECONDS, seeded with the kept corpus
# (fuzz/corpus/<target>/, replayed by test-rust); what a run finds goes to fuzz/target/corpus/
# (`make fuzz-corpus` minimises it into the kept corpus), crashes to fuzz/artifacts/<target>/.
# cargo-fuzz needs nightly features: RUSTC_BOOTSTRAP=1 lets the stable toolchain build it. No
# sanitizer: the core's only unsafe code is the vector loads in rust/lanes.rs (inside their
# arrays), Window::lanes_back (in bounds by its Slot type), the AVX2 build of a piece's loop (run
# only where the CPU has AVX2) and reading a str's storage in rust/python.rs; ASan would halve the speed for
# nothing. A unit slower than 10 s is a failure. FUZZ_FLAGS=--features=mask-known-bugs skips the open bugs.
FUZZ_SECONDS ?= 180
FUZZ_TARGETS ?= chunking scan trim rules
FUZZ_FLAGS ?=
FUZZ = RUSTC_BOOTSTRAP=1 cargo fuzz

fuzz:
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
	@status=0; for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/target/corpus/$$t; \
	  $(FUZZ) run -s none $(FUZZ_FLAGS) $$t fuzz/target/corpus/$$t fuzz/corpus/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 || status=1; \
	done; exit $$status

fuzz-corpus:
	@for t in $(FUZZ_TARGETS); do \
	  cp fuzz/target/corpus/$$t/* fuzz/corpus/$$t/ 2>/dev/null; \
	  $(FUZZ) cmin -s none $$t fuzz/corpus/$$t -- -use_counters=0 -timeout=10 || exit 1; \
	done
