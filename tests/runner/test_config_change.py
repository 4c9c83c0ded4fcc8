"""Tests of resuming with a changed config: shape changes refused with a diff, others noted."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookrun.common.errors import SetupError
from hookrun.runner.config import load_config
from hookrun.runner.run_dir.config_change import compare_configs
from hookrun.runner.run_dir.saved_config import self_contained_yaml

SAVED = """
name: a
graph: {builder: dnn_regressor, params: {hidden_units: [8]}}
data: {train: d.csv, label: y, features: [a, b], epochs: 1, batch_size: 8}
hooks: [{type: progress_bar}]
"""


def test_equal_configs_have_no_change() -> None:
    change = compare_configs(SAVED, SAVED)
    assert change.shape_diff == "" and change.other_keys == []


def test_graph_change_gives_a_diff_naming_old_and_new() -> None:
    change = compare_configs(SAVED, SAVED.replace("hidden_units: [8]", "hidden_units: [16]"))
    assert "hidden_units:" in change.shape_diff
    assert "\n-    - 8\n" in change.shape_diff and "\n+    - 16\n" in change.shape_diff
    assert change.other_keys == []


def test_warm_start_is_no_shape_change() -> None:
    """A resume ignores graph.warm_start: adding, changing or removing it is only noted."""
    warm = SAVED.replace("params: {hidden_units: [8]}", "params: {hidden_units: [8]}, warm_start: {from: /r/x}")
    for saved, new in ((SAVED, warm), (warm, SAVED), (warm, warm.replace("/r/x", "/r/y"))):
        change = compare_configs(saved, new)
        assert change.shape_diff == "" and change.other_keys == ["graph.warm_start"], (saved, new)
    assert compare_configs(warm, warm).other_keys == []


def test_feature_change_is_a_shape_change() -> None:
    change = compare_configs(SAVED, SAVED.replace("features: [a, b]", "features: [a]"))
    assert "data.features:" in change.shape_diff and "\n-- b" in change.shape_diff


def test_hooks_and_epochs_are_other_changes() -> None:
    new = SAVED.replace("epochs: 1", "epochs: 3").replace("progress_bar", "history_saver")
    change = compare_configs(SAVED, new)
    assert change.shape_diff == ""
    assert change.other_keys == ["data.epochs", "hooks"]


def test_resume_with_a_changed_graph_is_refused_then_allowed(make_config, run_train, tmp_path: Path) -> None:
    from hookrun.runner.trainer import train

    loaded = make_config(hooks=[{"type": "checkpoint_saver", "save_steps": 1000}], data={"epochs": 1})
    first = run_train(loaded)
    assert first.final_global_step > 0 and (tmp_path / "run" / "config.yaml").exists()
    saved = (tmp_path / "run" / "config.yaml").read_text()

    changed_path = tmp_path / "changed.yaml"
    changed_path.write_text(loaded.path.read_text().replace("0.05", "0.01"))
    changed = load_config(changed_path)
    with pytest.raises(SetupError, match="changes the graph or data shape") as info:
        train(changed, run_dir=tmp_path / "run")
    assert "-    learning_rate: 0.05" in str(info.value) and "+    learning_rate: 0.01" in str(info.value)
    assert (tmp_path / "run" / "config.yaml").read_text() == saved  # nothing overwritten

    resumed = train(changed, run_dir=tmp_path / "run", allow_config_change=True)
    assert any("--allow-config-change" in note for note in resumed.notes)
    assert (tmp_path / "run" / "config.yaml").read_text() == self_contained_yaml(changed)  # paths made absolute


def test_a_config_yaml_from_before_the_gpu_switches_resumes_without_a_change_note() -> None:
    from hookrun.config_schemas.session import SessionConfig
    from hookrun.runner.run_dir.config_change import GPU_SWITCH_DEFAULTS

    assert GPU_SWITCH_DEFAULTS == {key: SessionConfig.model_fields[key].default for key in GPU_SWITCH_DEFAULTS}
    old = "session:\n  engine: hookrun\n  steps_per_run: 1\n"
    new = old + "".join(f"  {key}: {str(value).lower()}\n" for key, value in GPU_SWITCH_DEFAULTS.items())
    assert compare_configs(old, new).other_keys == []
    assert compare_configs(old, new.replace("mixed_precision: false", "mixed_precision: true")).other_keys == [
        "session"
    ]
