# hookrun: `make demo` and `make test` work on a fresh machine with Python 3.11 and pip.
# They create .venv, install hookrun (editable) with its test tools, then run.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: help install demo demo-sharded test lint bench clean

help:
	@echo "make demo   - set up .venv and train configs/california_housing_dnn.yaml (the main job)"
	@echo "make demo-sharded - the same job streamed from 4 gzip'd CSV shards (configs/california_housing_sharded.yaml)"
	@echo "make test   - set up .venv, run ruff and the test suite"
	@echo "make bench  - measure training speed and start-up (benchmarks/RESULTS.md; see benchmarks/README.md)"
	@echo "make clean  - remove .venv and runs/"

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	@# A .venv made before hookrun depended on `tensorflow` holds `tensorflow-cpu`: both write the one
	@# `tensorflow` module, so it goes before `tensorflow` comes (removing it after would delete shared files).
	@$(BIN)/python -m pip uninstall --quiet --disable-pip-version-check -y tensorflow-cpu 2>/dev/null || true
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
	$(BIN)/python -m compileall -q cli config_schemas hooks runner  # as `pip install .` does: start-up reads .pyc
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hookrun validate configs/california_housing_dnn.yaml
	@run=runs/demo-$$(date +%Y%m%d-%H%M%S); \
	echo "$(BIN)/hookrun train configs/california_housing_dnn.yaml --run-dir $$run"; \
	$(BIN)/hookrun train configs/california_housing_dnn.yaml --run-dir $$run && { \
	echo; echo "Predict with the model, and export it as a SavedModel taking raw columns (docs/trained-model.md):"; \
	echo "  $(BIN)/hookrun predict $$run --data configs/data/california_housing.csv --output $$run/predictions.csv"; \
	echo "  $(BIN)/hookrun export $$run --output $$run/export/1   # 1: the version folder TF Serving loads"; }

demo-sharded: $(STAMP)
	$(BIN)/hookrun validate configs/california_housing_sharded.yaml
	$(BIN)/hookrun train configs/california_housing_sharded.yaml --run-dir runs/demo-sharded-$$(date +%Y%m%d-%H%M%S)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m compileall -q cli config_schemas hooks runner
	$(BIN)/python benchmarks/bench.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/data_bench.py $(DATA_BENCH_ARGS)  # input at scale; e.g. DATA_BENCH_ARGS="--rows 1000000"
	$(BIN)/python benchmarks/eval_bench.py $(EVAL_BENCH_ARGS)  # evaluation cost (issue 25); e.g. EVAL_BENCH_ARGS="--repeats 3"

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) runs
