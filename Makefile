# spotlab: `make reproduce` sets everything up and runs every notebook; `make test` runs the tests.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
QUICK  ?= 0
JOBS   ?= 2
SCHEDULER ?=

# JupyterLab of this venv opens the jupytext notebooks (notebooks/*.py) as notebooks on a double click, and
# its contents manager (spotlab.notebooks.lab) keeps a notebook unmodified when its kernel starts
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
SERVER_CONFIG := $(VENV)/etc/jupyter/jupyter_server_config.json

.PHONY: setup reproduce test test-fast bench lab clean help

help:
	@echo "make reproduce   set up .venv, execute every notebook with papermill, write paper_figures/ (QUICK=1: a first look;"
	@echo "                 SCHEDULER=tcp://HOST:PORT: each notebook a task on that Dask cluster, which sees this folder)"
	@echo "make test        set up .venv and run the test suite"
	@echo "make bench       run the benchmarks in benchmarks/"
	@echo "make lab         start JupyterLab on the notebooks (a .py in notebooks/ opens as a notebook)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[lab,dev,rl]"
	touch $(STAMP)

$(LAB_SETTINGS): jupyterlab-settings/overrides.json $(STAMP)
	mkdir -p $(dir $@)
	cp $< $@

$(SERVER_CONFIG): jupyterlab-settings/jupyter_server_config.json $(STAMP)
	mkdir -p $(dir $@)
	cp $< $@

setup: $(STAMP) $(LAB_SETTINGS) $(SERVER_CONFIG)

lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. $(if $(filter 0,$(shell id -u)),--allow-root,)

reproduce: setup
	$(PY) -m spotlab reproduce --out paper_figures --build build $(if $(SCHEDULER),--scheduler $(SCHEDULER),--jobs $(JOBS)) $(if $(filter 1,$(QUICK)),--quick,)

# worksteal: xdist's default hands out tests in advance, and the long ones (notebooks, clusters) could pile up on
# one worker while the other idled (docs/benchmarks.md, "The test suite")
test: setup
	$(PY) -m pytest -q -n $(JOBS) --dist worksteal -p no:cacheprovider

bench: setup
	$(PY) benchmarks/bench_simulator.py
	$(PY) benchmarks/bench_optimum.py
	$(PY) benchmarks/bench_chc.py
	$(PY) benchmarks/bench_window_band.py
	$(PY) benchmarks/bench_chc_lockstep.py
	$(PY) benchmarks/bench_select_from_members.py
	$(PY) benchmarks/bench_predict.py
	$(PY) benchmarks/bench_cluster.py
	$(PY) benchmarks/bench_sweep.py
	$(PY) benchmarks/bench_placement.py
	$(PY) benchmarks/bench_leaderboard.py
	$(PY) benchmarks/bench_rl.py
	$(PY) benchmarks/bench_zones.py
	$(PY) benchmarks/bench_chc_zones.py

clean:
	rm -rf build .pytest_cache .hypothesis
