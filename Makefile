# Quickstart targets. Each one sets up .venv first (idempotent), then runs.
#   make demo   collscope bench on the embedded default (local ranks: GPUs, else 2 gloo ranks)
#   make test       the whole test suite (unit, dist, e2e; ~11 minutes on 2 cores: CONTRIBUTING.md)
#   make test-fast  the unit tests only: the inner loop (under a minute on 2 cores)
#   make lint       ruff and mypy, as CI runs them
# The venv sees system site-packages, so a ROCm or CUDA torch already installed is used as is;
# torch is installed only when none is importable, and then the CPU build
# (tools/install_torch.py: PyTorch's CPU index where reachable, else the registry's torch).
# CI (.ci/run) sets VENV_FLAGS empty: a venv that sees only what set-up installs, as a bare
# interpreter would, so a dependency no extra declares fails CI as it fails a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
VENV_FLAGS ?= --system-site-packages
TORCH_VERSION ?= 2.13.0
BIN := $(VENV)/bin

.PHONY: setup demo test test-fast lint bench-overhead
setup: $(VENV)/.setup-done

$(VENV)/.setup-done: pyproject.toml tools/install_torch.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
	$(BIN)/python tools/install_torch.py $(TORCH_VERSION)
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@

demo: setup
	$(BIN)/collscope bench

# Python's bytecode cache on for the tests, even where PYTHONDONTWRITEBYTECODE is set (an empty
# value is unset to Python): without it each pytest process re-rewrites the asserts of every
# test module (~10 s of CPU to collect) and each of the hundreds of collscope processes and
# ranks the suite starts compiles collscope again (~0.6 s of CPU each).
test test-fast: export PYTHONDONTWRITEBYTECODE =

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

# ruff and mypy (their releases held by the lint extra; mypy's settings in pyproject.toml).
# CI runs it after the tests; either reporting anything fails it.
lint: $(VENV)/.lint-done
	$(BIN)/ruff check collscope tests benchmarks tools
	$(BIN)/mypy

$(VENV)/.lint-done: $(VENV)/.setup-done
	$(BIN)/python -m pip install -q -e ".[lint]"
	touch $@

bench-overhead: setup
	$(BIN)/python benchmarks/harness_overhead.py
