# One entry point for development. `make test` is what CI runs (.ci/run).
#
# Everything installs into the clone's own virtual environment, .venv, made on first use with
# python3: installing into whatever python3 is mixes the project's pins with the system's
# packages (and Debian's python3 refuses `pip install` outright). PYTHON=path/to/python uses
# another interpreter instead (an existing venv); then no .venv is made.
VENV := .venv
PYTHON ?= $(VENV)/bin/python
PIP ?= $(PYTHON) -m pip
MAKE_VENV := $(filter $(VENV)/bin/python,$(PYTHON))

.PHONY: demo install test test-envs env-wheel lint lint-python lint-imports lint-rust typecheck stubs test-rust test-python bench e2e fuzz fuzz-corpus

# Debian and Ubuntu ship venv's pip apart, in python3-venv.
$(VENV)/bin/python:
	python3 -m venv $(VENV) || { command -v apt-get >/dev/null && apt-get update && \
	  apt-get install -y python3-venv && python3 -m venv $(VENV); }

# Quick start: install from source, then replay a real loop through the stream guard.
demo: | $(MAKE_VENV)
	$(PIP) install -q .
	$(PYTHON) -m loopbreak.cli demo --fast

# Builds the extension in place, with everything the tests need: the Python extras, and from
# Debian's packages the real terminal (tmux) and browser (chromium) that the tests of
# `loopbreak runs` and `loopbreak scan --html` look through.
install: | $(MAKE_VENV)
	$(PIP) install -q -e '.[test]'
	command -v tmux >/dev/null && command -v chromium >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq tmux chromium)

# Everything: the style and type gates, the core, the Python suite, the integrations that need
# environments of their own, then a real model end to end.
test: install lint test-rust test-python test-envs e2e

# Integrations whose pinned libraries cannot share the test environment (or each other) are
# tested in environments of their own, one per conflicting set, the way a matrix of CI jobs
# would: tests/envs/NAME.txt is what environment NAME installs (pip requirements, every
# integration pinned), beside one wheel of loopbreak built for all of them, and ENV_TESTS_NAME
# the tests it runs (an environment without tests holds a server another test starts). Each
# lives in .venv-NAME, made on first use and brought up to date on every run.
ENVS := $(basename $(notdir $(wildcard tests/envs/*.txt)))
ENV_TESTS_crewai := tests/integrations/test_crewai.py tests/integrations/test_crewai_scenarios.py
ENV_TESTS_google-adk := tests/integrations/test_google_adk.py tests/integrations/test_google_adk_scenarios.py
ENV_WHEELS := target/env-wheel

test-envs: $(ENVS:%=test-env-%)

env-wheel: | $(MAKE_VENV)
	rm -rf $(ENV_WHEELS) && $(PIP) wheel -q --no-deps -w $(ENV_WHEELS) .

# Precious: made by a pattern rule for env-%, make would delete it as an intermediate file.
.PRECIOUS: .venv-%/bin/python
.venv-%/bin/python:
	python3 -m venv .venv-$*

env-%: env-wheel .venv-%/bin/python
	.venv-$*/bin/python -m pip install -q -r tests/envs/$*.txt
	.venv-$*/bin/python -m pip install -q --force-reinstall --no-deps $(ENV_WHEELS)/loopbreak-*.whl

# pytest's exit 5 (no test collected) fails the run: an environment's tests never skip unseen.
test-env-%: env-%
	$(if $(ENV_TESTS_$*),.venv-$*/bin/python -m pytest -q $(ENV_TESTS_$*))

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
# through the OpenAI adapter and `loopbreak proxy` (on the Anthropic Messages API, behind LiteLLM's
# proxy server from the environment anthropic-gateway), and loaded in-process by llama-cpp-python
# and by transformers (torch on CPU: ~3.0 GB downloaded, ~3 min cold) for the engine integrations.
#
# llama-cpp-python is built from source, and the build must not depend on what pip's cache holds:
# pip keeps each wheel it builds keyed by the source archive only, not by CMAKE_ARGS, and reuses
# it without a word. A cached wheel built with -march=native (the default) died with SIGILL on
# another CPU, and a native build crashes in ggml_backend_amx_mul_mat on CPUs with AMX
# (docs/integrations/llama_cpp.md). So the project builds its own wheel, with pip's cache off,
# into a folder keyed by version and flags, outside the clone (every clone on the machine reuses
# it), and installs exactly that file over whatever is installed. The first build takes ~13 min
# on 2 cores. GGML_NATIVE=OFF: built for any x86-64 with AVX2, not just this CPU.
LLAMA_CPP_VERSION := $(shell sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
LLAMA_CPP_CMAKE_ARGS ?= -DGGML_NATIVE=OFF
LLAMA_CPP_KEY := $(shell printf '%s' '$(LLAMA_CPP_CMAKE_ARGS)' | sha256sum | cut -c1-12)
LLAMA_CPP_WHEELS := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/loopbreak/llama-cpp-python-$(LLAMA_CPP_VERSION)-$(LLAMA_CPP_KEY)

# Built into a folder of its own and renamed when complete: an interrupted build is never
# reused, and two clones building at once do not share a folder (the second rename gives way).
$(LLAMA_CPP_WHEELS): | $(MAKE_VENV)
	mkdir -p '$(dir $@)' && partial=$$(mktemp -d '$@.partial.XXXXXX') && \
	CMAKE_ARGS='$(LLAMA_CPP_CMAKE_ARGS)' $(PIP) wheel -q --no-cache-dir --no-deps \
	  'llama-cpp-python==$(LLAMA_CPP_VERSION)' -w "$$partial" && \
	printf '%s\n' '$(LLAMA_CPP_CMAKE_ARGS)' > "$$partial/CMAKE_ARGS" && \
	{ mv -T "$$partial" '$@' 2>/dev/null || rm -rf "$$partial"; }

e2e: $(LLAMA_CPP_WHEELS) env-anthropic-gateway
	$(PIP) install -q --force-reinstall --no-deps '$(LLAMA_CPP_WHEELS)'/llama_cpp_python-*.whl
	$(PIP) install -q -e '.[test,e2e]'
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
