"""Issue 24: "A mismatch with what the model_fn indexes is an error naming the key" in ``validate --build`` and
``hookrun inspect``, before any training (``train`` is tested in tests/test_input_fn.py)."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from tests.conftest import REPO


@pytest.mark.parametrize("command", [["validate", "config.yaml", "--build"], ["inspect", "config.yaml"]])
def test_validate_build_and_inspect_name_the_feature_the_model_fn_reads_and_the_input_fn_lacks(
    command, tmp_path, write_module, monkeypatch
):
    module = write_module("input_fn_program", (REPO / "tests" / "input_fn_program.py").read_text())
    config = {
        "name": "mismatch",
        "graph": {"builder": f"{module}:model_fn", "params": {"rows": 64, "batch": 16, "epochs": 5,
                                                               "learning_rate": 0.5}},
        "data": {"input_fn": f"{module}:renamed_input_fn", "seed": 0},  # gives 'xs' where model_fn reads 'x'
        "hooks": [{"type": "stop_at_step", "last_step": 2}],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    done = CliRunner(env={"COLUMNS": "200"}).invoke(app, command)
    output = done.output.strip()
    assert done.exit_code == 2, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if "error:" in line]
    assert len(errors) == 1, output
    assert errors[0].startswith("config.yaml:")  # at data.input_fn's line
    assert f"input_fn {module}:renamed_input_fn gives the features city, xs" in errors[0]
    assert f"graph.builder {module}:model_fn reads features['x']" in errors[0]
    assert not (tmp_path / "runs").exists()  # nothing written
