"""The lifecycle trace: ``trace.jsonl`` through the real runner, the summary, and the wrapper itself."""

from __future__ import annotations

import pytest
import tensorflow as tf

from hookrun.runner.session.trace import TRACE_FILE, TraceRecorder, TracingHook, read_trace, summarize
from tests.conftest import NUM_ROWS

METHODS = ("begin", "after_create_session", "before_run", "after_run", "end")


def expected_calls(n_hooks: int, last_step: int, end_of_data: bool = False) -> list[tuple[int, str, int | None]]:
    """(position, method, step) in call order for a fresh run of ``last_step`` steps."""
    positions = range(n_hooks)
    calls = [(p, "begin", None) for p in positions] + [(p, "after_create_session", 0) for p in positions]
    for step in range(1, last_step + 1):
        calls += [(p, "before_run", step) for p in positions] + [(p, "after_run", step) for p in positions]
    if end_of_data:
        calls += [(p, "before_run", last_step + 1) for p in positions]
    return calls + [(p, "end", last_step) for p in positions]


def test_trace_records_every_method_of_every_hook_in_order(make_config, tmp_path, captured, loss_recorder):
    from hookrun.runner.trainer import train

    entry, results = loss_recorder.entry, loss_recorder.losses
    last_step = 4
    hooks = [{"type": "stop_at_step", "last_step": last_step}, entry, {"type": "history_saver", "every_n_step": 2}]
    result = train(make_config(hooks=hooks), run_dir=tmp_path / "run", console=captured.console, trace=True)

    records = read_trace(tmp_path / "run" / TRACE_FILE)
    assert [(r["position"], r["method"], r["step"]) for r in records] == expected_calls(len(hooks), last_step)
    names = {r["position"]: r["hook"] for r in records}
    assert names == {0: "stop_at_step", 1: "losses", 2: "history_saver"}
    assert all(r["duration"] >= 0 and "error" not in r for r in records)
    times = [r["time"] for r in records]
    assert times == sorted(times)
    # The wrapper hands each hook its own fetches back: the same losses as an untraced run, and history rows.
    traced = [float(v) for v in results()]
    assert [row["step"] for row in result.history] == [2, 4]
    results().clear()
    train(make_config(hooks=hooks), run_dir=tmp_path / "untraced", console=captured.console)
    assert len(traced) == last_step and traced == pytest.approx([float(v) for v in results()])


def test_the_summary_counts_match_the_steps(make_config, tmp_path, captured):
    from hookrun.runner.trainer import train

    last_step = 5
    hooks = [{"type": "nan_tensor"}, {"type": "stop_at_step", "last_step": last_step}]
    result = train(make_config(hooks=hooks), run_dir=tmp_path / "run", console=captured.console, trace=True)
    summary = result.trace_summary
    assert result.steps == last_step
    assert [(h.position, h.hook) for h in summary.hooks] == [(0, "nan_tensor"), (1, "stop_at_step")]
    for hook in summary.hooks:
        counts = {m: c.calls for m, c in hook.methods.items()}
        assert counts == {"begin": 1, "after_create_session": 1, "before_run": 5, "after_run": 5, "end": 1}
        assert all(c.total_seconds >= 0 and c.mean_seconds >= 0 for c in hook.methods.values())
        assert 0 <= summary.share(hook) <= 1
    assert summary.calls("before_run") == len(hooks) * last_step
    assert summary.loop_seconds == result.loop_seconds
    # The file says the same.
    from_file = summarize(read_trace(summary.path))
    assert [{m: c.calls for m, c in h.methods.items()} for h in from_file.hooks] == [
        {m: c.calls for m, c in h.methods.items()} for h in summary.hooks
    ]


def test_end_of_data_traces_the_failing_steps_before_run_but_not_its_after_run(make_config, tmp_path, captured):
    from hookrun.runner.trainer import train

    batch_size = 16
    data_steps = NUM_ROWS // batch_size
    loaded = make_config(data={"epochs": 1, "batch_size": batch_size}, hooks=[{"type": "nan_tensor"}])
    result = train(loaded, run_dir=tmp_path / "run", console=captured.console, trace=True)
    assert result.end_of_data
    records = read_trace(tmp_path / "run" / TRACE_FILE)
    assert [(r["position"], r["method"], r["step"]) for r in records] == expected_calls(1, data_steps, True)
    methods = result.trace_summary.hooks[0].methods
    assert methods["before_run"].calls == methods["after_run"].calls + 1 == data_steps + 1


def test_session_trace_in_the_config_turns_it_on(make_config, tmp_path, captured):
    from hookrun.runner.trainer import train

    loaded = make_config(hooks=[{"type": "stop_at_step", "last_step": 2}], session={"trace": True})
    result = train(loaded, run_dir=tmp_path / "run", console=captured.console)
    assert (tmp_path / "run" / TRACE_FILE).exists()
    assert result.trace_summary is not None


def test_trace_off_writes_nothing_and_wraps_no_hook(make_config, tmp_path, captured, monkeypatch):
    import hookrun.runner.training.session as session_phase
    from hookrun.runner.trainer import train

    seen = []
    original = session_phase.run_monitored

    def spy(tf_, train_op, hooks, *args, **kwargs):
        seen.extend(hooks)
        return original(tf_, train_op, hooks, *args, **kwargs)

    monkeypatch.setattr(session_phase, "run_monitored", spy)
    loaded = make_config(hooks=[{"type": "stop_at_step", "last_step": 2}])
    result = train(loaded, run_dir=tmp_path / "run", console=captured.console)
    assert not (tmp_path / "run" / TRACE_FILE).exists()
    assert result.trace_summary is None
    assert seen and not any(isinstance(h, TracingHook) for h in seen)


def test_a_failing_run_still_writes_its_trace_with_the_error(make_config, tmp_path, captured, write_module):
    from hookrun.common.errors import TrainingError
    from hookrun.runner.trainer import train
    from tests.conftest import NAN_BUILDER

    builder = write_module("nan_builder", NAN_BUILDER)
    graph = {"builder": f"{builder}:build", "params": {"nan_from": 2}}
    loaded = make_config(graph=graph, hooks=[{"type": "nan_tensor"}])
    with pytest.raises(TrainingError):
        train(loaded, run_dir=tmp_path / "run", console=captured.console, trace=True)
    last = read_trace(tmp_path / "run" / TRACE_FILE)[-1]
    assert (last["method"], last["step"], last["error"]) == ("after_run", 3, "NanLossDuringTrainingError")


class Inner(tf.compat.v1.train.SessionRunHook):
    def __init__(self):
        self.args = tf.compat.v1.train.SessionRunArgs(fetches={"x": 1}, feed_dict=None)
        self.seen = []

    def before_run(self, run_context):
        return self.args

    def after_run(self, run_context, run_values):
        self.seen.append(run_values)
        raise ValueError("boom")


def test_the_wrapper_returns_before_runs_result_unchanged_and_records_errors(tmp_path):
    recorder = TraceRecorder(tmp_path / TRACE_FILE, global_step=None)
    inner = Inner()
    (hook,) = recorder.wrap([inner], ["inner"])
    assert isinstance(hook, tf.compat.v1.train.SessionRunHook)
    assert hook.before_run(object()) is inner.args
    values = object()
    with pytest.raises(ValueError, match="boom"):
        hook.after_run(object(), values)
    assert inner.seen == [values]
    recorder.close()
    records = read_trace(tmp_path / TRACE_FILE)
    assert [(r["method"], r.get("error")) for r in records] == [("before_run", None), ("after_run", "ValueError")]
    assert recorder.summary().hooks[0].methods["after_run"].calls == 1
