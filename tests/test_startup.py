"""Startup stays light: each quick command, in a fresh interpreter, imports only what it needs.

No timing here (the machines are noisy): the checks are on ``sys.modules`` after the command ran
through the console-script entry point, ``hookrun.cli.app:main``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import CONFIGS, REPO

CONFIG = str(CONFIGS / "mtcars_linear.yaml")


def modules_after(args: list[str]) -> list[str]:
    """Run ``hookrun ARGS`` in a fresh interpreter; return the names in ``sys.modules`` afterwards."""
    code = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        sys.argv = ["hookrun", *{args!r}]
        from hookrun.cli.app import main
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exit_:
                code = exit_.code
            else:
                code = 0
        assert code in (None, 0), (code, out.getvalue(), err.getvalue())
        print(json.dumps(sorted(sys.modules)))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def tensorflow_modules(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "tensorflow" or m.startswith("tensorflow.")]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["inspect", "--help"],
        ["predict", "--help"],
        ["export", "--help"],
        ["evaluate", "--help"],
        ["runs", "--help"],
        ["train", "--help"],
        ["list-hooks"],
        ["list-hooks", "--json"],
        ["--version"],  # package metadata and build_info.py, read as files
        ["validate", CONFIG],
        # Its hooks module imports TensorFlow: validate finds it without running it.
        ["validate", str(CONFIGS / "mtcars_custom_hooks.yaml")],
    ],
    ids=" ".join,
)
def test_quick_commands_do_not_import_tensorflow(args: list[str]) -> None:
    assert tensorflow_modules(modules_after(args)) == []


def test_runs_reads_run_directories_without_tensorflow(tmp_path) -> None:
    run = tmp_path / "runs" / "x"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("name: x\nhooks: [{type: history_saver, filename: h.csv}]\n")
    (run / "summary.json").write_text(json.dumps({"status": "finished", "final_global_step": 4}))
    (run / "h.csv").write_text("step,mean_loss,total_loss,val_loss\n4,1.0,4.0,0.5\n")
    (run / "model.ckpt-4.index").write_bytes(b"")
    modules = modules_after(["runs", str(tmp_path / "runs"), "--sort", "val_loss"])
    assert "hookrun.runner.trained.runs" in modules
    assert tensorflow_modules(modules) == []


def test_help_imports_no_config_models_and_no_numpy() -> None:
    modules = modules_after(["--help"])
    assert [m for m in modules if m.startswith("hookrun.config_schemas")] == []
    assert "numpy" not in modules


def test_list_hooks_imports_only_the_hook_models() -> None:
    modules = modules_after(["list-hooks"])
    assert "hookrun.hooks.registry" in modules
    for name in ("hookrun.config_schemas.run_config", "hookrun.config_schemas.loader", "numpy"):
        assert name not in modules, name


def test_validate_of_a_good_config_skips_the_error_locating_code() -> None:
    modules = modules_after(["validate", CONFIG])
    assert "hookrun.config_schemas.loader" in modules
    assert "hookrun.config_schemas.model_paths" not in modules


def test_config_schemas_exports_resolve_lazily() -> None:
    code = textwrap.dedent(
        """
        import sys
        import hookrun.config_schemas as cs
        assert "hookrun.config_schemas.run_config" not in sys.modules
        from hookrun.config_schemas import *  # noqa: F403
        for name in cs.__all__:
            assert getattr(cs, name) is not None, name
        from hookrun.config_schemas.run_config import RunConfigBase
        assert cs.RunConfigBase is RunConfigBase and cs.graph.GraphConfig is cs.GraphConfig
        assert set(cs.__all__) <= set(dir(cs))
        assert not hasattr(cs, "no_such_name")
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
