"""Modules named in a config: found without running them (``validate``), import errors located (``--build``, ``train``).

Through the real CLI. The corpus in ``tests/bad_configs/`` covers the missing-module messages and
checks that ``validate`` stays TensorFlow-free; these tests cover what runs and what does not.
"""

from __future__ import annotations

import sys

import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.config_schemas.imports import find_module
from tests.conftest import base_config

runner = CliRunner(env={"COLUMNS": "200"})

#: A module that leaves a marker file when it runs (``MARKER`` is replaced by a path).
MARKING = """
from pathlib import Path

Path(MARKER).write_text("ran", encoding="utf-8")
"""


def write_yaml(path, config):
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def line_of(path, text):
    return next(i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line)


def test_validate_finds_modules_and_packages_without_running_them(tmp_path, linear_csv, write_module):
    marker = tmp_path / "ran.txt"
    module = write_module("marking_hooks", MARKING.replace("MARKER", repr(str(tmp_path / "module_ran.txt"))))
    package = tmp_path / f"pkg_{module}"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text(MARKING.replace("MARKER", repr(str(marker))), encoding="utf-8")
    (package / "sub" / "__init__.py").write_text(MARKING.replace("MARKER", repr(str(marker))), encoding="utf-8")
    (package / "sub" / "hooks.py").write_text(MARKING.replace("MARKER", repr(str(marker))), encoding="utf-8")
    config = base_config(
        hooks=[
            {"type": "custom", "class": f"{module}:Anything"},
            {"type": "custom", "class": f"{package.name}.sub.hooks:Hook"},
            {"type": "custom", "after_run": f"{package.name}.sub:after_run"},
        ],
        graph={"builder": f"{package.name}.sub.hooks:build"},
    )
    path = write_yaml(tmp_path / "c.yaml", config)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert not marker.exists() and not (tmp_path / "module_ran.txt").exists()


def test_validate_suggests_a_module_beside_the_config(tmp_path, linear_csv, write_module):
    module = write_module("tokens_hooks", "X = 1\n")
    misspelled = module.replace("tokens_hooks", "token_hooks")
    path = write_yaml(tmp_path / "c.yaml", base_config(hooks=[{"type": "custom", "class": f"{misspelled}:Hook"}]))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    line = line_of(path, misspelled)
    assert lines[0].startswith(f"{path}:{line}:")
    assert f"hooks[0].class: '{misspelled}:Hook': cannot find module '{misspelled}'" in lines[0]
    assert f"did you mean `{module}`?" in lines[0]


def test_a_missing_submodule_of_a_package_that_extends_its_path_is_not_refused(tmp_path, linear_csv):
    """A package may add to ``__path__`` when it runs: then the static search is confirmed by importing it."""
    extra = tmp_path / "elsewhere"
    extra.mkdir()
    (extra / "late.py").write_text("def after_run(run_context, run_values):\n    pass\n", encoding="utf-8")
    package = tmp_path / "growing_pkg_c4b1"
    package.mkdir()
    (package / "__init__.py").write_text(f"__path__.append({str(extra)!r})\n", encoding="utf-8")
    try:
        assert find_module("growing_pkg_c4b1.late", tmp_path) is None
        assert "cannot find module 'growing_pkg_c4b1.nope'" in find_module("growing_pkg_c4b1.nope", tmp_path)
    finally:
        sys.modules.pop("growing_pkg_c4b1", None)


def test_import_and_builder_errors_at_build_carry_file_line_column(tmp_path, linear_csv, write_module):
    broken = write_module("broken_hooks", "raise RuntimeError('broken at import')\n")
    fine = write_module("fine_builders", "def build(features, labels, params):\n    return None\n")
    hooks = write_module("some_hooks", "class Hook:\n    pass\n")
    raising = write_module(
        "raising_builders", "def build(features, labels, params):\n    raise ValueError('bad params')\n"
    )
    cases = {
        "class": (
            base_config(hooks=[{"type": "custom", "class": f"{broken}:Hook"}]),
            broken,
            f"hooks[0].class: cannot import module '{broken}' (RuntimeError: broken at import)",
        ),
        "builder": (
            base_config(graph={"builder": f"{fine}:bulid"}),
            fine,
            f"graph.builder: module '{fine}' has no attribute 'bulid'; did you mean `build`?",
        ),
        "builder raises": (
            base_config(graph={"builder": f"{raising}:build"}),
            raising,
            f"graph.builder: {raising}:build failed (train mode): ValueError: bad params",
        ),
        "function": (
            base_config(hooks=[{"type": "custom", "before_run": f"{hooks}:before_run"}]),
            hooks,
            f"hooks[0].before_run: module '{hooks}' has no attribute 'before_run'",
        ),
    }
    for name, (config, needle, message) in cases.items():
        path = write_yaml(tmp_path / f"{name}.yaml", config)
        assert runner.invoke(app, ["validate", str(path)]).exit_code == 0  # found, not run
        line = line_of(path, needle)
        for argv in (["validate", str(path), "--build"], ["train", str(path), "--run-dir", str(tmp_path / "run")]):
            result = runner.invoke(app, argv)
            assert result.exit_code == 2, (name, result.output)
            lines = [text for text in result.stderr.splitlines() if text.strip()]
            assert len(lines) == 1, (name, result.stderr)
            assert lines[0].startswith(f"{path}:{line}:"), (name, lines[0])
            assert message in lines[0], (name, lines[0])
        assert not (tmp_path / "run").exists()


def test_find_module_reports_without_importing(tmp_path):
    marker = tmp_path / "ran.txt"
    (tmp_path / "plain_mod_9f2e.py").write_text(MARKING.replace("MARKER", repr(str(marker))), encoding="utf-8")
    assert find_module("plain_mod_9f2e", tmp_path) is None
    assert not marker.exists()  # found: not run
    assert "plain_mod_9f2e" not in sys.modules
    try:  # a miss below it is confirmed by importing it (so it runs, for a config about to be refused)
        assert "'plain_mod_9f2e' is a module, not a package" in find_module("plain_mod_9f2e.sub", tmp_path)
    finally:
        sys.modules.pop("plain_mod_9f2e", None)
