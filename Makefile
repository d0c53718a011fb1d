# Quickstart targets. Each one sets up .venv first (idempotent), then runs.
#   make demo   collscope bench on the embedded default (local ranks: GPUs, else 2 gloo ranks)
#   make test       the whole test suite (unit, dist, e2e; under 10 minutes on 2 cores)
#   make test-fast  the unit tests only: the inner loop (under a minute on 2 cores)
# The venv sees system site-packages, so a ROCm or CUDA torch already installed is used as is;
# a CPU torch is installed only when no torch is importable at all.
PYTHON ?= python3
VENV   ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin

.PHONY: setup demo test test-fast lint bench-overhead
setup: $(VENV)/.setup-done

$(VENV)/.setup-done: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv --system-site-packages $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@

demo: setup
	$(BIN)/collscope bench

# Two passes: every test that judges no speed or wall time on every core, then the rest
# (marker "serial") one at a time, so a timing test never shares the cores with another
# test. Both passes run; either failing fails.
test: setup
	status=0; \
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m "not serial" --durations 10 || status=1; \
	$(BIN)/python -m pytest -q -m serial --durations 20 || status=1; \
	exit $$status

# Unit tests on every core (pytest-xdist; --dist loadfile keeps each file's tests together).
test-fast: setup
	$(BIN)/python -m pytest -q -n auto --dist loadfile tests/unit

lint: setup
	$(BIN)/python -m pip install -q ruff
	$(BIN)/ruff check collscope tests benchmarks

bench-overhead: setup
	$(BIN)/python benchmarks/harness_overhead.py
