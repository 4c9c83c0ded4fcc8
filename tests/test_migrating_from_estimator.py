"""docs/migrating-from-estimator.md: its worked example (the model_fn and the config, as written) trains,
evaluates and resumes (issue 16 e)."""

from __future__ import annotations

import json
import math
import re

import numpy as np

from hookrun.runner.config import load_config
from tests.conftest import REPO

DOC = REPO / "docs" / "migrating-from-estimator.md"


def _block(text: str, heading: str, language: str) -> str:
    section = text.split(heading, 1)[1]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


def _census_csv(rows: int = 400, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    education = ["Bachelors", "HS-grad", "Masters", "Doctorate", "Some-college"]
    lines = ["age,education,hours_per_week,income_bracket"]
    for _ in range(rows):
        age, hours, level = int(rng.integers(18, 70)), int(rng.integers(10, 60)), int(rng.integers(0, 5))
        rich = (age > 35) + (hours > 40) + (level in (2, 3)) + rng.normal(scale=0.5) > 1.5
        lines.append(f"{age},{education[level]},{hours},{'>50K' if rich else '<=50K'}")
    return "\n".join(lines) + "\n"


def test_the_worked_example_trains_evaluates_and_resumes(tmp_path, run_train):
    text = DOC.read_text(encoding="utf-8")
    (tmp_path / "census_model.py").write_text(_block(text, "### After (hookrun)", "python"), encoding="utf-8")
    (tmp_path / "census.yaml").write_text(_block(text, "### The config, `census.yaml`", "yaml"), encoding="utf-8")
    (tmp_path / "adult.csv").write_text(_census_csv(), encoding="utf-8")
    run = tmp_path / "run"
    first = run_train(load_config(tmp_path / "census.yaml", ["data.epochs=1"]), run_dir=run)
    rows = json.loads((run / "preprocessing.json").read_text())["split"]["train_rows"]
    assert 280 < rows < 360  # ~80% of 400
    assert first.end_of_data and first.final_global_step == math.ceil(rows / 32)
    assert 0.4 < first.evaluations[-1]["val_accuracy"] <= 1.0
    second = run_train(load_config(tmp_path / "census.yaml"), run_dir=run)
    assert second.initial_step == first.final_global_step
    assert second.final_global_step == math.ceil(2 * rows / 32)  # epochs: 2, resumed: the rest only
    assert second.evaluations[-1]["step"] == second.final_global_step
    # the port keeps Estimator's default names: input_layer's embedding, unnamed dense layers
    assert {"input_layer/education_embedding/embedding_weights", "dense/kernel", "dense_2/kernel"} <= {
        name for name, _ in __import__("tensorflow").train.list_variables(str(run))
    }


def test_the_concept_map_covers_what_the_issue_asks():
    text = DOC.read_text(encoding="utf-8")
    for concept in (
        "model_fn", "input_fn", "save_checkpoints_steps", "keep_checkpoint_max", "log_step_count_steps",
        "save_summary_steps", "train_and_evaluate", "TrainSpec", "EvalSpec", "WarmStartSettings",
        "export_saved_model", "TF_CONFIG", "train_distribute=MirroredStrategy",
    ):
        assert concept in text, concept
