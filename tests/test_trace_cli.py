"""``hookrun train --trace`` prints the cost table; ``hookrun validate`` prints the call order per phase."""

from __future__ import annotations

import json
import re

import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from tests.conftest import base_config

runner = CliRunner(env={"COLUMNS": "200"})

HOOKS = [{"type": "nan_tensor"}, {"type": "stop_at_step", "last_step": 3}]


def write_yaml(path, config):
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_train_trace_prints_the_cost_table_and_writes_the_trace(tmp_path, linear_csv):
    path = write_yaml(tmp_path / "c.yaml", base_config(hooks=HOOKS))
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["train", str(path), "--run-dir", str(run_dir), "--trace"])
    assert result.exit_code == 0, result.output
    assert "Hook cost (trace)" in result.stdout
    for text in ("nan_tensor", "stop_at_step", "before_run", "after_run", "loop %"):
        assert text in result.stdout
    # The caption names the file; rich folds a long path (a pytest-xdist worker's tmp_path) over lines.
    assert str(run_dir / "trace.jsonl") in "".join(result.stdout.split())
    lines = (run_dir / "trace.jsonl").read_text(encoding="utf-8").splitlines()
    assert sum(1 for line in lines if json.loads(line)["method"] == "before_run") == 2 * 3


def test_train_without_trace_prints_no_table_and_writes_no_trace(tmp_path, linear_csv):
    path = write_yaml(tmp_path / "c.yaml", base_config(hooks=HOOKS))
    result = runner.invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "Hook cost" not in result.stdout
    assert not (tmp_path / "run" / "trace.jsonl").exists()


def test_validate_prints_the_hook_plan_once_with_a_phase_legend_and_the_finishing_rules(tmp_path, linear_csv):
    hooks = [{"type": "progress_bar"}, {"type": "nan_tensor"}, {"type": "stop_at_step", "last_step": 3}]
    path = write_yaml(tmp_path / "c.yaml", base_config(hooks=hooks))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    # the plan is printed once (issue 13 item 15): each hook one row, in call order; the phases are a legend
    lines = result.stdout.splitlines()
    rows = [next(i for i, line in enumerate(lines) if re.match(rf"\s*{n}\s+{h}\s", line))
            for n, h in enumerate(("progress_bar", "nan_tensor", "stop_at_step"))]
    assert rows == sorted(rows), result.stdout
    for name in ("progress_bar", "nan_tensor", "stop_at_step"):
        assert len(re.findall(rf"(?<!\w){name}(?!\w)", result.stdout)) == 1, (name, result.stdout)
    assert "every phase below calls the hooks in this order" in result.stdout
    for phase in ("begin", "after_create_session", "before_run / after_run", "end"):
        assert any(line.strip().startswith(phase) for line in lines), (phase, result.stdout)
    assert "end of data (OutOfRangeError): end runs, that step's after_run does not" in result.stdout
    assert "neither that step's after_run nor end runs" in result.stdout
