"""Every broken config in tests/bad_configs/ fails through the real CLI with a located, one-line message.

Each ``tests/bad_configs/*.yaml`` starts with one header line::

    # expect: exit=<code> [line=<N>] [args=<extra CLI args>] "<fragment>" ["<fragment>" ...]

parsed with :func:`shlex.split` (so a fragment is a double-quoted string;
``\\\\`` inside it is one backslash):

- ``exit``: the exit code of ``hookrun validate FILE [args]`` (2: invalid
  config or data; 0: accepted, e.g. with warnings);
- ``line``: the 1-based line the message points at; the output must contain
  ``:<N>:`` (``file:line:column:``). Required when ``exit`` is 2;
- ``args``: extra arguments after the file, e.g. ``args=--build``
  (comma-separated for several);
- fragments: each must appear in the output (stdout + stderr).

Bad CSV files used by the data cases live in ``tests/bad_configs/data/``.

All files run through ``hookrun.cli.app`` in ONE Python subprocess (a small
driver that calls the typer app with ``standalone_mode=False`` for each file
and reports exit codes and output as JSON), which keeps the suite fast; a few
files also run as ``python -m hookrun.cli.app`` in their own subprocess.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

BAD_DIR = Path(__file__).parent / "bad_configs"
BAD_FILES = sorted(BAD_DIR.glob("*.yaml"))
RESULTS_MARK = "@@hookrun-results@@"

DRIVER = r"""
import contextlib, io, json, sys, traceback

import typer
from hookrun.cli.app import app

results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = app(args=argv, prog_name="hookrun", standalone_mode=False)
            code = 0 if code is None else code
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except typer.Exit as exc:
            code = exc.exit_code
        except Exception as exc:
            if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
                exc.show()  # a usage error (typer's vendored click.ClickException)
                code = exc.exit_code
            else:
                traceback.print_exc()
                code = "crashed"
    results.append(
        {"argv": argv, "code": code, "out": out.getvalue() + err.getvalue(),
         "tf_loaded": "tensorflow" in sys.modules}
    )
print(RESULTS_MARK + json.dumps(results))
""".replace("RESULTS_MARK", repr(RESULTS_MARK))


@dataclass
class Expectation:
    """The parsed ``# expect:`` header of one bad config."""

    exit: int
    line: int | None
    fragments: list[str]
    args: list[str] = field(default_factory=list)


def parse_expectation(path: Path) -> Expectation:
    """Parse the first line of ``path``; fail the test with the format when it is malformed."""
    first = path.read_text(encoding="utf-8").splitlines()[0] if path.stat().st_size else ""
    prefix = "# expect:"
    assert first.startswith(prefix), f"{path.name}: line 1 must be `# expect: exit=N [line=N] \"fragment\" ...`"
    exit_code: int | None = None
    line: int | None = None
    args: list[str] = []
    fragments: list[str] = []
    for token in shlex.split(first[len(prefix) :]):
        key, sep, value = token.partition("=")
        if sep and key == "exit" and value.isdigit():
            exit_code = int(value)
        elif sep and key == "line" and value.isdigit():
            line = int(value)
        elif sep and key == "args":
            args = value.split(",")
        else:
            fragments.append(token)
    assert exit_code is not None, f"{path.name}: the header needs exit=<code>"
    assert fragments, f"{path.name}: the header needs at least one quoted message fragment"
    assert exit_code == 0 or line is not None, f"{path.name}: an exit=2 case needs line=<N>"
    return Expectation(exit_code, line, fragments, args)


def clean_env() -> dict[str, str]:
    """The environment for CLI subprocesses: no colours, a wide virtual terminal, quiet TensorFlow."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE")}
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "TERM": "dumb", "TF_CPP_MIN_LOG_LEVEL": "2"})
    return env


def run_driver(argvs: list[list[str]], cwd: Path) -> list[dict[str, object]]:
    """Run the CLI once per argv inside one subprocess; return one result per argv."""
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(argvs)],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    marked = [line for line in proc.stdout.splitlines() if line.startswith(RESULTS_MARK)]
    assert proc.returncode == 0 and marked, f"driver failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(marked[-1][len(RESULTS_MARK) :])


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m hookrun.cli.app ARGS`` in its own subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty current directory for the CLI runs (a stray ``runs/`` would show up here)."""
    return tmp_path_factory.mktemp("cwd")


ALL_HOOKS_CONFIG = """\
name: all-hooks
graph: {builder: dnn_regressor, params: {hidden_units: [4]}}
data: {train: DATA, label: y, epochs: 2, validation_split: 0.25}
session: {run_dir: run}
hooks:
  - type: nan_tensor
  - type: evaluation
    every_n_steps: 2
  - type: early_stopping
    monitor: val_rmse
  - type: stop_at_step
    last_step: 5
  - type: progress_bar
  - type: history_saver
    every_n_step: 1
    metrics: [rmse]
  - type: logging_tensor
    tensors: {rmse: rmse, kernel: "hidden_0/kernel:0"}
  - type: step_counter
  - type: summary_saver
    save_steps: 1
  - type: global_step_waiter
    wait_until_step: 0
  - type: checkpoint_saver
    save_steps: 1
"""


@pytest.fixture(scope="module")
def good_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid config using every built-in hook type, alone in its directory."""
    directory = tmp_path_factory.mktemp("good")
    data = (BAD_DIR / "data" / "good.csv").resolve()
    (directory / "all_hooks.yaml").write_text(ALL_HOOKS_CONFIG.replace("DATA", str(data)), encoding="utf-8")
    return directory


#: The tests reading ``driver_results`` (one subprocess for them all) run on one pytest-xdist worker, so it runs once.
ON_THE_DRIVERS_WORKER = pytest.mark.xdist_group("test_bad_configs_driver")


@pytest.fixture(scope="module")
def driver_results(workdir: Path, good_config_dir: Path) -> dict[str, dict[str, object]]:
    """Run every bad config through ``validate``, plus the ``--build`` and ``train`` extras, in one subprocess.

    Files without ``args`` run first, so the results can show TensorFlow was not imported by them.
    Keys: the bad config's file name; ``"build:all_hooks"``; ``"train:build_unknown_tensor"``.
    """
    expectations = {path.name: parse_expectation(path) for path in BAD_FILES}
    order = sorted(BAD_FILES, key=lambda p: bool(expectations[p.name].args))
    runs: dict[str, list[str]] = {p.name: ["validate", str(p), *expectations[p.name].args] for p in order}
    runs["build:all_hooks"] = ["validate", str(good_config_dir / "all_hooks.yaml"), "--build"]
    runs["train:build_unknown_tensor"] = [
        "train",
        str(BAD_DIR / "build_unknown_tensor.yaml"),
        "--run-dir",
        str(workdir / "tmp" / "run"),
    ]
    results = run_driver(list(runs.values()), workdir)
    return dict(zip(runs, results, strict=True))


def test_there_are_enough_bad_configs() -> None:
    assert len(BAD_FILES) >= 45
    assert all(parse_expectation(path) for path in BAD_FILES)


@ON_THE_DRIVERS_WORKER
@pytest.mark.parametrize("path", BAD_FILES, ids=[p.stem for p in BAD_FILES])
def test_bad_config(path: Path, driver_results: dict[str, dict[str, object]]) -> None:
    expect = parse_expectation(path)
    result = driver_results[path.name]
    output = str(result["out"])
    assert result["code"] == expect.exit, f"exit {result['code']}, expected {expect.exit}:\n{output}"
    assert "Traceback" not in output, output
    assert "internal error" not in output, output
    for fragment in expect.fragments:
        assert fragment in output, f"missing {fragment!r} in:\n{output}"
    if expect.line is not None:
        assert f":{expect.line}:" in output, f"no `:{expect.line}:` in:\n{output}"
    if expect.exit == 2:
        error_lines = [line for line in output.splitlines() if ": error: " in line or line.startswith("error: ")]
        assert error_lines, output
        assert all(line.startswith(str(path)) for line in error_lines), output
    if not expect.args:
        assert not result["tf_loaded"], "validate without --build imported TensorFlow"


@ON_THE_DRIVERS_WORKER
def test_validate_build_prints_the_graph(driver_results: dict[str, dict[str, object]]) -> None:
    result = driver_results["build:all_hooks"]
    output = str(result["out"])
    assert result["code"] == 0, output
    assert "graph built on /device:CPU:0, 11 hook(s) ready (no session created)" in output
    named = next(line for line in output.splitlines() if line.startswith("named tensors: "))
    assert {"global_step", "loss", "predictions", "rmse"} <= set(named.removeprefix("named tensors: ").split(", "))
    assert "trainable variables:" in output
    assert "hidden_0/kernel [2, 4]" in output
    assert "Traceback" not in output


@ON_THE_DRIVERS_WORKER
def test_train_with_unknown_tensor_exits_2_and_writes_nothing(
    driver_results: dict[str, dict[str, object]], workdir: Path
) -> None:
    """Gets past the config checks, imports TensorFlow and fails while building the hooks."""
    result = driver_results["train:build_unknown_tensor"]
    output = str(result["out"])
    assert result["code"] == 2, output
    assert f"{BAD_DIR / 'build_unknown_tensor.yaml'}:10:" in output
    assert "unknown tensor 'los'" in output
    assert "Traceback" not in output
    assert not (workdir / "tmp").exists()


@ON_THE_DRIVERS_WORKER
def test_validate_writes_nothing(
    driver_results: dict[str, dict[str, object]], workdir: Path, good_config_dir: Path
) -> None:
    assert driver_results
    assert list(workdir.iterdir()) == []
    assert sorted(p.name for p in good_config_dir.iterdir()) == ["all_hooks.yaml"]
    assert not (BAD_DIR / "runs").exists()
    assert not (BAD_DIR / "data" / "runs").exists()


def test_empty_and_blank_files(tmp_path: Path) -> None:
    """Files that cannot carry a header: zero bytes, and whitespace only."""
    empty = tmp_path / "empty.yaml"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.yaml"
    blank.write_text("\n   \n\n", encoding="utf-8")
    results = run_driver([["validate", str(empty)], ["validate", str(blank)]], tmp_path)
    for path, result in zip((empty, blank), results, strict=True):
        output = str(result["out"])
        assert result["code"] == 2, output
        assert f"{path}:1: error: the config is empty" in output
        assert "Traceback" not in output


@pytest.mark.parametrize(
    "name",
    ["key_unknown_top_hook.yaml", "yaml_python_object_apply.yaml", "data_non_numeric_cell.yaml"],
)
def test_real_cli_subprocess(name: str, tmp_path: Path) -> None:
    """``python -m hookrun.cli.app validate`` (the real entry point) agrees with the driver."""
    path = BAD_DIR / name
    expect = parse_expectation(path)
    proc = run_cli(["validate", str(path)], tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == expect.exit, output
    assert "Traceback" not in output
    for fragment in expect.fragments:
        assert fragment in output, output
    assert f":{expect.line}:" in output


@pytest.mark.parametrize(
    "name",
    ["key_unknown_top_hook.yaml", "data_non_numeric_cell.yaml", "checkpoint_saver_same_directory.yaml"],
)
def test_train_refuses_bad_config_and_writes_nothing(name: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "tmp" / "run"
    proc = run_cli(["train", str(BAD_DIR / name), "--run-dir", str(run_dir)], tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert "Traceback" not in output
    assert not run_dir.exists()
    assert not (tmp_path / "tmp").exists()
    assert not (tmp_path / "runs").exists()
