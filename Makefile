# One verb set: `make run` builds the bundled sample end to end, `make test` runs every test.
# Both start by running the (idempotent, cached) set-up, so they work on a fresh machine.

SHELL := /bin/bash
VENV  := .venv/bin
CONFIG ?= config/config.yaml
# Cores the workflow may use (all of this machine's by default).
CORES ?= $(shell nproc)
# Which MongoDB and Neo4j `make run` uses (services/local/for_run.py): auto = yours where
# LITPATH_MONGO_URI / LITPATH_NEO4J_URI (or the config's mongo.uri / neo4j.uri) point at them,
# else local servers started here; local = always the local ones; external = never.
SERVERS ?= auto
export PATH := $(CURDIR)/.venv/bin:$(PATH)
export LITPATH_CACHE ?= $(HOME)/.cache/litpath

.PHONY: setup run test test-fast test-python test-solver lint servers-start servers-stop bench bench-solver clean

setup:
	@scripts/setup.sh

## run: set up, pick the servers (SERVERS), run the workflow on CONFIG (the bundled sample by default)
run: setup
	@source <($(VENV)/python -m services.local.for_run --config $(CONFIG) --servers $(SERVERS)) && \
	  $(VENV)/snakemake -s workflow/Snakefile --configfile $(CONFIG) --cores $(CORES) \
	    --workflow-profile config/profiles/local && \
	  $(VENV)/litpath describe --config $(CONFIG)

## test: set up, lint, then the solver's CTest suite and the Python suite (servers are started by the tests)
test: setup lint test-solver test-python

# The fast tier: what needs no MPI ranks, servers, Snakemake, Slurm, fuzzing or GPU toolchain
# (the markers in pyproject.toml); the solver's unit tests. About a minute and a half here.
FAST_MARKERS := not (mpi or servers or workflow or slow or slurm or gpu_compile or faults or fuzz)

## test-fast: set up, lint, then the unit tier only (under 2 minutes), for the edit-test loop
test-fast: setup lint
	@cd solver/build && ctest -L unit --output-on-failure -j2
	@$(VENV)/pytest -q -ra -m "$(FAST_MARKERS)"

# -LE gpu: all but the tests that need a real GPU; the GPU source itself runs on the CPU here
# (label host-target, --backend gpu-host: solver/README.md "The GPU source on the CPU").
test-solver:
	@cd solver/build && ctest -LE gpu --output-on-failure -j2

test-python:
	@$(VENV)/pytest -q -ra

## lint: ruff, the import contracts of .importlinter (layers, no circles), the workflow's lint
lint:
	@$(VENV)/ruff check pipeline services tests bench
	@$(VENV)/lint-imports --no-cache --no-logo
	@$(VENV)/snakemake -s workflow/Snakefile --configfile $(CONFIG) --lint
	@$(VENV)/snakefmt --check workflow

servers-start:
	@$(VENV)/python -m services.local.servers start mongo
	@$(VENV)/python -m services.local.servers start neo4j

servers-stop:
	@$(VENV)/python -m services.local.servers stop mongo || true
	@$(VENV)/python -m services.local.servers stop neo4j || true

## bench: every benchmark, each against the peer a user would otherwise pick, in the same run;
## each appends its numbers to bench/results/ (bench/solver/ and bench/gpu/ for the solver's)
bench: setup bench-solver
	@$(VENV)/python bench/ingest_graph.py
	@$(VENV)/python bench/graph_build.py
	@$(VENV)/python bench/spoke_load.py
	@$(VENV)/python bench/path_service.py
	@$(VENV)/python bench/compare.py
	@$(VENV)/python bench/checkpoint_overhead.py --n 8192 --tile 256 --every 60s 10s --repeat 3
	@$(VENV)/python bench/plan_check.py

bench-solver: setup
	@$(VENV)/python bench/solver/run_all.py

## lock: regenerate requirements.lock (every package pinned, with hashes) from pyproject.toml's
## dependencies and all its extras; pip-tools comes from the lock itself (extra `dev`).
## Existing pins are kept; `make lock LOCK_FLAGS=--upgrade` moves them to the newest versions.
.PHONY: lock
lock: setup
	@$(VENV)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-find-links \
	  --all-extras $(LOCK_FLAGS) --output-file=requirements.lock pyproject.toml

clean:
	rm -rf results .snakemake solver/build
