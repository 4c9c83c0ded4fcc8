"""The installed ``hookrun`` console script on the shipped mtcars config: train, then resume.

The first run is the console script in a process of its own (what a user types); the resume runs the same CLI
in-process (typer's CliRunner): what it checks is the run directory, not the process, and a second fresh
process would only import TensorFlow again."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.hooks.history_saver.hook import read_history
from tests.conftest import CONFIGS

CONFIG = CONFIGS / "mtcars_linear.yaml"


def hookrun_script() -> str:
    script = Path(sys.executable).parent / "hookrun"
    return str(script) if script.exists() else (shutil.which("hookrun") or pytest.fail("no hookrun script"))


def run_hookrun(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "COLUMNS": "200"}
    return subprocess.run([hookrun_script(), *args], capture_output=True, text=True, timeout=300, env=env)


def config_facts():
    """What the config and its CSV imply: the last global step and the history window."""
    config = yaml.safe_load(CONFIG.read_text())
    rows = len((CONFIG.parent / config["data"]["train"]).read_text().strip().splitlines()) - 1
    data = config["data"]
    every = next(h["every_n_step"] for h in config["hooks"] if h["type"] == "history_saver")
    return rows, data["batch_size"], data["epochs"], every


def test_train_then_resume(tmp_path):
    rows, batch_size, epochs, every = config_facts()
    last_step = math.ceil(rows * epochs / batch_size)
    run_dir = tmp_path / "run"

    done = run_hookrun("train", str(CONFIG), "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert "History" in done.stdout

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["initial_step"] == 0 and summary["final_global_step"] == last_step
    assert summary["end_of_data"] is True
    assert summary["steps_per_sec"] == pytest.approx(summary["steps"] / summary["loop_seconds"], rel=1e-3)
    assert summary["end_seconds"] > 0  # the final checkpoint is written after the loop, outside loop_seconds
    assert (run_dir / "config.yaml").exists()
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["name"] == yaml.safe_load(CONFIG.read_text())["name"]
    checkpoint = tf.train.latest_checkpoint(str(run_dir))
    assert checkpoint is not None and checkpoint.endswith(f"-{last_step}")

    history = read_history(run_dir / "history.csv")
    steps = [row["step"] for row in history]
    assert steps == list(range(every, last_step + 1, every))
    assert history[0]["mean_loss"] > history[-1]["mean_loss"]

    more_epochs = epochs + 10
    resumed_last = math.ceil(rows * more_epochs / batch_size)
    done = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["train", str(CONFIG), "--run-dir", str(run_dir), "--set", f"data.epochs={more_epochs}"]
    )
    assert done.exit_code == 0, done.output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["initial_step"], summary["final_global_step"]) == (last_step, resumed_last)
    assert summary["steps"] == resumed_last - last_step
    assert tf.train.latest_checkpoint(str(run_dir)).endswith(f"-{resumed_last}")
    steps = [row["step"] for row in read_history(run_dir / "history.csv")]
    assert len(steps) == len(set(steps))
    assert steps == sorted(steps)
    assert steps == list(range(every, resumed_last + 1, every))
