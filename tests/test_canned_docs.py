"""docs/migrating-from-estimator.md's premade section: its YAML-only config and its Python module train as written."""

from __future__ import annotations

import re

from hookrun.runner.config import load_config
from tests.conftest import REPO
from tests.test_migrating_from_estimator import _census_csv

DOC = REPO / "docs" / "migrating-from-estimator.md"


def _blocks(heading: str, language: str) -> list[str]:
    section = DOC.read_text(encoding="utf-8").split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_the_yaml_only_premade_config_trains_and_evaluates(tmp_path, run_train):
    (config,) = _blocks("### From YAML, without Python", "yaml")
    (tmp_path / "census_premade.yaml").write_text(config, encoding="utf-8")
    (tmp_path / "adult.csv").write_text(_census_csv(), encoding="utf-8")
    result = run_train(load_config(tmp_path / "census_premade.yaml", ["data.epochs=1"]))
    last = result.evaluations[-1]
    assert {"val_accuracy", "val_auc", "val_auc_precision_recall", "val_average_loss", "val_accuracy_baseline"} <= set(
        last
    )
    assert 0.0 <= last["val_accuracy"] <= 1.0


def test_the_python_premade_model_fn_trains_on_the_input_fn(tmp_path, run_train):
    (module,) = _blocks("### From Python: ", "python")
    (config,) = _blocks("### From Python: ", "yaml")
    (tmp_path / "premade_model.py").write_text(module, encoding="utf-8")
    (tmp_path / "premade.yaml").write_text(config, encoding="utf-8")
    (tmp_path / "adult.csv").write_text(_census_csv(), encoding="utf-8")
    result = run_train(load_config(tmp_path / "premade.yaml"))
    assert result.end_of_data and result.final_global_step == 25  # 2 epochs of 400 rows in batches of 32
