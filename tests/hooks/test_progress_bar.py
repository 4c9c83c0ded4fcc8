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


def test_final_line_shows_the_mean_loss_since_the_bar_last_changed(make_config, run_train, captured):
    """Issue 29: the final ``loss:`` was the last step's alone (a partial last batch: a few rows' loss)."""
    last_step = 5
    result = run_train(
        make_config(
            hooks=[
                {"type": "progress_bar", "refresh_secs": 1000},  # shows step 1, then not until the last step
                {"type": "stop_at_step", "last_step": last_step},
                {"type": "history_saver", "every_n_step": 1},
            ]
        )
    )
    losses = [row["mean_loss"] for row in result.history]
    mean = sum(losses[1:]) / len(losses[1:])  # steps 2..5: since the bar showed step 1
    assert format_loss(mean) != format_loss(losses[-1])
    assert captured.text.splitlines()[-1].endswith(f"loss: {format_loss(mean)}"), captured.text


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
    """Records whether each before_run asked the session for anything, each step's loss and each loss shown."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fetched: list[bool] = []
        self.losses: list[float] = []
        self.shown: list[float] = []

    def before_run(self, run_context):
        args = super().before_run(run_context)
        self.fetched.append(args is not None)
        return args

    def after_run(self, run_context, run_values):
        results = run_values.results
        self.losses.append(float(results[0] if isinstance(results, tuple) else results))
        before = self.loss
        super().after_run(run_context, run_values)
        if self.loss is not before:
            self.shown.append(self.loss)


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


@pytest.mark.parametrize(("refresh_secs", "expected_updates"), [(1e6, 2), (1e-9, 20)])
def test_shows_the_mean_loss_since_the_last_update_when_refresh_secs_have_passed(refresh_secs, expected_updates):
    steps = 20
    hook = run_progress_hook(refresh_secs, steps)
    assert hook.fetched == [True] * steps  # every step's loss counts in the mean
    assert len(hook.shown) == expected_updates  # the first step, then when due, and the step reaching the total
    assert hook.shown[0] == hook.losses[0]
    if expected_updates == 2:
        assert hook.shown[-1] == pytest.approx(sum(hook.losses[1:]) / (steps - 1))
    else:
        assert hook.shown == hook.losses
    assert hook.step == steps


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
