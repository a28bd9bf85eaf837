# spotlab: `make reproduce` sets everything up and runs every notebook; `make test` runs the tests.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
QUICK  ?= 0
JOBS   ?= 2

.PHONY: setup reproduce test test-fast bench clean help

help:
	@echo "make reproduce   set up .venv, execute every notebook with papermill, write paper_figures/ (QUICK=1: a first look)"
	@echo "make test        set up .venv and run the test suite"
	@echo "make bench       run the benchmarks in benchmarks/"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[lab,dev]"
	touch $(STAMP)

setup: $(STAMP)

reproduce: setup
	$(PY) -m spotlab.reproduce --out paper_figures --build build $(if $(filter 1,$(QUICK)),--quick,)

test: setup
	$(PY) -m pytest -q -n $(JOBS) -p no:cacheprovider

bench: setup
	$(PY) benchmarks/bench_simulator.py
	$(PY) benchmarks/bench_optimum.py
	$(PY) benchmarks/bench_chc.py
	$(PY) benchmarks/bench_predict.py
	$(PY) benchmarks/bench_cluster.py
	$(PY) benchmarks/bench_sweep.py

clean:
	rm -rf build .pytest_cache .hypothesis
