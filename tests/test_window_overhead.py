"""The Python work hookrun does per session call under ``session.steps_per_run`` (issue 17), counted, not timed.

Speed is measured by ``benchmarks/``; these tests count the work that made it slow, so they fail when it
comes back: the engine keying the hooks' requests again every window, and the console lines changing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hookrun.runner.session import engine

from .test_steps_per_run import _config

#: The bench's standard hook set (benchmarks/workloads.py ``standard_hooks``), with periods that fire in a short run.
STANDARD = [
    {"type": "stop_at_step", "last_step": 40},
    {"type": "nan_tensor", "loss_tensor": "loss"},
    {"type": "checkpoint_saver", "save_steps": 10},
    {"type": "logging_tensor", "tensors": ["loss", "global_step"], "every_n_iter": 10},
    {"type": "summary_saver", "save_steps": 10, "tensors": ["loss"]},
    {"type": "step_counter", "every_n_steps": 10},
    {"type": "history_saver", "every_n_step": 10},
    {"type": "progress_bar"},
]


@pytest.fixture
def plan_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per call of the engine's ``_plan_for`` (keying a step's requests, and building a plan on a miss)."""
    calls: list[int] = []
    original = engine.HookedMonitoredSession._plan_for

    def counted(self: Any, *args: Any) -> Any:
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(engine.HookedMonitoredSession, "_plan_for", counted)
    return calls


def test_the_standard_set_keys_its_requests_once_per_session(tmp_path, linear_csv, run_train, plan_builds):
    """N = 5, 40 steps: 8 windows, one session. Every built-in hook of the standard set returns the same frozen
    request each window, so the engine keys the step once and reuses the plan for the 7 windows after."""
    result = run_train(_config(tmp_path, "n5", 5, STANDARD), run_dir=tmp_path / "n5")
    assert result.final_global_step == 40
    assert len(plan_builds) == 1


def test_the_standard_set_still_logs_and_writes_every_period(tmp_path, linear_csv, run_train, captured):
    """The frozen requests change nothing the hooks produce: the lines, the summaries, the history rows."""
    from .conftest import event_scalars

    result = run_train(_config(tmp_path, "n5", 5, STANDARD), run_dir=tmp_path / "n5")
    lines = captured.text.splitlines()
    logged = [line for line in lines if line.startswith("global_step = ")]
    # every_n_iter counts local steps from 0 (TensorFlow's): steps 1, 11, 21, 31, in the windows ending 5, 15, 25, 35.
    assert [line.split(",")[0] for line in logged] == [f"global_step = {s}" for s in (5, 15, 25, 35)]
    assert all(", loss = " in line for line in logged)
    assert sum(line.startswith("global_step/sec: ") for line in lines) == 3  # 15, 25, 35 (step 5 starts the clock)
    assert [s for s, _ in event_scalars(tmp_path / "n5" / "train", "loss")] == [5, 15, 25, 35]
    assert [row["step"] for row in result.history] == [10, 20, 30, 40]


# -- console lines above the live progress bar ------------------------------------------------------------------


def _log_and_record(value: float) -> None:
    """Log as ``StepCounterHook._log_and_record`` does (the handler passes its lines by function name)."""
    from hookrun.hooks.tf_internals import tf_logging

    tf_logging().info("%s: %g", "global_step/sec", value)


def _draw_with(progress_class: Any, lines: int, table_draws: list[int] | None = None) -> str:
    """A terminal console with a live ``progress_class`` (hookrun's columns, a fixed clock, refreshed by hand)
    and ``lines`` TensorFlow log lines printed through hookrun's handler, three per refresh; the bytes written."""
    import io

    from rich.console import Console

    from hookrun.hooks.progress_bar.hook import progress_columns
    from hookrun.runner.tf_env import tf_logging_to

    now = [0.0]
    console = Console(file=io.StringIO(), force_terminal=True, width=100, height=30, color_system="standard")
    progress = progress_class(
        *progress_columns(True), console=console, auto_refresh=False, expand=True, get_time=lambda: now[0]
    )
    task = progress.add_task("train", total=1000, completed=0, loss=None, steps_per_epoch=8.0)
    progress.start()
    with tf_logging_to(console):
        for line in range(lines):
            if line % 3 == 0:
                now[0] += 0.1
                progress.update(task, completed=10 * line, loss=1.0 / (line + 1))
                progress.refresh()
            _log_and_record(1000.0 + line)
    progress.stop()
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_lines_above_the_live_bar_are_written_as_rich_writes_them():
    """The replaying progress writes the same bytes as rich's Progress: each line, then the bar redrawn below it."""
    from rich.progress import Progress

    from hookrun.hooks.progress_bar.hook import ReplayingProgress

    expected = _draw_with(Progress, 12)
    got = _draw_with(ReplayingProgress, 12)
    assert got == expected
    assert "global_step/sec: 1011\n" in got and got.rindex("global_step/sec: 1011") < got.rindex("Training")


def test_lines_above_the_live_bar_do_not_draw_the_table_again(monkeypatch):
    """Between two refreshes the table is drawn once for the refresh and once for the first line, not per line."""
    from rich.table import Table

    from hookrun.hooks.progress_bar.hook import ReplayingProgress

    draws: list[int] = []
    original = Table.__rich_console__

    def counted(self: Any, console: Any, options: Any) -> Any:
        draws.append(1)
        return original(self, console, options)

    monkeypatch.setattr(Table, "__rich_console__", counted)
    _draw_with(ReplayingProgress, 30)  # 10 refreshes, 30 lines
    assert len(draws) <= 2 * 10 + 2  # the start's and the stop's draws besides


def test_the_progress_bar_hook_draws_with_the_replaying_progress(tmp_path, linear_csv, monkeypatch):
    """The hook's live display in a terminal is the replaying one (the two tests above cover it)."""
    import io

    from rich.console import Console

    from hookrun.hooks.progress_bar import hook as progress_hook
    from hookrun.runner.trainer import train

    made: list[Any] = []
    original = progress_hook.ReplayingProgress.get_renderable

    def record(self: Any) -> Any:
        made.append(type(self))
        return original(self)

    monkeypatch.setattr(progress_hook.ReplayingProgress, "get_renderable", record)
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    train(_config(tmp_path, "term", 5, STANDARD), run_dir=tmp_path / "term", console=console)
    assert made and set(made) == {progress_hook.ReplayingProgress}


def _logged_lines(hook: Any, values: list[dict[str, Any]]) -> list[str]:
    """The messages ``hook._log_tensors`` logs for each of ``values`` (TensorFlow's logger, captured), the
    timer's clock moving 0.25 s between lines."""
    import logging
    import time

    now = [1000.0]

    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(f"{record.funcName}|{record.getMessage()}")

    logger = logging.getLogger("tensorflow")
    keep, level = Keep(), logger.level
    logger.addHandler(keep)
    logger.setLevel(logging.INFO)
    real_time = time.time
    time.time = lambda: now[0]  # the timer's "(0.250 sec)"
    try:
        for index, value in enumerate(values):
            hook._iter_count = 10 * index
            now[0] += 0.25
            hook._log_tensors(value)
    finally:
        time.time = real_time
        logger.removeHandler(keep)
        logger.setLevel(level)
    return messages


def _logging_hooks(**kwargs: Any) -> tuple[Any, Any]:
    """TensorFlow's ``LoggingTensorHook`` and hookrun's window one on the same tensors, after ``begin``."""
    import tensorflow as tf

    from hookrun.hooks.logging_tensor.hook import WindowLoggingTensorHook
    from hookrun.hooks.window import RunWindow

    graph = tf.Graph()
    with graph.as_default():
        tensors = {name: tf.constant(0.0, name=name) for name in ("loss", "b_tiny", "arr")}
        steps = tf.constant(1, name="steps")
        window = RunWindow(steps_per_run=5, steps=steps, global_step=steps, any_nonfinite=tf.constant(False))
        theirs = tf.compat.v1.train.LoggingTensorHook(tensors, every_n_iter=10, **kwargs)
        ours = WindowLoggingTensorHook(tensors, every_n_iter=10, window=window, **kwargs)
        theirs.begin()
        ours.begin()
    return theirs, ours


SCALAR_VALUES = [
    {"loss": np.float32(0.1234567), "b_tiny": np.float32(1e-10), "arr": np.int64(12300)},
    {"loss": np.float64(1e17), "b_tiny": np.float16(0.1), "arr": np.bool_(True)},
    {"loss": np.float32("nan"), "b_tiny": b"text", "arr": np.uint8(7)},
]


def test_a_line_of_scalars_is_tensorflows_line_without_touching_print_options(monkeypatch):
    theirs, ours = _logging_hooks()
    expected = _logged_lines(theirs, SCALAR_VALUES)
    calls: list[int] = []
    original = np.set_printoptions
    monkeypatch.setattr(np, "set_printoptions", lambda *a, **k: (calls.append(1), original(*a, **k))[1])
    assert _logged_lines(ours, SCALAR_VALUES) == expected
    assert expected[0].startswith("_log_tensors|arr = 12300, b_tiny = 1e-10, loss = 0.1234567")
    assert calls == []  # TensorFlow's sets suppress=True and restores the options: 2 calls a line


def test_a_line_with_an_array_or_a_formatter_is_tensorflows_own():
    """suppress=True does change arrays: such lines (and formatted ones) take TensorFlow's _log_tensors."""
    values = [{"loss": np.float32(1.0), "b_tiny": np.float32(2.0), "arr": np.array([1e-10, 1.0])}]
    theirs, ours = _logging_hooks()
    assert _logged_lines(ours, values) == _logged_lines(theirs, values)
    assert "arr = [0. 1.]" in _logged_lines(ours, values)[0]
    theirs, ours = _logging_hooks(formatter=lambda v: f"loss is {v['loss']}")
    assert _logged_lines(ours, values) == _logged_lines(theirs, values) == ["_log_tensors|loss is 1.0"]


def _log_tensors(message: str) -> None:
    """Log as ``LoggingTensorHook._log_tensors`` does (the handler passes its lines by function name)."""
    from hookrun.hooks.tf_internals import tf_logging

    tf_logging().info("%s", message)


def test_a_line_is_printed_exactly_as_logged(captured):
    """No markup, highlighting or emoji code touches a line (a tag may hold ``:name:`` or ``[x]``)."""
    from hookrun.runner.tf_env import tf_logging_to

    line = "a:thumbs_up: = 1.5, [bold]b[/bold] = 2, c:0 = -3 (0.001 sec)"
    with tf_logging_to(captured.console):
        _log_tensors(line)
        _log_and_record(1234.5)
    assert captured.text == f"{line}\nglobal_step/sec: 1234.5\n"


# -- the hooks' state file, written with every checkpoint -----------------------------------------------------


def test_hook_state_files_are_not_fsynced_like_their_checkpoints(tmp_path, linear_csv, run_train, monkeypatch):
    """TensorFlow writes a checkpoint without fsync; its hook_state-<step>.json (renamed into place) gets none
    either: an fsync there cost 2-6 ms a save. hookrun's other files (history.csv at the end) still get one."""
    import os

    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    run_train(_config(tmp_path, "n5", 5, STANDARD), run_dir=tmp_path / "n5")
    states = sorted(p.name for p in (tmp_path / "n5").glob("hook_state-*.json"))
    assert states and states[-1] == "hook_state-40.json"
    assert not [name for name in synced if "hook_state" in name]
    assert any("history.csv" in name for name in synced)
