"""The model after training: the run directory's config.yaml re-runs the run (issue 15)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.runner.config import load_config
from tests.conftest import base_config, linear_rows, write_csv

cli = CliRunner(env={"COLUMNS": "200"})

HOOKS = [
    {"type": "stop_at_step", "num_steps": 6},
    {"type": "checkpoint_saver", "save_steps": 3},
    {"type": "evaluation", "every_n_steps": 3, "log": False},
]


def _project(tmp_path):
    """A config in ``tmp_path/project`` reading ``data/train.csv`` and ``data/val.csv`` relative to it."""
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    write_csv(project / "data" / "train.csv", linear_rows(48, seed=1))
    write_csv(project / "data" / "val.csv", linear_rows(16, seed=2))
    config = base_config(hooks=HOOKS, data={"train": "data/train.csv", "validation": "data/val.csv"})
    path = project / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_saved_config_validates_and_resumes_from_the_run_directory(tmp_path, monkeypatch, run_train, captured):
    config = _project(tmp_path)
    first = run_train(load_config(config), run_dir=tmp_path / "runs" / "x")
    assert first.final_global_step == 6
    moved = tmp_path / "elsewhere" / "x"  # a moved run directory still names itself
    moved.parent.mkdir()
    shutil.move(tmp_path / "runs" / "x", moved)
    monkeypatch.chdir(tmp_path / "elsewhere")  # neither the config's nor the run's directory

    result = cli.invoke(app, ["validate", "x/config.yaml"])
    assert result.exit_code == 0, result.output

    saved = load_config(moved / "config.yaml")
    assert saved.config.session.run_dir == "."
    assert saved.config.data.train == str(config.parent / "data/train.csv")
    from hookrun.runner.trainer import train

    resumed = train(saved, console=captured.console)  # session.run_dir "." -> the run directory itself
    assert resumed.run_dir == moved.resolve()
    assert (resumed.initial_step, resumed.final_global_step) == (6, 12)
    assert not [note for note in resumed.notes if "changed" in note], resumed.notes


def test_original_config_resumes_a_run_without_a_change_note(tmp_path, run_train):
    config = _project(tmp_path)
    run_train(load_config(config), run_dir=tmp_path / "run")
    again = run_train(load_config(config), run_dir=tmp_path / "run")
    assert again.initial_step == 6
    assert not [note for note in again.notes if "changed" in note], again.notes


# --- hookrun evaluate ---------------------------------------------------------------------------------------

EVAL_HOOKS = [
    {"type": "stop_at_step", "num_steps": 6},
    {"type": "checkpoint_saver", "save_steps": 6},
    {"type": "evaluation", "every_n_steps": 6, "log": False},
]


def _classes_csv(path, rows=48, seed=0):
    """``a, b, kind, y``: a text feature and a text label (``lo``/``hi``), one empty ``a`` cell."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = ["a,b,kind,y"]
    for i in range(rows):
        a, b = rng.normal(size=2)
        kind = ["red", "green", "blue"][i % 3]
        lines.append(f"{'' if i == 5 else f'{a:.5f}'},{b:.5f},{kind},{'hi' if a + b > 0 else 'lo'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(params=["dnn_regressor-validation_file", "dnn_classifier-validation_split"])
def trained_run(request, tmp_path, captured):
    """A run trained 6 steps with dropout, its checkpoint at 6 and the evaluation hook's values at 6."""
    from hookrun.runner.trainer import train

    if request.param.startswith("dnn_regressor"):
        write_csv(tmp_path / "train.csv", linear_rows(48, seed=1))
        write_csv(tmp_path / "val.csv", linear_rows(20, seed=2))
        graph = {"builder": "dnn_regressor", "params": {"hidden_units": [8], "dropout": 0.5}}
        data = {"train": "train.csv", "validation": "val.csv"}
    else:
        _classes_csv(tmp_path / "train.csv")
        graph = {"builder": "dnn_classifier", "params": {"hidden_units": [8], "dropout": 0.5}}
        data = {"train": "train.csv", "validation_split": 0.3, "missing": "mean"}
    config = base_config(hooks=EVAL_HOOKS, graph=graph, data=data)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = train(load_config(path), run_dir=tmp_path / "run", console=captured.console)
    assert result.final_global_step == 6 and result.evaluations[-1]["step"] == 6
    return tmp_path / "run", result.evaluations[-1]


def _close(a, b):
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-12)


def test_evaluate_equals_the_evaluation_hooks_last_values(trained_run):
    from hookrun.runner import evaluate

    run_dir, hook = trained_run
    result = evaluate(run_dir)
    assert result.global_step == 6
    expected = {k: v for k, v in hook.items() if k != "step"}
    assert set(result.metrics) == set(expected) and len(expected) >= 2
    for name, value in expected.items():
        assert _close(result.metrics[name], value), (name, result.metrics[name], value)
    saved = json.loads((run_dir / "eval-6.json").read_text())
    assert saved["metrics"] == result.metrics and saved["global_step"] == 6


def test_evaluate_cli_on_files_prints_json(trained_run, tmp_path, monkeypatch):
    run_dir, hook = trained_run
    monkeypatch.chdir(tmp_path)
    data = "val.csv" if (tmp_path / "val.csv").exists() else "train.csv"
    result = cli.invoke(app, ["evaluate", str(run_dir), "--data", data, "--checkpoint", "latest", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["data"] == [str(tmp_path / data)] and shown["global_step"] == 6
    if data == "val.csv":  # the same rows the hook evaluated
        for name, value in shown["metrics"].items():
            assert _close(value, hook[name]), name
    again = cli.invoke(app, ["evaluate", str(run_dir), "--checkpoint", str(run_dir / "model.ckpt-6")])
    assert again.exit_code == 0, again.output
    assert "val_loss" in again.stdout and "eval-6.json" in again.stdout


def _eval_files(run_dir):
    return sorted(p.name for p in run_dir.glob("eval-*.json"))


def test_evaluate_bad_input_exits_2_and_writes_nothing(trained_run, tmp_path, monkeypatch):
    run_dir, _ = trained_run
    monkeypatch.chdir(tmp_path)
    header = (tmp_path / "train.csv").read_text().splitlines()[0].split(",")
    missing = tmp_path / "no_b.csv"
    kept = [c for c in header if c != "b"]
    missing.write_text(",".join(kept) + "\n" + ",".join("1" for _ in kept) + "\n")
    empty_run = tmp_path / "empty_run"
    empty_run.mkdir()
    for name in ("config.yaml", "preprocessing.json"):
        (empty_run / name).write_bytes((run_dir / name).read_bytes())
    damaged = tmp_path / "damaged_run"
    shutil.copytree(run_dir, damaged)
    for data_file in damaged.glob("model.ckpt-*.data-*"):
        data_file.write_bytes(data_file.read_bytes()[:50])
    other = _other_shape_checkpoint(tmp_path / "other")
    cases = [
        ([str(run_dir), "--checkpoint", str(run_dir / "model.ckpt-99")], "no such checkpoint"),
        ([str(run_dir), "--checkpoint", other], "[1, 1] there"),
        ([str(damaged)], "can be read"),
        ([str(run_dir), "--checkpoint", "best"], "no checkpoint"),
        ([str(run_dir), "--data", str(missing)], "no_b.csv"),
        ([str(empty_run)], "no checkpoint"),
        ([str(tmp_path / "nowhere")], "no such run directory"),
    ]
    if not (tmp_path / "val.csv").exists():  # the classifier: a class it never learnt
        odd = tmp_path / "odd.csv"
        odd.write_text((tmp_path / "train.csv").read_text().replace(",hi\n", ",mid\n", 1))
        cases.append(([str(run_dir), "--data", str(odd)], "class 'mid'"))
    for args, words in cases:
        result = cli.invoke(app, ["evaluate", *args])
        assert result.exit_code == 2, (args, result.output)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and words in lines[0], (args, result.stderr)
        assert "Traceback" not in result.output
    assert _eval_files(run_dir) == [] and _eval_files(empty_run) == [] and _eval_files(damaged) == []


def _other_shape_checkpoint(directory):
    """A checkpoint whose ``hidden_0/kernel`` is ``[1, 1]`` (the runs' is ``[F, 8]``): restoring it must be refused."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        v1.get_variable("hidden_0/kernel", [1, 1])
        v1.train.get_or_create_global_step()
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            return v1.train.Saver().save(session, str(directory / "model.ckpt"), global_step=6)


def test_a_run_directory_from_before_resumes_with_its_relative_validation_path(tmp_path, run_train):
    """preprocessing.json recorded ``data.validation`` as written in the config; now it is absolute."""
    config = _project(tmp_path)
    run_train(load_config(config), run_dir=tmp_path / "run")
    state_path = tmp_path / "run" / "preprocessing.json"
    state = json.loads(state_path.read_text())
    assert state["split"]["validation"] == str(config.parent / "data/val.csv")
    state["split"]["validation"] = "data/val.csv"  # as an older hookrun wrote it
    state_path.write_text(json.dumps(state))
    again = run_train(load_config(config), run_dir=tmp_path / "run")
    assert again.initial_step == 6 and again.final_global_step == 12
