"""``${run_dir}`` and ``${config_dir}`` in a custom hook's ``args``, through the real CLI."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from tests.conftest import base_config

runner = CliRunner(env={"COLUMNS": "200"})

PATH_HOOK = """
import json

import tensorflow as tf


class PathHook(tf.compat.v1.train.SessionRunHook):
    def __init__(self, vocab, out, extra):
        self.vocab, self.out, self.extra = vocab, out, extra

    def end(self, session):
        with open(self.vocab, encoding="utf-8") as handle:
            words = handle.read().split()
        with open(self.out, "w", encoding="utf-8") as handle:
            json.dump({"words": words, "extra": self.extra, "out": self.out, "vocab": self.vocab}, handle)
"""


def write_yaml(path, config):
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_run_dir_and_config_dir_resolve_in_args(tmp_path, linear_csv, write_module, monkeypatch):
    module = write_module("path_hook", PATH_HOOK)
    (tmp_path / "vocab.txt").write_text("alpha beta\n", encoding="utf-8")
    hook = {
        "type": "custom",
        "class": f"{module}:PathHook",
        "args": {
            "vocab": "${config_dir}/vocab.txt",
            "out": "${run_dir}/seen.json",
            "extra": {"nested": ["${run_dir}", "cost $$5 and $${run_dir}", "$HOME stays", 3]},
        },
    }
    path = write_yaml(tmp_path / "c.yaml", base_config(hooks=[{"type": "stop_at_step", "last_step": 2}, hook]))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative paths would now resolve here: the placeholders must not
    result = runner.invoke(app, ["train", str(path), "--run-dir", "runs/r1"])
    assert result.exit_code == 0, result.output
    run_dir = (elsewhere / "runs" / "r1").resolve()
    seen = json.loads((run_dir / "seen.json").read_text(encoding="utf-8"))
    assert seen["words"] == ["alpha", "beta"]
    assert seen["vocab"] == f"{tmp_path.resolve()}/vocab.txt"
    assert seen["out"] == f"{run_dir}/seen.json"
    assert seen["extra"] == {"nested": [str(run_dir), "cost $5 and ${run_dir}", "$HOME stays", 3]}


def test_an_unknown_placeholder_is_a_located_config_error_before_tensorflow(tmp_path, linear_csv):
    hook = {
        "type": "custom",
        "class": "nowhere_module_xyz:Hook",
        "args": {"good": "${run_dir}/a", "bad": ["x", "${rundir}/b"], "open": "${config_dir"},
    }
    path = write_yaml(tmp_path / "c.yaml", base_config(hooks=[hook]))
    lines = path.read_text(encoding="utf-8").splitlines()
    bad_line = next(i for i, line in enumerate(lines, 1) if "${rundir}" in line)
    open_line = next(i for i, line in enumerate(lines, 1) if "${config_dir" in line and "}" not in line)
    for argv in (["validate", str(path)], ["train", str(path), "--run-dir", str(tmp_path / "run")]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 2, result.output
        errors = [line for line in result.stderr.splitlines() if ": error: " in line]
        assert any(
            line.startswith(f"{path}:{bad_line}:") and "hooks[0].args.bad[1]: unknown placeholder `${rundir}`" in line
            and "`${run_dir}`" in line
            for line in errors
        ), result.stderr
        assert any(
            line.startswith(f"{path}:{open_line}:") and "hooks[0].args.open: `${` without a closing `}`" in line
            for line in errors
        ), result.stderr
        assert "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_the_python_api_refuses_an_unknown_placeholder_at_the_args(make_config, run_train, write_module, tmp_path):
    """``train()`` runs no preflight: the hook's build refuses the placeholder, located at ``args``."""
    import pytest

    from hookrun.config_schemas.loader import ConfigError

    module = write_module("path_hook", PATH_HOOK)
    hook = {"type": "custom", "class": f"{module}:PathHook", "args": {"vocab": "${cwd}/v", "out": "o", "extra": 1}}
    with pytest.raises(ConfigError) as info:
        run_train(make_config(hooks=[hook]))
    (issue,) = info.value.issues
    assert issue.path == "hooks[0].args" and issue.line is not None
    assert "unknown placeholder `${cwd}`" in issue.message
    assert not (tmp_path / "run").exists()
