"""``progress_bar``: plain lines without a terminal, the total, the early-end warning, how often it reads the loss."""

from __future__ import annotations

import pytest
import tensorflow as tf

from hookrun.hooks.progress_bar.columns import format_loss
from hookrun.hooks.progress_bar.hook import ProgressBarHook
from hookrun.hooks.step_clock import StepClock
from tests.conftest import BATCH_SIZE, NAN_BUILDER, NUM_ROWS, Captured


def test_plain_final_line_with_the_total_from_stop_at_step(make_config, run_train, captured):
    last_step = 6
    run_train(make_config(hooks=[{"type": "progress_bar"}, {"type": "stop_at_step", "last_step": last_step}]))
    lines = captured.text.splitlines()
    assert lines[-1].startswith(f"Training {last_step}/{last_step} (100%) "), captured.text
    assert "loss: " in lines[-1]
    assert "warning" not in captured.text


def test_final_line_shows_the_last_steps_loss(make_config, run_train, captured):
    last_step = 5
    result = run_train(
        make_config(
            hooks=[
                {"type": "progress_bar", "refresh_secs": 1000},  # reads the first step's loss, then not until the last
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "history_saver", "every_n_step": 1},
            ]
        )
    )
    last_loss, first_loss = result.history[-1]["mean_loss"], result.history[0]["mean_loss"]
    assert format_loss(last_loss) != format_loss(first_loss)
    assert captured.text.splitlines()[-1].endswith(f"loss: {format_loss(last_loss)}"), captured.text


def test_total_is_the_data_end_when_it_comes_before_last_step(make_config, run_train, captured):
    data_steps = NUM_ROWS // BATCH_SIZE  # epochs: 1
    result = run_train(
        make_config(
            data={"epochs": 1},
            hooks=[{"type": "progress_bar"}, {"type": "stop_at_step", "last_step": data_steps + 10}],
        )
    )
    assert result.end_of_data and result.final_global_step == data_steps
    assert f"Training {data_steps}/{data_steps} (100%)" in captured.text
    assert "warning" not in captured.text


def test_warns_when_the_data_ends_before_the_total(make_config, run_train, captured):
    data_steps, total = NUM_ROWS // BATCH_SIZE, 20
    run_train(make_config(data={"epochs": 1}, hooks=[{"type": "progress_bar", "total": total}]))
    assert f"Training {data_steps}/{total} ({100 * data_steps // total}%)" in captured.text
    assert f"warning: training ended at step {data_steps}, before the expected {total}" in captured.text


def test_warns_when_a_stop_comes_before_the_total(make_config, run_train, captured, write_module):
    nan_from, last_step = 2, 10
    builder = write_module("mybuilder", NAN_BUILDER)
    run_train(
        make_config(
            graph={"builder": f"{builder}:build", "params": {"nan_from": nan_from}},
            hooks=[
                {"type": "progress_bar"},
                {"type": "nan_tensor", "fail_on_nan_loss": False},
                {"type": "stop_at_step", "last_step": last_step},
            ],
        )
    )
    assert f"warning: training ended at step {nan_from + 1}, before the expected {last_step}" in captured.text


class FetchCounting(ProgressBarHook):
    """Records whether each before_run asked the session for anything."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fetched: list[bool] = []

    def before_run(self, run_context):
        args = super().before_run(run_context)
        self.fetched.append(args is not None)
        return args


def run_progress_hook(refresh_secs: float, steps: int) -> FetchCounting:
    """Drive the hook directly in a tiny graph under a real MonitoredSession."""
    graph = tf.Graph()
    with graph.as_default():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        loss = tf.cast(global_step, tf.float32) * 0.5
        train_op = global_step.assign_add(1)
        hook = FetchCounting(loss, StepClock(), Captured().console, total=steps, refresh_secs=refresh_secs)
        stop = tf.compat.v1.train.StopAtStepHook(last_step=steps)
        with tf.compat.v1.train.MonitoredSession(hooks=[hook, stop]) as session:
            while not session.should_stop():
                session.run(train_op)
    return hook


@pytest.mark.parametrize(("refresh_secs", "expected_reads"), [(1e6, 2), (1e-9, 20)])
def test_reads_the_loss_only_when_refresh_secs_have_passed(refresh_secs, expected_reads):
    steps = 20
    hook = run_progress_hook(refresh_secs, steps)
    assert len(hook.fetched) == steps
    assert sum(hook.fetched) == expected_reads
    assert hook.fetched[0]  # the first step always reads
    assert hook.fetched[-1]  # and the step that reaches the total, for the final line
    assert hook.step == steps  # counted in Python on every step, read or not


#: A hook setting ``global_step`` to ``to`` in its first ``after_create_session`` (pretrained weights).
MOVES_GLOBAL_STEP = """
import tensorflow as tf

v1 = tf.compat.v1


class MoveGlobalStep(v1.train.SessionRunHook):
    def __init__(self, to):
        self._to = to

    def begin(self):
        self._value = v1.placeholder(tf.int64, [])
        self._assign = v1.assign(v1.train.get_global_step(), self._value)

    def after_create_session(self, session, coord):
        session.run(self._assign, {self._value: self._to})
"""


@pytest.mark.parametrize("steps_per_run", [1, 5])
@pytest.mark.parametrize(("to", "stop", "total"), [(40, {"num_steps": 12}, 52), (40, {"last_step": 45}, 45)])
def test_the_total_follows_a_global_step_a_hook_moved(make_config, run_train, captured, write_module, steps_per_run,
                                                     to, stop, total):
    """The bar's total comes from the restored step (0); a hook moving global_step to 40 moves the end
    of a num_steps run to 52, not of a last_step one: the bar shows 52/52 and 45/45, and no warning."""
    module = write_module("moves", MOVES_GLOBAL_STEP)
    hooks = [
        {"type": "progress_bar"},
        {"type": "custom", "class": f"{module}:MoveGlobalStep", "args": {"to": to}},
        {"type": "stop_at_step", **stop},
    ]
    result = run_train(make_config(hooks=hooks, data={"epochs": None}, session={"steps_per_run": steps_per_run}))
    assert result.final_global_step == total
    assert captured.text.splitlines()[-1].startswith(f"Training {total}/{total} (100%) "), captured.text
    assert "warning" not in captured.text
