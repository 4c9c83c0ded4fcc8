"""Tests of the Python API: ``hookrun.runner.trainer`` with a path or a loaded config."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from hookrun.config_schemas.loader import ConfigError
from hookrun.runner import train


def test_train_accepts_a_config_path(make_config, tmp_path: Path) -> None:
    loaded = make_config(hooks=[{"type": "history_saver", "every_n_step": 2}], data={"epochs": 1})
    console = Console(file=io.StringIO())
    result = train(str(loaded.path), run_dir=tmp_path / "run", console=console)
    rows = loaded.config.data  # batch size and rows come from the config and the CSV
    n_rows = sum(1 for _ in (loaded.base_dir / rows.train).open()) - 1
    expected_steps = -(-n_rows // rows.batch_size)
    assert result.final_global_step == expected_steps
    assert [r["step"] for r in result.history][-1] == expected_steps
    assert result.checkpoint_path is None  # no checkpoint_saver hook: nothing hidden was added


def test_train_path_with_bad_data_raises_config_error_and_writes_nothing(tmp_path: Path) -> None:
    config = {
        "name": "bad",
        "graph": {"builder": "linear_regressor"},
        "data": {"train": "missing.csv", "label": "y"},
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        train(path, run_dir=tmp_path / "run")
    assert "bad.yaml:" in str(info.value) and "missing.csv" in str(info.value)
    assert not (tmp_path / "run").exists()


def test_api_function_is_not_shadowed_by_the_module() -> None:
    import hookrun.runner
    import hookrun.runner.trainer  # noqa: F401 - importing the submodule must not replace the function

    assert callable(hookrun.runner.train)
    assert hookrun.runner.train.__module__ == "hookrun.runner"
