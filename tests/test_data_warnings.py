"""Infinite values in the data: one ``warning:`` line naming the file, line and column; no numpy noise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, linear_rows


@pytest.mark.parametrize("command", ["validate", "train"])
def test_an_infinite_cell_is_one_data_warning_naming_the_column(tmp_path: Path, command: str) -> None:
    rows = linear_rows(32)
    lines = ["a,b,y"] + [",".join(f"{v:.6f}" for v in row) for row in rows]
    lines[5] = lines[5].split(",")[0] + ",inf," + lines[5].split(",")[2]  # line 6 of the file
    lines[9] = lines[9].split(",")[0] + ",-inf," + lines[9].split(",")[2]
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = {"name": "inf", "graph": {"builder": "linear_regressor"},
              "data": {"train": "data.csv", "label": "y", "batch_size": 8, "epochs": 1}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    args = [command, str(tmp_path / "c.yaml")] + (["--run-dir", str(tmp_path / "run")] if command == "train" else [])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    done = subprocess.run([sys.executable, "-m", "hookrun.cli.app", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning" not in done.stderr and "numpy" not in done.stderr, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {tmp_path / 'data.csv'}:6: column 'b' holds 2 infinite value(s) in the training rows, the first "
        "on this line; its statistics and the loss will not be finite: replace or remove them"
    ], done.stderr
