"""``hookrun inspect CONFIG`` and the unknown-tensor check, through the real CLI (typer's CliRunner, in-process)."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from tests.conftest import base_config

runner = CliRunner(env={"COLUMNS": "200"})


def write_yaml(path, config):
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def files_under(directory):
    return sorted(p.relative_to(directory) for p in directory.rglob("*"))


def test_inspect_json_lists_tensors_aliases_and_variables_and_writes_nothing(tmp_path, linear_csv):
    config = base_config(
        hooks=[{"type": "summary_saver", "save_steps": 1}, {"type": "checkpoint_saver", "save_steps": 5}],
        session={"run_dir": "runs/here"},
    )
    path = write_yaml(tmp_path / "c.yaml", config)
    before = files_under(tmp_path)
    result = runner.invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert files_under(tmp_path) == before  # no run directory, no event file, no checkpoint
    inventory = json.loads(result.stdout)
    tensors = {t["name"]: t for t in inventory["tensors"]}
    assert tensors["loss:0"]["dtype"] == "float32" and tensors["loss:0"]["shape"] == []
    assert tensors["linear/MatMul:0"]["op"] == "MatMul" and tensors["linear/MatMul:0"]["shape"] == [None, 1]
    # The variable's handle is listed with the tensor a fetch reads instead.
    assert tensors["global_step:0"]["dtype"] == "resource"
    assert tensors["global_step:0"]["reads"] == "global_step/Read/ReadVariableOp:0"
    assert tensors["global_step/Read/ReadVariableOp:0"]["dtype"] == "int64"
    assert not any(t["dtype"] == "variant" for t in inventory["tensors"])
    aliases = {a["alias"]: a for a in inventory["aliases"]}
    assert aliases["global_step"]["name"] == "global_step/Read/ReadVariableOp:0"
    assert aliases["loss"]["name"] == "loss:0"
    assert {"mse", "rmse", "mae", "predictions", "learning_rate"} <= set(aliases)
    trainable = {v["name"]: v for v in inventory["trainable_variables"]}
    assert set(trainable) == {"linear/kernel", "linear/bias"}
    assert trainable["linear/kernel"]["shape"] == [2, 1]
    assert trainable["linear/kernel"]["reads"] == "linear/kernel/Read/ReadVariableOp:0"
    assert {v["name"] for v in inventory["global_variables"]} == {"global_step", "linear/kernel", "linear/bias"}


def test_inspect_filter_glob_and_substring(tmp_path, linear_csv):
    path = write_yaml(tmp_path / "c.yaml", base_config())
    result = runner.invoke(app, ["inspect", str(path), "--json", "--filter", "linear/*"])
    assert result.exit_code == 0, result.output
    inventory = json.loads(result.stdout)
    assert inventory["tensors"] and all(t["name"].startswith("linear/") for t in inventory["tensors"])
    assert {v["name"] for v in inventory["global_variables"]} == {"linear/kernel", "linear/bias"}
    assert inventory["aliases"] == []
    result = runner.invoke(app, ["inspect", str(path), "--json", "-f", "GLOBAL_STEP"])
    inventory = json.loads(result.stdout)
    assert [a["alias"] for a in inventory["aliases"]] == ["global_step"]
    assert {t["name"] for t in inventory["tensors"]} >= {"global_step:0", "global_step/Read/ReadVariableOp:0"}
    assert all("global_step" in t["name"] for t in inventory["tensors"])


def test_inspect_prints_tables_with_set_and_run_dir(tmp_path, linear_csv):
    path = write_yaml(tmp_path / "c.yaml", base_config())
    run_dir = tmp_path / "elsewhere"
    result = runner.invoke(
        app,
        ["inspect", str(path), "--run-dir", str(run_dir), "--set", "graph.builder=dnn_regressor",
         "--set", "graph.params={hidden_units: [3]}"],
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    for text in ("Aliases", "Variables", "Tensors", "hidden_0/kernel", "[2, 3]", "global_step/Read/ReadVariableOp:0"):
        assert text in out
    assert not run_dir.exists()


def test_inspect_reports_a_bad_config_like_validate(tmp_path, linear_csv):
    path = write_yaml(tmp_path / "c.yaml", base_config(data={"label": "nope"}))
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2
    assert "nope" in result.stderr and "Traceback" not in result.output


def test_every_unknown_tensor_name_is_reported_at_once_with_did_you_mean_over_the_graph(tmp_path, linear_csv):
    config = base_config(
        hooks=[
            {"type": "logging_tensor", "tensors": ["loss", "linear/kernl"], "every_n_iter": 1},
            {"type": "summary_saver", "save_steps": 1, "tensors": ["rmse", "linear/MatMull:0"]},
            {"type": "history_saver", "loss_tensor": "los", "metrics": ["mae", "no_such_thing_at_all"]},
            {
                "type": "logging_tensor",
                "tensors": {"batch": "hookrun/input/IteratorGetNext", "step": "GradientDescent"},
            },
        ]
    )
    path = write_yaml(tmp_path / "c.yaml", config)
    for command in (["validate", "--build"], ["train", "--run-dir", str(tmp_path / "run")]):
        result = runner.invoke(app, [command[0], str(path), *command[1:]])
        assert result.exit_code == 2, result.output
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 6, result.stderr
        by_path = {line.split(": error: ")[1].split(":")[0]: line for line in lines}
        assert set(by_path) == {"hooks[0].tensors[1]", "hooks[1].tensors[1]", "hooks[2].loss_tensor",
                                "hooks[2].metrics[1]", "hooks[3].tensors.batch", "hooks[3].tensors.step"}
        assert ("op 'hookrun/input/IteratorGetNext' has 2 outputs; name one of them: "
                "`hookrun/input/IteratorGetNext:0`, `hookrun/input/IteratorGetNext:1`") in (
            by_path["hooks[3].tensors.batch"]
        )
        assert "op 'GradientDescent' (AssignAddVariableOp) makes no tensor" in by_path["hooks[3].tensors.step"]
        assert all(line.startswith(f"{path}:") for line in lines)
        # did-you-mean over the whole graph, not only the aliases
        assert "did you mean `linear/kernel`" in by_path["hooks[0].tensors[1]"]
        assert "`linear/MatMul:0`" in by_path["hooks[1].tensors[1]"]
        assert "did you mean `loss`" in by_path["hooks[2].loss_tensor"]
        assert "did you mean" not in by_path["hooks[2].metrics[1]"]
        assert "hookrun inspect" in by_path["hooks[2].metrics[1]"]
    assert not (tmp_path / "run").exists()
