"""``session.steps_per_run: N`` (issue 17): N training steps per session call, every built-in hook still exact.

Each test trains the same config with one step per call and with N steps per call (real TensorFlow,
real files) and compares what the hooks did: checkpoint steps, stop step, history rows, summaries,
evaluations, NaN behaviour, end of data, resume, and the final weights.
"""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from hookrun.common.errors import SetupError, TrainingError
from hookrun.config_schemas.loader import ConfigError
from hookrun.runner.config import load_checked, load_config

from .conftest import NAN_BUILDER, event_scalars

#: 64 rows / batch 8: 8 steps per epoch; the default config runs 10 epochs (80 steps).
STEPS_PER_EPOCH = 8


def _config(tmp_path: Path, name: str, steps_per_run: int, hooks: list[dict[str, Any]], **sections: Any) -> Any:
    """A config in ``tmp_path`` (no shuffle: the same batches in the same order whatever N)."""
    config: dict[str, Any] = {
        "name": "t",
        "graph": {"builder": "linear_regressor", "optimizer": {"name": "adam", "learning_rate": 0.05}},
        "data": {"train": "data.csv", "label": "y", "batch_size": 8, "epochs": 10, "seed": 0, "shuffle": False},
        "session": {"steps_per_run": steps_per_run},
        "hooks": hooks,
    }
    for key, value in sections.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) and key in config else value
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return load_config(path)


def _checkpoint_steps(run_dir: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1].split(".")[0]) for p in run_dir.glob("model.ckpt-*.index"))


def _weights(run_dir: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(run_dir)))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _assert_same_weights(a: Path, b: Path) -> None:
    first, second = _weights(a), _weights(b)
    assert sorted(first) == sorted(second)
    for name in first:
        np.testing.assert_allclose(first[name], second[name], rtol=1e-5, atol=1e-6, err_msg=name)


def _per_step_losses(tmp_path: Path, run_train: Any, last_step: int, **sections: Any) -> list[float]:
    """The loss of every step 1..last_step with one step per call (history_saver every step)."""
    hooks = [
        {"type": "stop_at_step", "last_step": last_step},
        {"type": "history_saver", "every_n_step": 1},
        {"type": "checkpoint_saver", "save_steps": 1000},
    ]
    result = run_train(_config(tmp_path, "per_step", 1, hooks, **sections), run_dir=tmp_path / "per_step")
    assert [row["step"] for row in result.history] == list(range(1, last_step + 1))
    return [float(row["total_loss"]) for row in result.history]


#: A checkpoint_saver that saves only at the start and the end.
CHECKPOINT_AT_END = {"type": "checkpoint_saver", "save_steps": 1000}

STANDARD = [
    {"type": "nan_tensor"},
    {"type": "checkpoint_saver", "save_steps": 5},
    {"type": "history_saver", "every_n_step": 5},
    {"type": "summary_saver", "save_steps": 5, "tensors": ["loss"]},
    {"type": "step_counter", "every_n_steps": 5},
    {"type": "logging_tensor", "tensors": ["loss"], "every_n_iter": 5},
    {"type": "evaluation", "every_n_steps": 10},
    {"type": "early_stopping", "patience": 100},
    {"type": "progress_bar"},
    {"type": "stop_at_step", "last_step": 20},
]


@pytest.mark.parametrize("epochs", [10, None])  # None: data that never ends, the loop's plain get_next body
@pytest.mark.parametrize("engine", ["hookrun", "tf"])
def test_every_hook_matches_one_step_per_call(tmp_path, linear_csv, run_train, captured, engine, epochs):
    """N = 5 divides every hook's period: same checkpoints, stop, history, evaluations, weights as N = 1."""
    data = {"validation_split": 0.25, "epochs": epochs}
    session = {"engine": engine}
    one = run_train(_config(tmp_path, "one", 1, STANDARD, data=data, session={**session, "steps_per_run": 1}),
                    run_dir=tmp_path / "one")
    one_log = captured.text
    five = run_train(_config(tmp_path, "five", 5, STANDARD, data=data, session={**session, "steps_per_run": 5}),
                     run_dir=tmp_path / "five")
    five_log = captured.text[len(one_log):]

    assert one.final_global_step == five.final_global_step == 20
    assert one.steps == five.steps == 20
    assert _checkpoint_steps(tmp_path / "one") == _checkpoint_steps(tmp_path / "five") == [0, 5, 10, 15, 20]
    assert [r["step"] for r in five.history] == [r["step"] for r in one.history] == [5, 10, 15, 20]
    for a, b in zip(one.history, five.history, strict=True):
        assert a["mean_loss"] == pytest.approx(b["mean_loss"], rel=1e-5)
        assert a["total_loss"] == pytest.approx(b["total_loss"], rel=1e-5)
        assert (a["val_loss"] is None) == (b["val_loss"] is None)
        if a["val_loss"] is not None:
            assert a["val_loss"] == pytest.approx(b["val_loss"], rel=1e-5)
    assert [e["step"] for e in one.evaluations] == [e["step"] for e in five.evaluations] == [10, 20]
    _assert_same_weights(tmp_path / "one", tmp_path / "five")
    # The timer hooks fire first at the first step (run), then every 5 steps after: with windows of 5 steps,
    # at the first window boundary at or after each of those steps.
    for tag in ("loss", "global_step/sec"):
        steps_one = [s for s, _ in event_scalars(tmp_path / "one" / "train", tag)]
        steps_five = [s for s, _ in event_scalars(tmp_path / "five" / "train", tag)]
        assert steps_five == [math.ceil(s / 5) * 5 for s in steps_one], tag
    assert one_log.count("loss = ") == five_log.count("loss = ") == 4  # logging_tensor, every 5 steps
    assert "Training 20/20" in one_log and "Training 20/20" in five_log


@pytest.mark.parametrize("epochs", [10, None])  # finite data, and data that never ends (the plain get_next body)
def test_windows_that_do_not_divide_the_periods(tmp_path, linear_csv, run_train, epochs):
    """N = 7: hooks fire at the first window boundary at or after their step; the last window is shortened so
    the run stops at exactly last_step; history sums cover exactly each row's steps; weights equal N = 1's."""
    losses = _per_step_losses(tmp_path, run_train, 20, data={"epochs": epochs})
    hooks = [
        {"type": "checkpoint_saver", "save_steps": 5},
        {"type": "history_saver", "every_n_step": 5},
        {"type": "summary_saver", "save_steps": 5, "tensors": ["loss"]},
        {"type": "stop_at_step", "last_step": 20},
    ]
    seven = run_train(_config(tmp_path, "seven", 7, hooks, data={"epochs": epochs}), run_dir=tmp_path / "seven")
    assert seven.final_global_step == 20 and seven.steps == 20
    assert _checkpoint_steps(tmp_path / "seven") == [0, 7, 14, 20]  # windows end at 7, 14, then 20 (shortened)
    rows = [(r["step"], r["total_loss"], r["mean_loss"]) for r in seven.history]
    assert [step for step, _, _ in rows] == [7, 14, 20]
    start = 0
    for step, total, mean in rows:
        assert total == pytest.approx(sum(losses[start:step]), rel=1e-5)
        assert mean == pytest.approx(sum(losses[start:step]) / (step - start), rel=1e-5)
        start = step
    # Summaries: the window's last step's loss, at that step.
    for step, value in event_scalars(tmp_path / "seven" / "train", "loss"):
        assert value == pytest.approx(losses[step - 1], rel=1e-5)
    _assert_same_weights(tmp_path / "per_step", tmp_path / "seven")


@pytest.mark.parametrize("epochs", [10, None])  # None: the window's batches pulled at once; the unused ones dropped
def test_resume_under_n_loses_no_step_and_repeats_none(tmp_path, linear_csv, run_train, epochs):
    straight = run_train(
        _config(tmp_path, "straight", 1, [{"type": "stop_at_step", "last_step": 23}, CHECKPOINT_AT_END],
                data={"epochs": epochs}),
        run_dir=tmp_path / "straight",
    )
    assert straight.final_global_step == 23
    hooks = [{"type": "checkpoint_saver", "save_steps": 1000}, {"type": "history_saver", "every_n_step": 4}]
    first = run_train(
        _config(tmp_path, "resume", 4, [*hooks, {"type": "stop_at_step", "last_step": 10}], data={"epochs": epochs}),
        run_dir=tmp_path / "r",
    )
    assert first.final_global_step == 10  # windows 4, 4, 2
    second = run_train(
        _config(tmp_path, "resume", 4, [*hooks, {"type": "stop_at_step", "last_step": 23}], data={"epochs": epochs}),
        run_dir=tmp_path / "r",
    )
    assert second.initial_step == 10 and second.steps == 13 and second.final_global_step == 23
    _assert_same_weights(tmp_path / "straight", tmp_path / "r")
    assert [r["step"] for r in second.history] == [4, 8, 10, 14, 18, 22, 23]


def test_end_of_data_inside_a_window(tmp_path, linear_csv, run_train):
    """One epoch is 8 steps: windows of 5 run 5, then 3 (the data ends), then none: the run ends as with N = 1."""
    hooks = [
        {"type": "history_saver", "every_n_step": 5, "metrics": ["mae"]},  # a metric's window mean too
        {"type": "checkpoint_saver", "save_steps": 100},
    ]
    one = run_train(_config(tmp_path, "one", 1, hooks, data={"epochs": 1}), run_dir=tmp_path / "one")
    five = run_train(_config(tmp_path, "five", 5, hooks, data={"epochs": 1}), run_dir=tmp_path / "five")
    assert one.end_of_data and five.end_of_data
    assert one.final_global_step == five.final_global_step == five.steps == STEPS_PER_EPOCH
    assert [r["step"] for r in one.history] == [r["step"] for r in five.history] == [5, 8]
    for a, b in zip(one.history, five.history, strict=True):
        assert a["total_loss"] == pytest.approx(b["total_loss"], rel=1e-5)
        assert a["mae"] == pytest.approx(b["mae"], rel=1e-5)
    assert _checkpoint_steps(tmp_path / "five") == [0, STEPS_PER_EPOCH]
    _assert_same_weights(tmp_path / "one", tmp_path / "five")


@pytest.mark.parametrize("fail", [True, False])
def test_nan_loss_names_the_window(tmp_path, linear_csv, run_train, write_module, fail):
    module = write_module("nan_builder", NAN_BUILDER)
    graph = {"builder": f"{module}:build", "params": {"nan_from": 12}}  # the loss of step 13 is NaN
    hooks = [
        {"type": "nan_tensor", "fail_on_nan_loss": fail},
        {"type": "checkpoint_saver", "save_steps": 5},
        {"type": "stop_at_step", "last_step": 30},
    ]
    if fail:
        with pytest.raises(TrainingError, match="NaN loss at step 13"):
            run_train(_config(tmp_path, "one", 1, hooks, graph=graph), run_dir=tmp_path / "one")
        with pytest.raises(TrainingError, match=r"non-finite loss in the window of steps 11-15"):
            run_train(_config(tmp_path, "five", 5, hooks, graph=graph), run_dir=tmp_path / "five")
        assert _checkpoint_steps(tmp_path / "one") == _checkpoint_steps(tmp_path / "five") == [0, 5, 10]
    else:
        one = run_train(_config(tmp_path, "one", 1, hooks, graph=graph), run_dir=tmp_path / "one")
        five = run_train(_config(tmp_path, "five", 5, hooks, graph=graph), run_dir=tmp_path / "five")
        assert one.final_global_step == 13  # the NaN step; stop requested
        assert five.final_global_step == 15  # the end of the window holding it
        assert _checkpoint_steps(tmp_path / "five") == [0, 5, 10, 15]


def test_a_tf_variable_builder_trains_and_one_making_new_variables_each_call_is_refused(
    tmp_path, linear_csv, run_train, write_module
):
    module = write_module(
        "fresh_variables",
        """
        import tensorflow as tf

        CALLS = []

        def build(features, labels, params):
            w = tf.compat.v1.Variable(tf.zeros([int(features.shape[-1]), 1]), name="w")  # made anew by each call
            out = tf.matmul(features, w)
            if params.get("new_each_call"):  # a get_variable name the first call did not make: not the same model
                CALLS.append(1)
                out = out + tf.compat.v1.get_variable(f"extra_{len(CALLS)}", [], initializer=tf.zeros_initializer())
            return {"loss": tf.reduce_mean(tf.square(out - labels))}
        """,
    )
    import tensorflow as tf

    hooks = [{"type": "stop_at_step", "last_step": 3}, {"type": "checkpoint_saver", "save_steps": 100}]
    # The loop's call gets the first call's tf.Variable (runner/graph/fused.FirstCall): as one step per call
    weights = []
    for name, steps in (("c", 3), ("d", 1)):
        loaded = _config(tmp_path, name, steps, hooks, graph={"builder": f"{module}:build"})
        assert run_train(loaded, run_dir=tmp_path / name).final_global_step == 3
        weights.append(tf.train.load_variable(str(tmp_path / name), "w"))
    np.testing.assert_array_equal(weights[0], weights[1])
    loaded = _config(tmp_path, "e", 3, hooks, graph={"builder": f"{module}:build", "params": {"new_each_call": True}})
    with pytest.raises(ConfigError, match=r"creates a variable when called again inside the session.steps_per_run"):
        run_train(loaded, run_dir=tmp_path / "e")


@pytest.mark.parametrize("field", ["training_hooks", "training_chief_hooks"])
def test_a_model_fn_with_spec_hooks_is_refused_by_field(tmp_path, linear_csv, run_train, write_module, field):
    """Their per-step tensors would sit inside the loop: refused at the field, never silently half-run."""
    module = write_module(
        f"spec_hooks_{field}",
        f"""
        import tensorflow as tf
        from hookrun.runner import EstimatorSpec, layers

        def model_fn(features, labels, mode, params):
            out = layers.dense(features, 1, "out")
            loss = tf.reduce_mean(tf.square(out - labels))
            return EstimatorSpec(mode=mode, loss=loss, predictions=out,
                                 {field}=[tf.compat.v1.train.SessionRunHook()])

        model_fn.hookrun_features = "dense"
        """,
    )
    graph = {"builder": f"{module}:model_fn"}
    loaded = _config(tmp_path, "c", 3, [{"type": "stop_at_step", "last_step": 3}], graph=graph)
    with pytest.raises(ConfigError, match=rf"EstimatorSpec.{field}; under session.steps_per_run > 1"):
        run_train(loaded)


def test_a_tensor_of_the_unfed_first_call_is_refused_by_name(tmp_path, linear_csv, run_train):
    hooks = [{"type": "logging_tensor", "tensors": ["features:0"]}, {"type": "stop_at_step", "last_step": 3}]
    with pytest.raises(ConfigError, match="computed by the builder's first call"):
        run_train(_config(tmp_path, "c", 3, hooks))


def test_cluster_is_refused(tmp_path, linear_csv, monkeypatch):
    cluster = {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}
    loaded = _config(tmp_path, "c", 4, [{"type": "stop_at_step", "last_step": 3}], cluster=cluster)
    with pytest.raises(ConfigError, match=r"steps_per_run: 4 does not run on a cluster"):
        load_checked(loaded.path)
    from hookrun.runner.trainer import train

    plain = _config(tmp_path, "p", 4, [{"type": "stop_at_step", "last_step": 3}])
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}}))
    with pytest.raises(SetupError, match="does not run on a cluster"):
        train(plain, run_dir=tmp_path / "run")


def test_custom_hook_gets_a_warning_and_n(tmp_path, linear_csv, run_train, write_module):
    module = write_module(
        "window_hook",
        """
        import tensorflow as tf

        class Recorder(tf.compat.v1.train.SessionRunHook):
            seen = []

            def __init__(self, n):
                self.n = int(n)

            def after_run(self, run_context, run_values):
                Recorder.seen.append(self.n)
        """,
    )
    hooks = [
        {"type": "custom", "class": f"{module}:Recorder", "args": {"n": "${steps_per_run}"}},
        {"type": "stop_at_step", "last_step": 12},
    ]
    loaded = _config(tmp_path, "c", 4, hooks)
    _, issues = load_checked(loaded.path)
    assert any(i.severity == "warning" and "window" in i.message for i in issues)
    run_train(loaded)
    import sys

    assert sys.modules[module].Recorder.seen == [4, 4, 4]  # three windows of 4 steps


def test_a_signal_stops_after_the_current_window(tmp_path, linear_csv, run_train, write_module):
    module = write_module(
        "interrupter",
        """
        import os
        import signal

        import tensorflow as tf

        class Interrupt(tf.compat.v1.train.SessionRunHook):
            def begin(self):
                self.step = tf.compat.v1.train.get_global_step()

            def after_run(self, run_context, run_values):
                if run_context.session.run(self.step) >= 7:
                    os.kill(os.getpid(), signal.SIGINT)
        """,
    )
    hooks = [
        {"type": "custom", "class": f"{module}:Interrupt"},
        {"type": "checkpoint_saver", "save_steps": 1000},
        {"type": "stop_at_step", "last_step": 40},
    ]
    result = run_train(_config(tmp_path, "c", 5, hooks))
    assert result.signal == signal.SIGINT
    assert result.final_global_step == 10  # the window 6-10 that reached step 7 finished; no later one ran
    assert _checkpoint_steps(tmp_path / "run")[-1] == 10
    assert os.getpid()  # still alive: the signal was handled


def test_default_graph_has_no_loop(tmp_path, linear_csv):
    """N = 1 builds today's graph: no while loop, no bound variable."""
    from rich.console import Console

    from hookrun.runner.training.prepare import prepare

    loaded = _config(tmp_path, "c", 1, [{"type": "stop_at_step", "last_step": 3}])
    prepared = prepare(loaded, tmp_path / "run", Console(quiet=True))
    for close in prepared.on_close:
        close()
    types = {op.type for op in prepared.built.graph.get_operations()}
    assert "While" not in types and "StatelessWhile" not in types
    assert prepared.built.window is None
    loaded = _config(tmp_path, "d", 2, [{"type": "stop_at_step", "last_step": 3}])
    prepared = prepare(loaded, tmp_path / "run", Console(quiet=True))
    for close in prepared.on_close:
        close()
    assert prepared.built.window is not None and prepared.built.window.steps_per_run == 2


def _loop_op_types(graph: Any) -> set[str]:
    """The op types of the training loop's body and cond, and of the functions they call (a cond's branches)."""
    library = {function.signature.name: function for function in graph.as_graph_def().library.function}
    (loop,) = [op for op in graph.get_operations() if op.type in ("While", "StatelessWhile")]
    names = [loop.get_attr("body").name, loop.get_attr("cond").name]
    types: set[str] = set()
    while names:
        for node in library[names.pop()].node_def:
            types.add(node.op)
            names += [attr.func.name for attr in node.attr.values() if attr.HasField("func")]
    return types


@pytest.mark.parametrize(
    ("data", "endless", "stacked"),
    [
        ({"epochs": None}, True, True),  # repeats forever: the window pulled once per call, no optional, no cond
        ({"epochs": None, "shuffle": True}, True, True),
        ({"epochs": None}, True, False),  # batches too large to stack: a plain get_next per step
        ({"epochs": 10}, False, False),  # ends: the body that ends the window where the data ends
        ({"epochs": 1}, False, False),
    ],
)
def test_the_loop_body_follows_the_input_cardinality(tmp_path, linear_csv, monkeypatch, data, endless, stacked):
    from rich.console import Console

    import hookrun.runner.graph.build as build
    from hookrun.runner.training.prepare import prepare

    if endless and not stacked:
        monkeypatch.setattr(build, "WINDOW_BYTES", 0)
    loaded = _config(tmp_path, "c", 4, [{"type": "stop_at_step", "last_step": 3}], data=data)
    prepared = prepare(loaded, tmp_path / "run", Console(quiet=True))
    prepared.close()
    graph = prepared.built.graph
    types = _loop_op_types(graph)
    assert ("IteratorGetNext" in types) is (endless and not stacked)
    assert ("IteratorGetNextAsOptional" in types) is not endless
    assert ("If" in types or "StatelessIf" in types) is not endless
    # stacked: one pull of the window's batches per call, outside the loop (in the cond that takes them from the
    # window carry instead after a shortened window), from an initialized iterator
    library = {function.signature.name: function for function in graph.as_graph_def().library.function}
    conds = [op for op in graph.get_operations() if op.name == "window"]
    pulls = [node for op in conds for branch in ("then_branch", "else_branch")
             for node in library[op.get_attr(branch).name].node_def
             if node.op == "IteratorGetNext"]
    assert len(pulls) == (1 if stacked else 0)
    if stacked:
        assert pulls[0].attr["output_shapes"].list.shape[0].dim[0].size == 4  # N batches per element


def _fused_on(tf: Any, dataset: Any, steps_per_run: int, stacked: bool = False) -> tuple[Any, Any, Any]:
    """The fused loop of a one-weight model ``w * x`` (loss ``mean((w x - y)^2)``, SGD) on ``dataset``, in a new graph.

    With ``stacked`` the loop gets the window's batches stacked (``batch(N, drop_remainder=True)``), as
    ``hookrun train`` gives it for an endless input of same-shaped batches.
    Returns ``(graph, window, endless)``.
    """
    from hookrun.runner.graph.fused import build_fused_train, endless_input

    v1 = tf.compat.v1
    global_step = v1.train.get_or_create_global_step()
    optimizer = v1.train.GradientDescentOptimizer(0.1)

    def model(features: Any, labels: Any) -> Any:
        w = v1.get_variable("w", [], initializer=v1.ones_initializer())
        return tf.reduce_mean(tf.square(w * features - labels))

    loss = model(v1.placeholder(tf.float32, [None]), v1.placeholder(tf.float32, [None]))
    optimizer.minimize(loss, global_step=global_step)

    def step(features: Any, labels: Any) -> Any:
        step_loss = model(features, labels)
        return optimizer.minimize(step_loss, global_step=global_step), {"loss": step_loss}

    endless = endless_input(tf, dataset)
    _, window = build_fused_train(
        tf, steps_per_run=steps_per_run, iterator=v1.data.make_one_shot_iterator(dataset), step=step,
        named={"loss": loss, "global_step": global_step}, global_step=global_step, builder_name="m",
        endless=endless,
        windows=(lambda n: v1.data.make_one_shot_iterator(dataset.batch(n, drop_remainder=True))) if stacked else None,
    )
    return v1.get_default_graph(), window, endless


def _run_windows(tf: Any, graph: Any, window: Any, calls: int) -> list[Any]:
    """``(steps, global_step, loss sum)`` of each of ``calls`` calls; the error a call raised ends the list."""
    out: list[Any] = []
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        session.run([tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer()])
        for _ in range(calls):
            try:
                out.append(session.run([window.steps, window.global_step, window.sums["loss"]]))
            except tf.errors.OutOfRangeError as err:
                out.append(type(err))
                break
    return out


@pytest.mark.parametrize("stacked", [False, True])
@pytest.mark.parametrize("empty", ["filter", "slices"])
def test_an_empty_input_repeated_forever_raises_at_the_first_call(empty, stacked):
    """Repeated forever, an empty input (infinite to tf.data when its size is unknown) ends at its first pull:
    the call runs no step and raises the iterator's OutOfRangeError, as one step per call does."""
    import tensorflow as tf

    with tf.Graph().as_default():
        rows = tf.data.Dataset.from_tensor_slices((tf.zeros([0]), tf.zeros([0])))
        if empty == "filter":  # unknown size: repeat() makes it infinite
            rows = rows.filter(lambda x, y: True)
        graph, window, endless = _fused_on(tf, rows.repeat().batch(2), 5, stacked=stacked)
        assert endless is (empty == "filter")  # a known empty input repeats to 0 elements: finite
        assert _run_windows(tf, graph, window, 3) == [tf.errors.OutOfRangeError]


@pytest.mark.parametrize("stacked", [False, True])  # one get_next per step, or the window's batches in one
def test_an_endless_input_runs_full_windows_and_the_bound(stacked):
    """Data that never ends: every call runs the bound's steps, each on its own batch, sums exact."""
    import tensorflow as tf

    with tf.Graph().as_default():
        x = np.arange(1, 7, dtype=np.float32)
        rows = tf.data.Dataset.from_tensor_slices((x, 2 * x)).filter(lambda x, y: True)
        graph, window, endless = _fused_on(tf, rows.repeat().batch(2), 4, stacked=stacked)
        assert endless
        # Expected: the same SGD steps in numpy, batch after batch (3 batches an epoch).
        w, losses = 1.0, []
        batches = [(x[i:i + 2], 2 * x[i:i + 2]) for i in range(0, 6, 2)]
        for i in range(12):
            bx, by = batches[i % 3]
            losses.append(float(np.mean((w * bx - by) ** 2)))
            w -= 0.1 * float(np.mean(2 * (w * bx - by) * bx))
        windows = _run_windows(tf, graph, window, 3)
        assert [(int(s), int(g)) for s, g, _ in windows] == [(4, 4), (4, 8), (4, 12)]
        for k, (_, _, total) in enumerate(windows):
            assert total == pytest.approx(sum(losses[4 * k:4 * k + 4]), rel=1e-5)


def test_early_stopping_stops_at_the_same_window_boundary(tmp_path, linear_csv, run_train):
    """An evaluation every 5 steps and a patience of 1 that no change can meet: both stop after the second one."""
    hooks = [
        {"type": "evaluation", "every_n_steps": 5},
        {"type": "early_stopping", "patience": 1, "min_delta": 1e9},
        {"type": "stop_at_step", "last_step": 40},
    ]
    data = {"validation_split": 0.25}
    one = run_train(_config(tmp_path, "one", 1, hooks, data=data), run_dir=tmp_path / "one")
    five = run_train(_config(tmp_path, "five", 5, hooks, data=data), run_dir=tmp_path / "five")
    assert one.final_global_step == five.final_global_step == 10
    assert [e["step"] for e in one.evaluations] == [e["step"] for e in five.evaluations] == [5, 10]
    for a, b in zip(one.evaluations, five.evaluations, strict=True):
        assert a["val_loss"] == pytest.approx(b["val_loss"], rel=1e-5)


def test_the_trace_numbers_windows_by_their_first_step(tmp_path, linear_csv, captured):
    from hookrun.runner.session.trace import TRACE_FILE, read_trace
    from hookrun.runner.trainer import train

    hooks = [{"type": "checkpoint_saver", "save_steps": 100}, {"type": "stop_at_step", "last_step": 17}]
    train(_config(tmp_path, "c", 5, hooks), run_dir=tmp_path / "run", console=captured.console, trace=True)
    records = read_trace(tmp_path / "run" / TRACE_FILE)
    steps = [r["step"] for r in records if r["method"] == "before_run" and r["position"] == 0]
    assert steps == [1, 6, 11, 16]  # windows 1-5, 6-10, 11-15, 16-17 (shortened to stop at 17)
    assert [r["step"] for r in records if r["method"] == "end"] == [17, 17]


NAN_WEIGHTS_BUILDER = """
import tensorflow as tf


def build(features, labels, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    mse = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    step = v1.train.get_global_step()
    scale = tf.where(step >= int(params["nan_from"]), tf.constant(float("nan")), tf.constant(1.0))
    return {"loss": tf.identity(mse * scale, name="loss")}  # its gradient is NaN too: the weights go NaN
"""


def test_no_non_finite_weights_are_checkpointed_at_a_window_boundary(tmp_path, linear_csv, run_train, write_module):
    module = write_module("nan_weights", NAN_WEIGHTS_BUILDER)
    graph = {"builder": f"{module}:build", "params": {"nan_from": 6}}  # steps 7.. train on a NaN loss
    hooks = [  # the checkpoint before nan_tensor: the window 6-10 ends with NaN weights and a save due
        {"type": "checkpoint_saver", "save_steps": 5},
        {"type": "nan_tensor"},
        {"type": "stop_at_step", "last_step": 30},
    ]
    with pytest.raises(TrainingError, match="weights are not finite at step 10; that checkpoint was not written"):
        run_train(_config(tmp_path, "c", 5, hooks, graph=graph))
    assert _checkpoint_steps(tmp_path / "run") == [0, 5]
