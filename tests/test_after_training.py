"""The model after training: the run directory's config.yaml re-runs the run (issue 15)."""

from __future__ import annotations

import shutil

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
