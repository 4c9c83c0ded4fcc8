"""Window-accurate reporting (issue 22, item 5): the steps that ran, the real reason for the stop, where errors were.

Each case runs the real runner, with one step per session call and with ``session.steps_per_run: 5``,
under both session engines where the engine takes part (it calls the hooks; the loop reports). The
expected values are what ran: the ``global_step`` the run ended at, read from the checkpoint or the
result, and the hook that stopped it.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.common.errors import TrainingError
from tests.conftest import base_config

#: A hook that, once ``global_step`` (read on the raw session) reaches ``at``, raises ``kind`` in ``where``
#: (``before_run`` or ``after_run``), or requests a stop (``kind: stop``).
RAISER = """
import tensorflow as tf

v1 = tf.compat.v1


class Raise(v1.train.SessionRunHook):
    def __init__(self, kind, where="after_run", at=3):
        self._kind, self._where, self._at = kind, where, at

    def begin(self):
        self._global_step = v1.train.get_global_step()

    def _maybe(self, run_context, method):
        if method != self._where or int(run_context.session.run(self._global_step)) < self._at:
            return
        if self._kind == "stop":
            run_context.request_stop()
        elif self._kind == "StopIteration":
            raise StopIteration
        elif self._kind == "OutOfRangeError":
            raise tf.errors.OutOfRangeError(None, None, "the hook's own input ended")
        else:
            raise RuntimeError("the hook failed")

    def before_run(self, run_context):
        self._maybe(run_context, "before_run")

    def after_run(self, run_context, run_values):
        self._maybe(run_context, "after_run")
"""

#: A builder whose step fails (an op error, not NaN) once ``global_step`` is ``fail_from`` before the step.
FAILING_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    step = v1.train.get_global_step()
    check = tf.debugging.assert_less(step, tf.constant(int(params["fail_from"]), tf.int64), message="step check")
    with tf.control_dependencies([check]):  # the forward pass (and so the step) needs the check
        w = tf.identity(w)
    return {"loss": tf.identity(tf.reduce_mean(tf.square(tf.matmul(features, w) - labels)), name="loss")}
"""

ENDLESS = {"epochs": None}


def _raiser(module: str, kind: str, where: str = "after_run", at: int = 3) -> dict:
    return {"type": "custom", "class": f"{module}:Raise", "args": {"kind": kind, "where": where, "at": at}}


@pytest.mark.parametrize("steps_per_run", [1, 5])
@pytest.mark.parametrize("engine", ["hookrun", "tf"])
@pytest.mark.parametrize("kind", ["StopIteration", "OutOfRangeError"])
def test_a_hook_raising_end_of_input_in_after_run_is_not_the_data_ending(
    make_config, run_train, write_module, steps_per_run, engine, kind
):
    """The step (the window) ran before the hook's after_run raised: it is counted, and the reason names
    the hook, not the data (which never ends here)."""
    module = write_module("raiser", RAISER)
    hooks = [_raiser(module, kind), {"type": "stop_at_step", "last_step": 50}]
    session = {"engine": engine, "steps_per_run": steps_per_run}
    result = run_train(make_config(hooks=hooks, data=ENDLESS, session=session))
    ran = 3 if steps_per_run == 1 else 5  # the hook raises after the step (the window) reaching 3
    assert (result.steps, result.final_global_step) == (ran, ran)
    assert not result.end_of_data
    assert result.stop_reason == f"hooks[0] (custom {module}:Raise).after_run() raised {kind}"


@pytest.mark.parametrize("steps_per_run", [1, 5])
def test_a_hook_raising_in_before_run_counts_no_step_of_its_own(make_config, run_train, write_module, steps_per_run):
    module = write_module("raiser", RAISER)
    hooks = [_raiser(module, "StopIteration", "before_run"), {"type": "stop_at_step", "last_step": 50}]
    result = run_train(make_config(hooks=hooks, data=ENDLESS, session={"steps_per_run": steps_per_run}))
    ran = 3 if steps_per_run == 1 else 5  # before_run sees 3 (5) and raises: that step (window) never runs
    assert (result.steps, result.final_global_step) == (ran, ran)
    assert result.stop_reason == f"hooks[0] (custom {module}:Raise).before_run() raised StopIteration"


@pytest.mark.parametrize("steps_per_run", [1, 5])
def test_the_reasons_a_run_stops(make_config, run_train, write_module, steps_per_run):
    """The data's end, stop_at_step's last step, a hook's request_stop: each named as what it is."""
    session = {"steps_per_run": steps_per_run}
    ended = run_train(make_config(hooks=[{"type": "stop_at_step", "last_step": 50}], data={"epochs": 1},
                                  session=session, filename="ended.yaml"))
    assert (ended.stop_reason, ended.end_of_data, ended.final_global_step) == ("end of data", True, 8)

    last = run_train(make_config(hooks=[{"type": "stop_at_step", "last_step": 7}], data=ENDLESS, session=session,
                                 filename="last.yaml"))
    assert (last.stop_reason, last.end_of_data, last.final_global_step) == ("last_step 7 reached", False, 7)

    module = write_module("raiser", RAISER)
    hooks = [_raiser(module, "stop", at=4), {"type": "stop_at_step", "last_step": 50}]
    stopped = run_train(make_config(hooks=hooks, data=ENDLESS, session=session, filename="stopped.yaml"))
    assert stopped.stop_reason == "stop requested by a hook"
    assert stopped.final_global_step == stopped.steps == (4 if steps_per_run == 1 else 5)


@pytest.mark.parametrize(
    ("steps_per_run", "where", "expected"),
    [
        (1, "after_run", "in hooks[0] (custom {module}:Raise).after_run() after step 6:"),
        (5, "after_run", "in hooks[0] (custom {module}:Raise).after_run() after the window of steps 6-10:"),
        (1, "before_run", "in hooks[0] (custom {module}:Raise).before_run() before step 7:"),
        (5, "before_run", "in hooks[0] (custom {module}:Raise).before_run() before the window of steps 11-15:"),
    ],
)
def test_a_hooks_error_names_its_step_or_window(make_config, run_train, write_module, steps_per_run, where, expected):
    """Not the window's first step: after_run of the window 6-10 fails after those steps ran."""
    module = write_module("raiser", RAISER)
    hooks = [_raiser(module, "RuntimeError", where, at=6), {"type": "stop_at_step", "last_step": 50}]
    with pytest.raises(TrainingError) as raised:
        run_train(make_config(hooks=hooks, data=ENDLESS, session={"steps_per_run": steps_per_run}))
    assert expected.format(module=module) in str(raised.value)


@pytest.mark.parametrize(
    ("steps_per_run", "expected"), [(1, "at step 7:"), (5, "at step 7 (in the window of steps 6-10):")]
)
@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_an_op_error_names_the_step_it_happened_at(make_config, run_train, write_module, steps_per_run, expected,
                                                   engine):
    """The step 7 fails (global_step is 6 before it); inside a window the steps before it went through."""
    module = write_module("failing", FAILING_BUILDER)
    graph = {"builder": f"{module}:build", "params": {"fail_from": 6}}
    loaded = make_config(hooks=[{"type": "stop_at_step", "last_step": 50}], graph=graph, data=ENDLESS,
                         session={"engine": engine, "steps_per_run": steps_per_run})
    with pytest.raises(TrainingError) as raised:
        run_train(loaded)
    assert f"TensorFlow error {expected} InvalidArgumentError" in str(raised.value)


def test_the_end_of_run_line_and_summary_name_the_reason(tmp_path, linear_csv, write_module):
    """`hookrun train` prints the steps that ran and why it stopped; summary.json keeps the reason."""
    module = write_module("raiser", RAISER)
    config = base_config(hooks=[_raiser(module, "StopIteration"), {"type": "stop_at_step", "last_step": 50}],
                         data=ENDLESS)
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    run_dir = tmp_path / "run"
    result = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["train", str(path), "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    reason = f"hooks[0] (custom {module}:Raise).after_run() raised StopIteration"
    assert f"trained 3 steps (global step 0 → 3, {reason})" in result.output
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert (summary["stop_reason"], summary["end_of_data"], summary["steps"]) == (reason, False, 3)


#: A hook whose worker thread, registered with the session's coordinator, fails in the after_run of
#: step ``at`` (a non-recoverable error, reported through ``coord.stop_on_exception``); ``end`` records.
COORDINATED_THREAD = """
import threading

import tensorflow as tf

v1 = tf.compat.v1
ENDED = []


class ThreadFails(v1.train.SessionRunHook):
    def __init__(self, at):
        self._at = at

    def begin(self):
        self._global_step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self._coord = coord

    def after_run(self, run_context, run_values):
        if int(run_context.session.run(self._global_step)) != self._at:
            return

        def work():
            with self._coord.stop_on_exception():
                raise ValueError("the worker thread failed")

        thread = threading.Thread(target=work)
        self._coord.register_thread(thread)
        thread.start()
        thread.join()

    def end(self, session):
        ENDED.append(int(session.run(self._global_step)))
"""


@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_a_coordinator_threads_error_runs_end_then_fails(make_config, run_train, write_module, engine, tmp_path):
    """As MonitoredTrainingSession: should_stop() turns True, every hook's end() runs (the checkpoint at
    step 3 is written), then closing the session raises the thread's error: exit 1, named."""
    import sys

    import tensorflow as tf

    module = write_module("coordinated", COORDINATED_THREAD)
    hooks = [
        {"type": "custom", "class": f"{module}:ThreadFails", "args": {"at": 3}},
        {"type": "checkpoint_saver", "save_steps": 100},
        {"type": "stop_at_step", "last_step": 50},
    ]
    with pytest.raises(TrainingError) as raised:
        run_train(make_config(hooks=hooks, data=ENDLESS, session={"engine": engine}))
    assert str(raised.value) == (
        "training failed while closing the session after step 3: ValueError: the worker thread failed"
    )
    assert sys.modules[module].ENDED == [3]
    assert tf.train.latest_checkpoint(str(tmp_path / "run")).endswith("model.ckpt-3")


def test_validate_states_the_finishing_rules(tmp_path, linear_csv):
    """The plan's legend says what a hook's StopIteration and a coordinator thread's error do."""
    config = base_config(hooks=[{"type": "stop_at_step", "last_step": 3}])
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "a hook raising StopIteration or OutOfRangeError: as end of data (end runs), but the data did not end" in (
        result.stdout
    )
    assert "a coordinator thread's error (coord.request_stop(err)): the loop stops, end runs, then the error" in (
        result.stdout
    )
