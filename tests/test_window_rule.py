"""Issue 22, items 2-4: what a custom hook's fetches and feeds give under ``session.steps_per_run: N`` (N > 1).

The rule (docs/engine.md, "What a hook's fetches and feeds give"): each name a hook fetches or feeds
gives what ``MonitoredTrainingSession`` at N = 1 gives at the window's last step, or the config is
refused before the first step, naming the hook, the tensor and ``steps_per_run: 1``; a ``session.run``
the window cannot compute is an error naming the hook at that moment. Both session engines.
Real sessions, 12 steps at most; the per-step values come from the same config at N = 1.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from hookrun.common.errors import SetupError, TrainingError

HOOKS = """
import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
SEEN = []


class LossAndStep(v1.train.SessionRunHook):
    # as tensorflow/models' LoggingMetricHook: the loss by name, global_step as the variable
    def begin(self):
        self.step = v1.train.get_global_step()

    def before_run(self, run_context):
        return v1.train.SessionRunArgs({"loss": "loss:0", "step": self.step})

    def after_run(self, run_context, run_values):
        SEEN.append((int(run_values.results["step"]), float(run_values.results["loss"])))


class StepRead(v1.train.SessionRunHook):
    # as TensorFlow's ProfilerHook: training_util's global-step read tensor, built once, in a tuple
    def begin(self):
        from tensorflow.python.training import training_util

        self.args = v1.train.SessionRunArgs((training_util._get_or_create_global_step_read(),))

    def before_run(self, run_context):
        return self.args

    def after_run(self, run_context, run_values):
        SEEN.append(int(run_values.results[0]))


class Kernel(v1.train.SessionRunHook):
    def begin(self):
        self.kernel = v1.trainable_variables()[0]

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self.kernel)


class Labels(v1.train.SessionRunHook):
    def before_run(self, run_context):
        return v1.train.SessionRunArgs("labels:0")


class FeedFeatures(v1.train.FeedFnHook):
    def __init__(self):
        super().__init__(lambda: {"features:0": np.zeros([8, 2], np.float32)})


class FinalLoss(v1.train.FinalOpsHook):
    def __init__(self):
        super().__init__("loss:0")


class LossInEnd(v1.train.SessionRunHook):
    def end(self, session):
        session.run("loss:0")


class Counting(v1.train.SessionRunHook):
    # Lightning-style state: saved with each checkpoint, given back on resume
    def __init__(self):
        self.calls = 0

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]

    def after_run(self, run_context, run_values):
        self.calls += 1
        SEEN.append(self.calls)


class Saving(v1.train.CheckpointSaverHook):
    # a third-party CheckpointSaverHook subclass: Saver.save wants a SessionInterface
    def __init__(self, checkpoint_dir):
        super().__init__(checkpoint_dir, save_steps=5)


class Own(v1.train.SessionRunHook):
    # its own variable, op and fed placeholder: none of them in the loop, all passed on
    def begin(self):
        self.by = v1.placeholder(tf.int64, [], name="own_by")
        self.count = v1.get_variable("own_count", [], tf.int64, initializer=v1.zeros_initializer(), trainable=False)
        self.add = v1.assign_add(self.count, self.by)

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self.add, feed_dict={self.by: 2})

    def after_run(self, run_context, run_values):
        SEEN.append(int(run_context.session.run(self.count)))
"""


@pytest.fixture(params=["hookrun", "tf"])
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def hooks_module(write_module: Any, linear_csv: Any) -> str:
    return write_module("window_rule_hooks", HOOKS)


def _train(make_config: Any, run_train: Any, tmp_path: Any, module: str, name: str, n: int, engine: str,
           last_step: int = 12) -> Any:
    sys.modules.get(module) and sys.modules[module].SEEN.clear()
    hooks = [{"type": "custom", "class": f"{module}:{name}"}, {"type": "stop_at_step", "last_step": last_step}]
    loaded = make_config(hooks=hooks, filename=f"{name}{n}.yaml", data={"epochs": None},
                         session={"steps_per_run": n, "engine": engine})
    result = run_train(loaded, run_dir=tmp_path / f"run_{name}_{n}")
    return result, list(sys.modules[module].SEEN)


def test_loss_by_name_and_global_step_give_the_windows_last_step(make_config, run_train, tmp_path, hooks_module,
                                                                  engine):
    """`loss:0` is the loop's last-step loss (was: the unfed placeholder's InvalidArgumentError); global_step reads
    4, 9, 11 as TensorFlow does at steps 5, 10 and 12 (was: 0, 5, 10, the windows' first steps)."""
    _, per_step = _train(make_config, run_train, tmp_path, hooks_module, "LossAndStep", 1, engine)
    _, windows = _train(make_config, run_train, tmp_path, hooks_module, "LossAndStep", 5, engine)
    expected = [per_step[4], per_step[9], per_step[11]]  # (N = 1's steps race the increment: not compared)
    assert [step for step, _ in windows] == [4, 9, 11]
    assert [loss for _, loss in windows] == pytest.approx([loss for _, loss in expected], rel=1e-6)


def test_tf_global_step_read_tensor_gives_the_windows_last_step(make_config, run_train, tmp_path, hooks_module,
                                                                engine):
    _, windows = _train(make_config, run_train, tmp_path, hooks_module, "StepRead", 5, engine)
    assert windows == [4, 9, 11]


@pytest.mark.parametrize(
    ("name", "method", "tensor", "why"),
    [
        ("FeedFeatures", "before_run", "features:0", "feeds 'features:0'"),
        ("Kernel", "before_run", "", "reads variable"),
        ("Labels", "before_run", "labels:0", "computed inside the training step"),
        ("FinalLoss", "end", "loss:0", "runs final_ops 'loss:0'"),
    ],
)
def test_what_a_window_cannot_give_is_refused_before_the_first_step(make_config, run_train, tmp_path, hooks_module,
                                                                    engine, name, method, tensor, why):
    """A feed the loop would drop (was: silently dropped), a variable it writes (was: the first step's value), a
    tensor of the step's input and FinalOpsHook's final_ops (was: the unfed placeholder's error after training):
    refused with exit 2 before any step, naming the hook, the method, the tensor and the fix."""
    with pytest.raises(SetupError) as caught:
        _train(make_config, run_train, tmp_path, hooks_module, name, 5, engine)
    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert message.startswith(f"hooks[0] (custom {hooks_module}:{name}).{method}()"), message
    assert tensor in message and why in message and "set session.steps_per_run: 1" in message
    assert "hookrun_unfed_input" not in message
    assert not (tmp_path / f"run_{name}_5" / "checkpoint").exists()  # no step ran, no checkpoint


def test_a_session_run_the_window_cannot_compute_names_the_hook(make_config, run_train, tmp_path, hooks_module,
                                                                engine):
    with pytest.raises(TrainingError) as caught:
        _train(make_config, run_train, tmp_path, hooks_module, "LossInEnd", 5, engine)
    message = str(caught.value)
    assert message.startswith(f"hooks[0] (custom {hooks_module}:LossInEnd).end() runs 'loss:0'"), message
    assert "set session.steps_per_run: 1" in message and "hookrun_unfed_input" not in message


def test_a_hooks_own_variable_op_and_feed_pass_as_at_n_1(make_config, run_train, tmp_path, hooks_module, engine):
    _, seen = _train(make_config, run_train, tmp_path, hooks_module, "Own", 5, engine)
    assert seen == [2, 4, 6]  # one run of its op per window, fed 2 each time


def test_the_custom_hooks_example_runs_under_n(make_config, run_train, tmp_path, write_module, engine):
    """docs/custom-hooks.md's LossThresholdHook (its first code block, as printed) under N = 5: it gets the loss
    at the first window's last step and stops there (was: the unfed placeholder's error at step 1)."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "custom-hooks.md").read_text(encoding="utf-8")
    source = text.split("```python\n", 1)[1].split("```", 1)[0]
    module = write_module("loss_threshold", source)
    hooks = [{"type": "custom", "class": f"{module}:LossThresholdHook", "args": {"threshold": 1e9}},
             {"type": "stop_at_step", "last_step": 12}]
    loaded = make_config(hooks=hooks, data={"epochs": None}, session={"steps_per_run": 5, "engine": engine})
    assert run_train(loaded).final_global_step == 5


def test_a_builtin_hook_naming_a_variable_the_loop_writes_is_refused_at_its_line(make_config, run_train, tmp_path,
                                                                                 linear_csv):
    """logging_tensor naming linear/kernel under N = 5 (was: the window's first-step value, without a word):
    refused when the hooks are built, at the name's place, exit 2; global_step by name still resolves."""
    from hookrun.config_schemas.loader import ConfigError

    hooks = [{"type": "logging_tensor", "tensors": ["global_step:0", "linear/kernel"], "every_n_iter": 1},
             {"type": "stop_at_step", "last_step": 5}]
    loaded = make_config(hooks=hooks, data={"epochs": None}, session={"steps_per_run": 5})
    with pytest.raises(ConfigError) as caught:
        run_train(loaded)
    message = str(caught.value)
    assert "hooks[0].tensors[1]" in message and "reads variable 'linear/kernel'" in message, message
    assert "set session.steps_per_run: 1" in message and "global_step" not in message.split("named tensors")[0]


def test_a_custom_hooks_state_resumes_across_a_change_of_n(make_config, run_train, tmp_path, hooks_module, engine):
    """state_dict/load_state_dict are keyed by the user's class, wrapped or not: 4 calls at N = 1, then two
    windows at N = 5 continue from 4 (the wrapper's class name would have dropped it)."""
    hooks = [{"type": "custom", "class": f"{hooks_module}:Counting"}, {"type": "checkpoint_saver", "save_steps": 100},
             {"type": "stop_at_step", "last_step": 4}]
    run_train(make_config(hooks=hooks, filename="one.yaml", data={"epochs": None}, session={"engine": engine}),
              run_dir=tmp_path / "run")
    hooks[2]["last_step"] = 14
    sys.modules[hooks_module].SEEN.clear()
    run_train(make_config(hooks=hooks, filename="five.yaml", data={"epochs": None},
                          session={"engine": engine, "steps_per_run": 5}), run_dir=tmp_path / "run")
    assert sys.modules[hooks_module].SEEN == [5, 6]


def test_a_checkpoint_saver_subclass_saves_through_the_checked_session(make_config, run_train, tmp_path, hooks_module,
                                                                       engine):
    """Saver.save refuses what is not a SessionInterface: the session a wrapped hook gets is one."""
    out = tmp_path / "extra"
    hooks = [{"type": "custom", "class": f"{hooks_module}:Saving", "args": {"checkpoint_dir": str(out)}},
             {"type": "stop_at_step", "last_step": 12}]
    run_train(make_config(hooks=hooks, data={"epochs": None}, session={"engine": engine, "steps_per_run": 5}))
    import tensorflow as tf

    assert tf.train.latest_checkpoint(str(out)).endswith("model.ckpt-12")


SCALED_BUILDER = """
import tensorflow as tf

v1 = tf.compat.v1
MADE = {}


def build(features, labels, params):
    # the loss scale is made once, in the training graph; the loop's call captures it from outside
    graph = v1.get_default_graph()
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    if MADE.get("graph") is not graph:
        MADE.update(graph=graph, scale=v1.placeholder_with_default(tf.constant(1.0), [], name="loss_scale"))
    w = v1.get_variable("w", [int(features.shape[-1]), 1], initializer=v1.zeros_initializer())
    return {"loss": MADE["scale"] * tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))}


class FeedScale(v1.train.FeedFnHook):
    def __init__(self):
        super().__init__(lambda: {"loss_scale:0": 0.0})
"""


def test_a_feed_to_a_tensor_the_loop_reads_applies_to_every_step(make_config, run_train, tmp_path, write_module):
    """FeedFnHook feeding a tensor the loop captures from outside: passed on, and it holds for all 5 steps of each
    window (a zero loss scale leaves the weights at zero; without the feed they move)."""
    import tensorflow as tf

    module = write_module("scaled", SCALED_BUILDER)
    weights = {}
    for fed in (True, False):
        hooks = [{"type": "checkpoint_saver", "save_steps": 100}, {"type": "stop_at_step", "last_step": 12}]
        if fed:
            hooks.insert(0, {"type": "custom", "class": f"{module}:FeedScale"})
        loaded = make_config(hooks=hooks, filename=f"fed{fed}.yaml", data={"epochs": None},
                             graph={"builder": f"{module}:build"}, session={"steps_per_run": 5})
        result = run_train(loaded, run_dir=tmp_path / f"run{fed}")
        weights[fed] = tf.train.load_variable(tf.train.latest_checkpoint(str(result.run_dir)), "w")
    assert not weights[True].any() and weights[False].any()


def test_a_builtin_hook_naming_global_step_by_graph_name_gets_the_alias(make_config, run_train, tmp_path, linear_csv,
                                                                        captured):
    """logging_tensor naming global_step:0 under N = 5 logs what the `global_step` alias gives, global_step after
    each window (was: a read beside the loop: 0, 5, 10, the windows' first steps)."""
    hooks = [{"type": "logging_tensor", "tensors": ["global_step:0", "global_step"], "every_n_iter": 5},
             {"type": "stop_at_step", "last_step": 12}]
    run_train(make_config(hooks=hooks, data={"epochs": None}, session={"steps_per_run": 5}))
    import re

    by_name = re.findall(r"global_step:0 = (\d+)", captured.text)
    assert by_name == re.findall(r"global_step = (\d+)", captured.text) == ["5", "10", "12"], captured.text
