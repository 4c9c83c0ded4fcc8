"""``history_saver`` through the real runner: windows, means, the CSV file, and resuming."""

from __future__ import annotations

import pytest

from hookrun.hooks.history_saver.hook import read_history
from tests.conftest import user_module

SAVER = {"type": "checkpoint_saver", "save_steps": 1000}


def window_ends(first: int, last: int, every: int) -> list[int]:
    """Steps where rows are recorded for a run over global steps ``first+1 .. last``."""
    ends = [s for s in range(first + 1, last + 1) if s % every == 0]
    return ends if ends and ends[-1] == last else [*ends, last]


def history_hooks(last_step: int, every: int = 3, extra: list | None = None) -> list[dict]:
    return [
        *(extra or []),
        {"type": "stop_at_step", "last_step": last_step},
        {"type": "history_saver", "every_n_step": every},
        SAVER,
    ]


def test_rows_per_window_and_the_partial_last_one(make_config, run_train, loss_recorder):
    every, last_step = 3, 10
    result = run_train(make_config(hooks=history_hooks(last_step, every, [loss_recorder.entry])))
    losses = loss_recorder.losses()
    assert len(losses) == last_step

    steps = [row["step"] for row in result.history]
    assert steps == window_ends(0, last_step, every) == [3, 6, 9, 10]
    assert result.history_columns[:3] == ["step", "mean_loss", "total_loss"]
    start = 0
    for row in result.history:
        window = losses[start : row["step"]]
        assert row["total_loss"] == pytest.approx(sum(window), rel=1e-6)
        assert row["mean_loss"] == pytest.approx(row["total_loss"] / len(window), rel=1e-6)
        start = row["step"]


def test_history_csv_matches_the_rows(make_config, run_train):
    result = run_train(make_config(hooks=history_hooks(10)))
    on_disk = read_history(result.run_dir / "history.csv")
    assert [r["step"] for r in on_disk] == [r["step"] for r in result.history]
    for disk, memory in zip(on_disk, result.history, strict=True):
        assert disk["mean_loss"] == pytest.approx(memory["mean_loss"], rel=1e-6)
        assert disk["total_loss"] == pytest.approx(memory["total_loss"], rel=1e-6)
    header = (result.run_dir / "history.csv").read_text().splitlines()[0]
    assert header.split(",") == result.history_columns


def test_metrics_add_columns(make_config, run_train):
    result = run_train(
        make_config(
            hooks=[
                {"type": "stop_at_step", "last_step": 4},
                {"type": "history_saver", "every_n_step": 2, "metrics": ["rmse"]},
            ]
        )
    )
    assert result.history_columns == ["step", "mean_loss", "total_loss", "rmse"]
    for row in result.history:
        # rmse of a batch is sqrt(mse); mean of sqrt <= sqrt of mean (Jensen), and loss == mse here (no l2).
        assert 0 < row["rmse"] <= row["mean_loss"] ** 0.5 + 1e-6


def test_resume_continues_the_file_without_duplicates(make_config, run_train):
    every = 3
    first = run_train(make_config(hooks=history_hooks(10, every)))
    second = run_train(make_config(hooks=history_hooks(16, every)))
    assert second.initial_step == 10
    steps = [row["step"] for row in second.history]
    assert steps == window_ends(0, 10, every) + window_ends(10, 16, every) == [3, 6, 9, 10, 12, 15, 16]
    for resumed, original in zip(second.history, first.history, strict=False):  # read back from history.csv
        assert resumed["mean_loss"] == pytest.approx(original["mean_loss"], rel=1e-6)
    assert [r["step"] for r in read_history(second.run_dir / "history.csv")] == steps


def test_rows_past_the_restored_checkpoint_are_dropped(make_config, run_train):
    every = 3
    first = run_train(make_config(hooks=history_hooks(10, every)))
    path = first.run_dir / "history.csv"
    # Rows a crashed later run could have written after the last checkpoint (step 10).
    with path.open("a", encoding="utf-8") as handle:
        handle.write("13,9.5,28.5\n16,8.5,25.5\n")
    assert [r["step"] for r in read_history(path)] == [3, 6, 9, 10, 13, 16]

    second = run_train(make_config(hooks=history_hooks(12, every)))
    assert second.initial_step == 10
    expected = window_ends(0, 10, every) + window_ends(10, 12, every)
    assert [r["step"] for r in second.history] == expected == [3, 6, 9, 10, 12]
    assert [r["step"] for r in read_history(path)] == expected
    assert all(r["mean_loss"] not in (9.5, 8.5) for r in second.history)


def test_read_history_drops_a_row_torn_by_a_crash(tmp_path):
    from hookrun.hooks.history_saver.hook import read_history

    path = tmp_path / "history.csv"
    path.write_text("step,mean_loss,total_loss\n2,1.5,3\n4,1.25,2.5\n6,1.2", encoding="utf-8")  # no final newline
    assert [row["step"] for row in read_history(path)] == [2, 4]
    path.write_text("step,mean_loss,total_loss\n2,1.5,3\n4,1.25,2.5\n", encoding="utf-8")
    assert read_history(path)[-1] == {"step": 4, "mean_loss": 1.25, "total_loss": 2.5}


ABORT_ONCE = """
import tensorflow as tf


LOSSES = {}


class AbortOnce(tf.compat.v1.train.SessionRunHook):
    # A preemption (AbortedError) before the run of step `at`: the session is re-created from the checkpoint.
    # Records each step's loss (a retried step's replaces the first).
    def __init__(self, at):
        self.at, self.done, self.step = at, False, 0

    def after_create_session(self, session, coord):
        self.step = int(session.run(tf.compat.v1.train.get_global_step()))

    def before_run(self, run_context):
        if self.step + 1 == self.at and not self.done:
            self.done = True
            raise tf.errors.AbortedError(None, None, "simulated preemption")
        return tf.compat.v1.train.SessionRunArgs("loss:0")

    def after_run(self, run_context, run_values):
        self.step += 1
        LOSSES[self.step] = float(run_values.results)
"""


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_a_window_open_at_the_restored_checkpoint_is_resumed_whole(
    make_config, run_train, tmp_path, write_module, engine
):
    """A recovered session restores the checkpoint at 6 and the window open there (hook state): the row
    at 8 covers steps 5-8, not 7-8 alone."""
    module = write_module("abort_once", ABORT_ONCE)

    def config():
        hooks = [
            {"type": "history_saver", "every_n_step": 4},
            {"type": "checkpoint_saver", "save_steps": 2},
            {"type": "stop_at_step", "last_step": 8},
        ]
        hooks.insert(0, {"type": "custom", "class": f"{module}:AbortOnce", "args": {"at": 7}})
        return make_config(hooks=hooks, session={"engine": engine})

    recovered = run_train(config(), run_dir=tmp_path / "recovered")
    losses = user_module(module).LOSSES  # steps 5 and 6 before the preemption, 7 and 8 after it
    assert [row["step"] for row in recovered.history] == [4, 8]
    assert recovered.history[-1]["total_loss"] == pytest.approx(sum(losses[s] for s in (5, 6, 7, 8)), rel=1e-5)
