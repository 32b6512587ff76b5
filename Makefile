# pyromodels: every target bootstraps .venv first (idempotent).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SHARED_DATA ?= $(abspath ../shared/data)
export PYROMODELS_DATA ?= $(SHARED_DATA)
export NLTK_DATA ?= $(SHARED_DATA)/nltk_data
export MPLBACKEND ?= Agg

.PHONY: venv demo test test-slow test-checks reproduce bench lint clean

venv: $(STAMP)

# the C extensions are built by the editable install: a changed C source reinstalls
C_SOURCES := $(shell find pyromodels -name '*.c')

$(STAMP): pyproject.toml setup.py $(C_SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,peers,experiments]'
	bash scripts/system-data.sh
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pyromodels demo --out reports/demo

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --durations=15

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

# the slow tests other than the paper reproductions at scale (.ci/run runs them after make test)
test-checks: $(STAMP)
	$(PY) -m pytest -q -n 2 -m 'slow and not reproduction' --durations=10

reproduce: $(STAMP)
	$(PY) -m pytest -q -m slow
	$(VENV)/bin/pyromodels reproduce all --scale medium --out reports/reproduce

# the heavy peers of the ESS/s benchmark (numpyro, jax, pymc) are installed for benchmarks only
BENCH_STAMP := $(VENV)/.bench-heavy

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e '.[bench-heavy]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) -m benchmarks --out benchmarks/results/latest.jsonl

lint: $(STAMP)
	$(VENV)/bin/ruff check pyromodels tests tutorials benchmarks
	$(VENV)/bin/lint-imports
	$(PY) scripts/check_module_size.py

clean:
	rm -rf $(VENV) reports .pytest_cache
