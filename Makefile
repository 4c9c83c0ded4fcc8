# hookrun: `make demo` and `make test` work on a fresh machine with Python 3.11 and pip.
# They create .venv, install hookrun (editable) with its test tools, then run.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: help install demo demo-sharded test test-slow test-all lint bench bench-gpu clean

help:
	@echo "make demo   - set up .venv and train configs/california_housing_dnn.yaml (the main job)"
	@echo "make demo-sharded - the same job streamed from 4 gzip'd CSV shards (configs/california_housing_sharded.yaml)"
	@echo "make test   - set up .venv, run ruff and the test suite in parallel, without the slow group (a few minutes)"
	@echo "make test-slow - the slow group only: real clusters, signals, preemption (pytest -m slow)"
	@echo "make test-all  - both, as CI (.ci/run) does"
	@echo "make bench  - measure training speed and start-up (benchmarks/RESULTS.md; see benchmarks/README.md)"
	@echo "make bench-gpu - towers on K = 1, 2, 4 GPUs beside Keras MirroredStrategy (BENCH_GPU_ARGS=\"--device cpu\" on CPUs)"
	@echo "make clean  - remove .venv and runs/"

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	@# A .venv made before hookrun depended on `tensorflow` holds `tensorflow-cpu`: both write the one
	@# `tensorflow` module, so it goes before `tensorflow` comes (removing it after would delete shared files).
	@$(BIN)/python -m pip uninstall --quiet --disable-pip-version-check -y tensorflow-cpu 2>/dev/null || true
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
	$(BIN)/python -m compileall -q cli common config_schemas estimator hooks runner  # as `pip install .` does: start-up reads .pyc
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

# pytest-xdist: one worker per CPU core (PYTEST_WORKERS=4 to choose); --dist loadgroup keeps the tests marked
# xdist_group(name) on one worker. The `slow` group (pyproject.toml's markers) runs in `make test-slow`.
PYTEST_WORKERS ?= auto
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadgroup

test: $(STAMP)
	$(BIN)/ruff check .
	@status=0; $(BIN)/python -m pytest -q $(PYTEST_PARALLEL) -m "not slow" $(PYTEST_ARGS) || status=$$?; \
	echo "make test: the slow group (real clusters, signals, preemption) was not run: make test-slow (or make test-all)"; \
	exit $$status

# One test at a time (SLOW_WORKERS=2 to choose): each starts several TensorFlow processes and waits on them.
# pytest exits 5 when nothing is selected: no test marked slow is not a failure.
SLOW_WORKERS ?= 0

test-slow: $(STAMP)
	@status=0; $(BIN)/python -m pytest -q -n $(SLOW_WORKERS) -m slow $(PYTEST_ARGS) || status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test-slow: no test is marked slow"; status=0; fi; \
	exit $$status

test-all: test test-slow

bench: $(STAMP)
	$(BIN)/python -m compileall -q cli common config_schemas estimator hooks runner
	$(BIN)/python benchmarks/bench.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/data_bench.py $(DATA_BENCH_ARGS)  # input at scale; e.g. DATA_BENCH_ARGS="--rows 1000000"
	$(BIN)/python benchmarks/eval_bench.py $(EVAL_BENCH_ARGS)  # evaluation cost (issue 25); e.g. EVAL_BENCH_ARGS="--repeats 3"
	$(BIN)/python benchmarks/input_fn_bench.py $(INPUT_FN_BENCH_ARGS)  # a user's tf.data input_fn (issue 24); e.g. INPUT_FN_BENCH_ARGS=--quick

bench-gpu: $(STAMP)
	$(BIN)/python benchmarks/gpu_bench.py $(BENCH_GPU_ARGS)  # towers K = 1, 2, 4 vs Keras MirroredStrategy; no GPU: exit 2 (BENCH_GPU_ARGS="--device cpu" runs on logical CPUs)

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) runs
