"""The shipped California housing configs, shortened to one epoch: all columns, held-out evaluation, early stopping.

The full main job (``make demo``) is checked by hand: it must reach a validation RMSE of at most
$57,000 in under 2 minutes; here one epoch shows every part works on the real data.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from hookrun.hooks.history_saver.hook import read_history
from hookrun.runner.config import load_config
from hookrun.runner.data.reader import split_rows
from tests.conftest import CONFIGS

DATA = CONFIGS / "data" / "california_housing.csv"
OCEAN = ["<1H OCEAN", "INLAND", "ISLAND", "NEAR BAY", "NEAR OCEAN"]


def short_run(run_train, name: str, *overrides: str):
    return run_train(load_config(CONFIGS / name, ["data.epochs=1", *overrides]))


def test_main_job_one_epoch(run_train, captured):
    result = short_run(run_train, "california_housing_dnn.yaml")
    train_rows, val_rows = split_rows(20_640, 0.2, 0, DATA)  # the hash split of the file's rows
    assert (len(train_rows), len(val_rows)) == (16_478, 4_162)
    assert result.end_of_data and result.final_global_step == 258  # ceil(16,478 training rows / 64)
    state = json.loads((result.run_dir / "preprocessing.json").read_text())
    assert state["split"] == {"validation_split": 0.2, "seed": 0, "train_rows": 16478, "validation_rows": 4162}
    assert state["feature_names"][-5:] == [f"ocean_proximity={v}" for v in OCEAN]
    assert len(state["feature_names"]) == 13
    assert state["label"]["scale"] == 100000

    # total_bedrooms is filled with the training rows' median (statistics from the training split only).
    with DATA.open(newline="") as handle:
        bedrooms = np.array([float(r["total_bedrooms"] or "nan") for r in csv.DictReader(handle)])
    assert len(bedrooms) == 20_640
    bedroom_state = next(c for c in state["columns"] if c["name"] == "total_bedrooms")
    assert bedroom_state["fill"] == pytest.approx(np.nanmedian(bedrooms[train_rows]))

    last = result.evaluations[-1]
    assert last["step"] == 258 and 40_000 < last["val_rmse"] < 100_000  # dollars, after one epoch
    history = read_history(result.run_dir / "history.csv")
    assert result.history_columns == [
        "step",
        "mean_loss",
        "total_loss",
        "rmse",
        "mae",
        "val_loss",
        "val_rmse",
        "val_mae",
    ]
    assert history[-1]["step"] == 258 and history[-1]["val_rmse"] == pytest.approx(last["val_rmse"], rel=1e-6)
    assert (result.run_dir / "best" / "best.json").exists()
    assert "evaluation at step 258" in captured.text


def test_linear_baseline_one_epoch(run_train):
    result = short_run(run_train, "california_housing_linear.yaml")
    assert result.evaluations and 50_000 < result.evaluations[-1]["val_rmse"] < 150_000


def test_ocean_classifier_one_epoch(run_train):
    result = short_run(run_train, "california_ocean_classifier.yaml")
    state = json.loads((result.run_dir / "preprocessing.json").read_text())
    assert state["label"]["vocabulary"] == OCEAN
    assert "median_house_value" in state["feature_names"]
    assert result.evaluations[-1]["val_accuracy"] > 0.6


def test_sharded_config_one_epoch(run_train):
    result = short_run(run_train, "california_housing_sharded.yaml")
    state = json.loads((result.run_dir / "preprocessing.json").read_text())
    split = state["split"]
    assert split["train_rows"] + split["validation_rows"] == 20_640  # every row of the 4 shards, once
    assert 0.18 < split["validation_rows"] / 20_640 < 0.22
    assert result.final_global_step == -(-split["train_rows"] // 64)
    assert result.evaluations and 40_000 < result.evaluations[-1]["val_rmse"] < 100_000
