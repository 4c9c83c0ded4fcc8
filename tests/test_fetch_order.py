"""Issue 11 item 11: a hook reading ``global_step`` in the same run as the train op (OpenSeq2Seq's
``PrintLossAndTimeHook``, TensorFlow's ``ProfilerHook``) got the value before or after the increment at
TensorFlow's whim.

Two facts, tested here: hookrun's engine hands the C session exactly the fetches and targets
``Session.run`` hands it for the same step (so both engines run the same pruned graph), and in that
graph the train op that hookrun builds waits for the ``global_step`` reads a hook fetches (the variable's
snapshot and TensorFlow's cached read tensor), so a hook sees the value before its step's update on every
step, as under ``session.steps_per_run`` > 1. A ``model_fn``'s own ``train_op`` is the user's graph: there
the race is TensorFlow's (docs/custom-hooks.md).
"""

from __future__ import annotations

import pytest
from tensorflow.python.client import pywrap_tf_session as c_api

import hookrun.runner.session.engine as engine_module
from tests.conftest import user_module

#: As OpenSeq2Seq's PrintLossAndTimeHook: the loss and global_step, fetched with the train op.
PRINT_LOSS_AND_TIME = """
import tensorflow as tf

STEPS = []


class PrintLossAndTime(tf.compat.v1.train.SessionRunHook):
    def begin(self):
        self.global_step = tf.compat.v1.train.get_global_step()
        self.loss = tf.compat.v1.get_default_graph().get_tensor_by_name("loss:0")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs([self.loss, self.global_step])

    def after_run(self, run_context, run_values):
        loss, step = run_values.results
        STEPS.append(int(step))
"""


def names(fetch_list, target_list):
    fetched = sorted(f"{c_api.TF_OperationName(out.oper)}:{out.index}" for out in fetch_list)
    targets = sorted(c_api.TF_OperationName(op) for op in target_list)
    return tuple(fetched), tuple(targets)


def step_calls(monkeypatch, engine, make_config, run_train, module, tmp_path):
    """Every session call that runs the train op: (sorted fetch names, sorted target names)."""
    calls = []
    original = c_api.TF_SessionRun_wrapper

    def spy(session, options, feeds, fetch_list, target_list, run_metadata):
        calls.append(names(fetch_list, target_list))
        return original(session, options, feeds, fetch_list, target_list, run_metadata)

    monkeypatch.setattr(c_api, "TF_SessionRun_wrapper", spy)  # Session.run's path
    monkeypatch.setattr(engine_module, "_session_run", spy)  # the hookrun engine's cached step call
    hooks = [
        {"type": "custom", "class": f"{module}:PrintLossAndTime"},
        {"type": "stop_at_step", "last_step": 3},
    ]
    run_train(make_config(hooks=hooks, session={"engine": engine}), run_dir=tmp_path / engine)
    monkeypatch.undo()
    train_op = result_train_op_name(calls)
    return [call for call in calls if train_op in call[1]]


def result_train_op_name(calls):
    """The train op: the one target run on every step (three steps here)."""
    counts: dict[str, int] = {}
    for _, targets in calls:
        for target in targets:
            counts[target] = counts.get(target, 0) + 1
    return max(counts, key=counts.get)


def test_both_engines_hand_the_session_the_same_fetches_and_targets(
    monkeypatch, make_config, run_train, write_module, tmp_path
):
    module = write_module("print_loss", PRINT_LOSS_AND_TIME)
    hookrun_calls = step_calls(monkeypatch, "hookrun", make_config, run_train, module, tmp_path)
    tf_calls = step_calls(monkeypatch, "tf", make_config, run_train, module, tmp_path)
    assert len(hookrun_calls) == len(tf_calls) == 3
    assert hookrun_calls == tf_calls
    fetched, targets = tf_calls[0]
    assert "global_step/Read/ReadVariableOp:0" in fetched and "loss:0" in fetched
    assert len(user_module(module).STEPS) == 6  # 3 steps, each engine


def ancestors(op):
    """Every op ``op`` depends on, through its inputs and control inputs."""
    seen, todo = set(), [op]
    while todo:
        current = todo.pop()
        for parent in [t.op for t in current.inputs] + list(current.control_inputs):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


@pytest.mark.parametrize("builder", ["linear_regressor", "dnn_regressor"])
def test_the_global_step_reads_come_before_the_train_ops_increment(make_config, builder):
    """A hook fetching ``global_step`` (the variable, or TensorFlow's cached read tensor, as ``ProfilerHook`` and
    ``StepCounterHook`` do) beside hookrun's train op gets the value before the step's update, every step. In
    TensorFlow nothing orders them (1 post-increment read in 2,000 plain steps; under load a ProfilerHook at N = 1
    read 1 where the same graph under MonitoredTrainingSession read 2): hookrun's optimizer waits for both reads."""
    from rich.console import Console

    from hookrun.hooks.tf_internals import global_step_read
    from hookrun.runner.training.prepare import prepare

    loaded = make_config(hooks=[], graph={"builder": builder})
    prepared = prepare(loaded, loaded.base_dir / "never_written", Console(quiet=True))
    graph = prepared.built.graph
    reads = [
        global_step_read(graph).op,  # the tensor TensorFlow's hooks' begin() will get: made by hookrun already
        graph.get_operation_by_name("global_step/Read/ReadVariableOp"),  # what fetching the variable runs
    ]
    train_op = prepared.built.train_op
    train_op = getattr(train_op, "op", train_op)
    handle = graph.get_operation_by_name("global_step")
    increments = [
        op
        for op in ancestors(train_op) | {train_op}
        if op.type in ("AssignAddVariableOp", "AssignVariableOp") and handle in [t.op for t in op.inputs]
    ]
    assert increments, "the train op increments global_step"
    for increment in increments:
        for read in reads:
            assert read in ancestors(increment), read.name
