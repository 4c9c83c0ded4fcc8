"""Conformance: hookrun drives the SessionRunHook lifecycle exactly as a plain ``MonitoredSession`` loop does.

This is the contract any future session engine must keep. Each case runs the same recording hooks
through hookrun's runner (``hookrun.runner.trainer.train``, hooks as ``type: custom`` entries) and through
the hand-written TensorFlow loop (see ``conftest.py``), and asserts the two call sequences -- (method,
hook name, global step) -- are identical, then pins the sequence to TensorFlow's documented rules.
"""

from __future__ import annotations

import tensorflow as tf
import yaml
from typer.testing import CliRunner

from hookrun.cli.app import app
from hookrun.common.errors import TrainingError
from tests.conftest import ASSERT_BUILDER, NUM_ROWS, base_config

AB = ("A", "B")


def step_calls(first: int, last: int, names=AB) -> list[tuple[str, str, int]]:
    """before_run (at global step s-1) then after_run (at s), every hook in order, for steps first..last."""
    calls = []
    for step in range(first, last + 1):
        calls += [("before_run", n, step - 1) for n in names]
        calls += [("after_run", n, step) for n in names]
    return calls


def phase(method: str, step: int | None, names=AB) -> list[tuple[str, str, int | None]]:
    return [(method, n, step) for n in names]


def start(step: int = 0, names=AB) -> list[tuple[str, str, int | None]]:
    return phase("begin", None, names) + phase("after_create_session", step, names)


def test_normal_finish_via_stop_at_step(harness):
    last_step = 3
    hookrun_calls, result = harness.hookrun(
        [harness.recorder("A"), {"type": "stop_at_step", "last_step": last_step}, harness.recorder("B")]
    )
    plain_calls, error = harness.plain(
        lambda tf, Recorder, _: [Recorder("A"), tf.compat.v1.train.StopAtStepHook(last_step=last_step), Recorder("B")]
    )
    assert error is None and result.final_global_step == last_step
    assert hookrun_calls == plain_calls
    assert plain_calls == start() + step_calls(1, last_step) + phase("end", last_step)


def test_request_stop_from_a_hook_still_runs_every_after_run(harness):
    stop_at = 2
    hookrun_calls, result = harness.hookrun([harness.recorder("A", stop_at=stop_at), harness.recorder("B")])
    plain_calls, error = harness.plain(lambda tf, Recorder, _: [Recorder("A", stop_at=stop_at), Recorder("B")])
    assert error is None and result.final_global_step == stop_at
    assert hookrun_calls == plain_calls
    # B's after_run for the stopping step runs, then end; no further before_run.
    assert plain_calls == start() + step_calls(1, stop_at) + phase("end", stop_at)


def test_end_of_data_runs_end_but_not_that_steps_after_run(harness):
    data = {"epochs": 1, "batch_size": 16}
    data_steps = NUM_ROWS // 16
    hookrun_calls, result = harness.hookrun([harness.recorder("A"), harness.recorder("B")], data=data)
    plain_calls, error = harness.plain(lambda tf, Recorder, _: [Recorder("A"), Recorder("B")], data=data)
    assert error is None and result.end_of_data and result.final_global_step == data_steps
    assert hookrun_calls == plain_calls
    assert plain_calls == (
        start() + step_calls(1, data_steps) + phase("before_run", data_steps) + phase("end", data_steps)
    )


def test_graph_error_runs_neither_after_run_nor_end(harness, write_module):
    fail_from = 2  # the input assertion fails when global_step (before the increment) reaches it
    builder = write_module("assert_builder", ASSERT_BUILDER)
    graph = {"builder": f"{builder}:build", "params": {"fail_from": fail_from}}
    hookrun_calls, raised = harness.hookrun([harness.recorder("A"), harness.recorder("B")], graph=graph)
    plain_calls, error = harness.plain(lambda tf, Recorder, _: [Recorder("A"), Recorder("B")], graph=graph)
    assert isinstance(error, tf.errors.InvalidArgumentError)
    assert isinstance(raised, TrainingError) and isinstance(raised.__cause__, tf.errors.InvalidArgumentError)
    assert str(raised).startswith(f"TensorFlow error at step {fail_from + 1}: InvalidArgumentError")
    assert hookrun_calls == plain_calls
    assert plain_calls == start() + step_calls(1, fail_from) + phase("before_run", fail_from)


def test_a_hook_raising_in_after_run_stops_later_after_runs_and_end(harness):
    fail_at = 2
    names = ("A", "B", "C")
    hookrun_calls, raised = harness.hookrun(
        [harness.recorder("A"), harness.recorder("B", fail_in="after_run", fail_at=fail_at), harness.recorder("C")]
    )
    plain_calls, error = harness.plain(
        lambda tf, Recorder, _: [Recorder("A"), Recorder("B", fail_in="after_run", fail_at=fail_at), Recorder("C")]
    )
    assert isinstance(error, RuntimeError) and "B failed in after_run" in str(error)
    assert isinstance(raised, TrainingError) and "B failed in after_run at step 2" in str(raised)
    assert hookrun_calls == plain_calls
    assert plain_calls == (
        start(names=names)
        + step_calls(1, fail_at - 1, names)
        + phase("before_run", fail_at - 1, names)
        + [("after_run", "A", fail_at), ("after_run", "B", fail_at)]
    )


def test_a_hook_raising_in_end_stops_later_ends(harness):
    last_step = 2
    names = ("A", "B", "C")
    hookrun_calls, raised = harness.hookrun(
        [
            harness.recorder("A", stop_at=last_step),
            harness.recorder("B", fail_in="end"),
            harness.recorder("C"),
        ]
    )
    plain_calls, error = harness.plain(
        lambda tf, Recorder, _: [Recorder("A", stop_at=last_step), Recorder("B", fail_in="end"), Recorder("C")]
    )
    assert isinstance(error, RuntimeError) and "B failed in end" in str(error)
    assert isinstance(raised, TrainingError)
    assert str(raised) == (
        f"training failed in hooks[1] (custom {harness.module}:Recorder).end() after step {last_step}: "
        "RuntimeError: B failed in end"
    )
    assert hookrun_calls == plain_calls
    assert plain_calls == (
        start(names=names) + step_calls(1, last_step, names) + [("end", "A", last_step), ("end", "B", last_step)]
    )


def test_a_recoverable_error_recreates_the_session_and_resumes_from_the_checkpoint(harness):
    """An ``AbortedError`` is a preemption to ``_RecoverableSession``: close, re-create, restore, retry the step.

    ``begin`` is not called again, ``after_create_session`` is, and the global step goes back to
    the latest checkpoint (2, from ``save_steps: 2``); the retried step's ``before_run`` runs again
    for every hook, those before the raising hook included.
    """
    save_steps, abort_at, last_step = 2, 3, 5
    hookrun_calls, result = harness.hookrun(
        [
            harness.recorder("A"),
            {"type": "checkpoint_saver", "save_steps": save_steps},
            harness.recorder("B", abort_at=abort_at),
            {"type": "stop_at_step", "last_step": last_step},
        ]
    )

    def hooks(tf, Recorder, run_dir):
        saver = tf.compat.v1.train.CheckpointSaverHook(str(run_dir), save_steps=save_steps)
        stop = tf.compat.v1.train.StopAtStepHook(last_step=last_step)
        return [Recorder("A"), saver, Recorder("B", abort_at=abort_at), stop]

    plain_calls, error = harness.plain(hooks)
    assert error is None, error
    assert not isinstance(result, Exception), result
    assert hookrun_calls == plain_calls
    restored = abort_at - abort_at % save_steps  # 2: the latest checkpoint before the failing step
    assert plain_calls == (
        start()
        + step_calls(1, abort_at)
        + phase("before_run", abort_at)  # B raises AbortedError here: no run, no after_run
        + phase("after_create_session", restored)  # the session is re-created; no second begin
        + step_calls(restored + 1, last_step)
        + phase("end", last_step)
    )
    assert [c[0] for c in plain_calls].count("begin") == 2
    assert result.final_global_step == last_step


def test_two_hooks_feeding_the_same_tensor_fail_with_tensorflows_conflict_error(harness):
    hookrun_calls, raised = harness.hookrun(
        [harness.recorder("A", feed="loss:0"), harness.recorder("B", feed="loss:0")]
    )
    plain_calls, error = harness.plain(
        lambda tf, Recorder, _: [Recorder("A", feed="loss:0"), Recorder("B", feed="loss:0")]
    )
    assert isinstance(error, RuntimeError) and "Same tensor is fed by two hooks" in str(error)
    assert isinstance(raised, TrainingError) and "Same tensor is fed by two hooks" in str(raised)
    assert hookrun_calls == plain_calls
    assert plain_calls == start() + phase("before_run", 0)


def test_hookrun_train_reports_a_feed_conflict_as_one_line_exit_1(tmp_path, linear_csv, harness):
    config = base_config(hooks=[harness.recorder("A", feed="loss:0"), harness.recorder("B", feed="loss:0")])
    path = tmp_path / "conflict.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["train", str(path), "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Same tensor is fed by two hooks" in lines[0]
    assert "loss:0" in lines[0]
    assert "Traceback" not in result.output
