"""The SessionRunHook lifecycle as hookrun runs it, observed by two recording hooks (A before B).

TensorFlow's documented contract (``tf.compat.v1.train.SessionRunHook``, ``MonitoredSession``):
``begin`` for every hook, then ``after_create_session``, then ``before_run``/``after_run``
around each step, then ``end``; each phase calls the hooks in list order. ``end`` runs when
a stop is requested or the input ends (``OutOfRangeError``; that step's ``after_run`` does
not run), and not at all on any other error.
"""

from __future__ import annotations

import pytest

from hookrun.common.errors import TrainingError
from tests.conftest import ASSERT_BUILDER, NAN_BUILDER, NUM_ROWS, user_module

RECORDER = """
import tensorflow as tf

CALLS = []


class Recorder(tf.compat.v1.train.SessionRunHook):
    def __init__(self, name, stop_at=None):
        self.name = name
        self.stop_at = stop_at
        self.step = 0  # local step: before_run calls so far

    def begin(self):
        CALLS.append((self.name, "begin", self.step))

    def after_create_session(self, session, coord):
        CALLS.append((self.name, "after_create_session", self.step))

    def before_run(self, run_context):
        self.step += 1
        CALLS.append((self.name, "before_run", self.step))

    def after_run(self, run_context, run_values):
        CALLS.append((self.name, "after_run", self.step))
        if self.stop_at is not None and self.step >= self.stop_at:
            run_context.request_stop()

    def end(self, session):
        CALLS.append((self.name, "end", self.step))
"""

NAMES = ("A", "B")


def start(names=NAMES):
    return [(n, "begin", 0) for n in names] + [(n, "after_create_session", 0) for n in names]


def steps(first, last, names=NAMES):
    calls = []
    for step in range(first, last + 1):
        calls += [(n, "before_run", step) for n in names]
        calls += [(n, "after_run", step) for n in names]
    return calls


def end(step, names=NAMES):
    return [(n, "end", step) for n in names]


@pytest.fixture
def recorder(write_module):
    module = write_module("recorder", RECORDER)

    def hook(name, **args):
        return {"type": "custom", "class": f"{module}:Recorder", "args": {"name": name, **args}}

    hook.calls = lambda: user_module(module).CALLS
    return hook


def phase_order_holds(calls):
    """In every phase of every step, A's call comes right before B's."""
    pairs = zip(calls[::2], calls[1::2], strict=True)
    return all(first[0] == "A" and second == ("B", first[1], first[2]) for first, second in pairs)


def test_normal_finish_via_stop_at_step(make_config, run_train, recorder):
    last_step = 3
    result = run_train(
        make_config(hooks=[recorder("A"), {"type": "stop_at_step", "last_step": last_step}, recorder("B")])
    )
    assert result.final_global_step == last_step
    assert recorder.calls() == start() + steps(1, last_step) + end(last_step)
    assert phase_order_holds(recorder.calls())


def test_request_stop_in_after_run(make_config, run_train, recorder):
    stop_at = 3
    result = run_train(make_config(hooks=[recorder("A", stop_at=stop_at), recorder("B")]))
    assert result.final_global_step == stop_at
    assert not result.end_of_data
    # B's after_run for the stopping step still runs, then end.
    assert recorder.calls() == start() + steps(1, stop_at) + end(stop_at)


def test_end_of_data(make_config, run_train, recorder):
    batch_size = 16
    data_steps = NUM_ROWS // batch_size
    result = run_train(make_config(data={"epochs": 1, "batch_size": batch_size}, hooks=[recorder("A"), recorder("B")]))
    assert result.end_of_data
    assert result.final_global_step == data_steps
    failing = data_steps + 1  # the step whose input ran out: before_run, but no after_run
    expected = start() + steps(1, data_steps) + [(n, "before_run", failing) for n in NAMES] + end(failing)
    assert recorder.calls() == expected
    count = {m: sum(1 for c in recorder.calls() if c[0] == "A" and c[1] == m) for m in ("before_run", "after_run")}
    assert count["before_run"] == count["after_run"] + 1


def test_graph_error_runs_neither_after_run_nor_end(make_config, run_train, recorder, write_module):
    fail_from = 2  # the assertion fails once global_step (before the increment) reaches it
    builder = write_module("assert_builder", ASSERT_BUILDER)
    loaded = make_config(
        graph={"builder": f"{builder}:build", "params": {"fail_from": fail_from}},
        hooks=[recorder("A"), recorder("B")],
    )
    with pytest.raises(TrainingError, match=rf"^TensorFlow error at step {fail_from + 1}: InvalidArgumentError"):
        run_train(loaded)
    failing = fail_from + 1
    assert recorder.calls() == start() + steps(1, fail_from) + [(n, "before_run", failing) for n in NAMES]


def test_a_hook_raising_in_after_run_skips_later_after_runs_and_end(make_config, run_train, recorder, write_module):
    nan_from = 2
    builder = write_module("nan_builder", NAN_BUILDER)
    loaded = make_config(
        graph={"builder": f"{builder}:build", "params": {"nan_from": nan_from}},
        hooks=[recorder("A"), {"type": "nan_tensor"}, recorder("B")],
    )
    with pytest.raises(TrainingError, match=rf"^NaN loss at step {nan_from + 1}"):
        run_train(loaded)
    failing = nan_from + 1
    assert recorder.calls() == (
        start() + steps(1, nan_from) + [(n, "before_run", failing) for n in NAMES] + [("A", "after_run", failing)]
    )
