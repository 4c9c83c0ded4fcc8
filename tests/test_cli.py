"""The ``hookrun`` CLI through typer's CliRunner (in-process), plus a subprocess check that it stays TensorFlow-free."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.hooks.registry import hook_configs
from tests.conftest import CONFIGS, NAN_BUILDER, base_config

runner = CliRunner(env={"COLUMNS": "200"})


def write_yaml(path, config):
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("config", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_validate_the_shipped_configs(config):
    result = runner.invoke(app, ["validate", str(config)])
    assert result.exit_code == 0, result.output
    assert "ok" in result.stdout


def test_validate_a_bad_config_exits_2_with_one_line(tmp_path, linear_csv):
    path = write_yaml(tmp_path / "bad.yaml", base_config(hooks=[{"type": "no_such_hook"}]))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "no_such_hook" in lines[0]
    assert lines[0].startswith(str(path))
    assert "Traceback" not in result.output


def test_validate_reports_a_missing_data_file(tmp_path):
    path = write_yaml(tmp_path / "c.yaml", base_config(data={"train": "missing.csv"}))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "missing.csv" in result.stderr and "not found" in result.stderr
    assert "Traceback" not in result.output


def test_list_hooks_lists_every_type():
    result = runner.invoke(app, ["list-hooks"])
    assert result.exit_code == 0, result.output
    kinds = list(hook_configs())
    assert kinds  # the registry's own count (tests/hooks/test_registry.py checks it against the hook folders)
    # each registered type heads a line of its own (the table's first column), none left out
    assert [kind for kind in kinds if re.search(rf"(?m)^\W*{kind}\b", result.stdout)] == kinds


def test_list_hooks_json_parses():
    result = runner.invoke(app, ["list-hooks", "--json"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)
    assert [e["type"] for e in entries] == list(hook_configs())
    by_type = {e["type"]: e for e in entries}
    assert {p["name"] for p in by_type["checkpoint_saver"]["params"]} >= {"save_steps", "save_secs", "max_to_keep"}
    assert all(e["summary"] and e["mirrors"] for e in entries)


def test_train_a_tiny_config_prints_the_history_table(tmp_path, linear_csv):
    last_step, every = 4, 2
    config = base_config(
        hooks=[{"type": "stop_at_step", "last_step": last_step}, {"type": "history_saver", "every_n_step": every}]
    )
    path = write_yaml(tmp_path / "c.yaml", config)
    result = runner.invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "History" in out
    assert "mean_loss" in out and "total_loss" in out
    table_steps = [line.split("│")[0].strip() for line in out.splitlines() if line.count("│") >= 2]
    assert table_steps == [str(s) for s in range(every, last_step + 1, every)]
    assert f"trained {last_step} steps" in out
    assert (tmp_path / "run" / "history.csv").exists()


def test_train_nan_exits_1(tmp_path, linear_csv, write_module):
    builder = write_module("nan_builder", NAN_BUILDER)
    config = base_config(
        graph={"builder": f"{builder}:build", "params": {"nan_from": 2}}, hooks=[{"type": "nan_tensor"}]
    )
    path = write_yaml(tmp_path / "c.yaml", config)
    result = runner.invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 1, result.output
    assert "NaN loss at step 3" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["validate", "--help"]])
def test_help_mentions_exit_codes(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "Exit codes" in text
    for code in ("0 success", "1 training failed", "2 invalid config"):
        assert code in text


def test_validate_list_hooks_and_imports_do_not_import_tensorflow(tmp_path):
    code = textwrap.dedent(
        f"""
        import contextlib, io, sys
        from hookrun.cli.app import app
        config = {str(CONFIGS / "mtcars_linear.yaml")!r}
        with contextlib.redirect_stdout(io.StringIO()):
            for args in (["validate", config], ["list-hooks"], ["list-hooks", "--json"]):
                code = app(args, standalone_mode=False)
                assert code in (None, 0), (args, code)
        import hookrun.runner
        import hookrun.runner.preflight
        import hookrun.hooks.registry
        loaded = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
        print("TF MODULES:", loaded)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "TF MODULES: []" in done.stdout, done.stdout
