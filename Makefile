# One entry point for development. `make test` is what CI runs (.ci/run).
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip

.PHONY: demo install test test-rust test-python typecheck bench e2e

# Quick start: install from source, then replay a real loop through the stream guard.
demo:
	$(PIP) install -q .
	loopbreak demo --fast

# Builds the extension in place, with everything the tests need.
install:
	$(PIP) install -q -e '.[test]'

test: install test-rust test-python typecheck

test-rust:
	cargo test --release

test-python:
	$(PYTHON) -m pytest -q

typecheck:
	$(PYTHON) -m mypy

# Benchmarks: criterion for the core, pytest-benchmark and the side-by-side comparison.
bench: install
	cargo bench --bench core
	$(PYTHON) -m pytest -q benches --benchmark-enable --benchmark-only
	$(PYTHON) benches/compare.py

# A real small model end to end: SmolLM2-135M served by llama-cpp-python on localhost, streamed
# through the OpenAI adapter. The first install builds llama-cpp-python (~13 min on 2 cores; pip
# caches the wheel). Not for this CPU only (-march=native): here that build died with SIGILL on
# the first request, and a cached wheel may run on another machine; GGML_NATIVE=OFF gives AVX2.
E2E_CMAKE_ARGS ?= -DGGML_NATIVE=OFF
e2e:
	CMAKE_ARGS="$(E2E_CMAKE_ARGS)" $(PIP) install -q -e '.[test,e2e]'
	$(PYTHON) -m pytest -q -m e2e tests/e2e
