"""The GPU switches (``session.mixed_precision``, ``global_jit_level``, ``allow_growth``,
``per_process_gpu_memory_fraction``): they reach the session's ``ConfigProto``, and a real session with
each one on builds and trains on this CPU-only machine (graph validity only: verified on GPU: no).
"""

from __future__ import annotations

import math

import pytest
import tensorflow as tf

from hookrun.config_schemas.loader import ConfigError
from hookrun.runner.graph.device import resolve_device, session_config
from tests.conftest import user_module

#: A custom hook keeping the ConfigProto of the session it is given, and every step's loss.
CONFIG_SPY = """
import tensorflow as tf

CONFIGS = []
LOSSES = []


class ConfigSpy(tf.compat.v1.train.SessionRunHook):
    def begin(self):
        self.loss = tf.compat.v1.get_default_graph().get_tensor_by_name("loss:0")

    def after_create_session(self, session, coord):
        CONFIGS.append(session._config)

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.loss)

    def after_run(self, run_context, run_values):
        LOSSES.append(float(run_values.results))
"""

#: Each switch as a config key and value, and how it reads in the session's ConfigProto.
SWITCHES = {
    "mixed_precision": (True, lambda c: c.graph_options.rewrite_options.auto_mixed_precision == 1),  # ON
    "global_jit_level": ("on_1", lambda c: c.graph_options.optimizer_options.global_jit_level == 1),
    "allow_growth": (True, lambda c: c.gpu_options.allow_growth is True),
    "per_process_gpu_memory_fraction": (
        0.25, lambda c: math.isclose(c.gpu_options.per_process_gpu_memory_fraction, 0.25)
    ),
}


def test_session_config_sets_each_switch_and_leaves_the_default_proto_alone() -> None:
    plan = resolve_device("cpu", 0)
    assert session_config(tf, plan) == tf.compat.v1.ConfigProto(allow_soft_placement=False, device_count={"GPU": 0})
    on = session_config(
        tf, plan, mixed_precision=True, global_jit_level="on_2", allow_growth=True, per_process_gpu_memory_fraction=0.5
    )
    assert on.graph_options.rewrite_options.auto_mixed_precision == 1  # RewriterConfig.ON
    assert on.graph_options.optimizer_options.global_jit_level == 2  # OptimizerOptions.ON_2
    assert on.gpu_options.allow_growth is True
    assert on.gpu_options.per_process_gpu_memory_fraction == 0.5
    off = session_config(tf, plan, global_jit_level="off")
    assert off.graph_options.optimizer_options.global_jit_level == -1  # OptimizerOptions.OFF


@pytest.mark.parametrize("steps_per_run", [1, 4])
@pytest.mark.parametrize("switch", list(SWITCHES))
def test_a_real_session_with_the_switch_on_trains(switch, steps_per_run, write_module, make_config, run_train) -> None:
    module = write_module("spy", CONFIG_SPY)
    value, is_set = SWITCHES[switch]
    loaded = make_config(
        hooks=[{"type": "custom", "class": f"{module}:ConfigSpy"}, {"type": "stop_at_step", "last_step": 8}],
        session={switch: value, "steps_per_run": steps_per_run},
    )
    result = run_train(loaded)
    assert result.final_global_step == 8
    spy = user_module(module)
    assert len(spy.CONFIGS) == 1 and is_set(spy.CONFIGS[0]), spy.CONFIGS
    assert spy.LOSSES and all(math.isfinite(loss) for loss in spy.LOSSES), spy.LOSSES
    assert spy.LOSSES[-1] < spy.LOSSES[0]  # it learns: the updates were applied (loss scaling skips none here)
    idle = [note for note in result.notes if "act on GPUs only" in note]
    # on the CPU the user is told the switch is idle (XLA can compile for the CPU too: no note)
    assert idle == ([] if switch == "global_jit_level" else [
        f"session.{switch}: the model runs on the CPU; the float16 rewrite and the GPU memory options act on GPUs "
        "only (docs/devices.md)"
    ]), result.notes


def test_mixed_precision_scales_the_loss_and_checkpoints_the_scale(make_config, run_train, tmp_path) -> None:
    loaded = make_config(
        hooks=[{"type": "checkpoint_saver", "save_steps": 4}, {"type": "stop_at_step", "last_step": 4}],
        session={"mixed_precision": True},
    )
    run_train(loaded)
    names = dict(tf.train.list_variables(str(tmp_path / "run")))
    scale = [name for name in names if "loss_scale" in name and "good_steps" not in name]
    assert scale, sorted(names)
    assert float(tf.train.load_variable(str(tmp_path / "run"), scale[0])) == 2.0**15  # the dynamic scale's start


#: A model_fn returning its own train_op: hookrun cannot wrap its optimizer for loss scaling.
OWN_TRAIN_OP = """
import tensorflow as tf
from hookrun.runner import EstimatorSpec


def model_fn(features, labels, mode, params):
    w = tf.compat.v1.get_variable("w", [2, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w)[:, 0] - labels))
    step = tf.compat.v1.train.get_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return EstimatorSpec(mode=mode, loss=loss, train_op=train_op)
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_mixed_precision_with_a_model_fns_own_train_op_is_refused_at_the_key(write_module, make_config, run_train):
    module = write_module("own", OWN_TRAIN_OP)
    loaded = make_config(graph={"builder": f"{module}:model_fn"}, session={"mixed_precision": True})
    with pytest.raises(ConfigError) as info:
        run_train(loaded)
    message = str(info.value)
    assert "config.yaml:" in message and "session.mixed_precision" in message and "own train_op" in message


@pytest.mark.parametrize(
    ("session", "expected"),
    [
        ({"per_process_gpu_memory_fraction": 1.5}, "must be at most 1.0 (got 1.5)"),
        ({"per_process_gpu_memory_fraction": -0.1}, "must be at least 0.0"),
        ({"per_process_gpu_memory_fraction": float("nan")}, "must be a finite number"),
        ({"global_jit_level": "on"}, "did you mean `on_1`"),
        ({"allow_growth": "sometimes"}, "session.allow_growth: must be true or false"),
    ],
)
def test_bad_switch_values_are_config_errors_at_their_line(session, expected, make_config) -> None:
    with pytest.raises(ConfigError) as info:
        make_config(session=session)
    message = str(info.value)
    assert "config.yaml:" in message and expected in message, message


def test_turning_mixed_precision_on_when_resuming_names_the_key(make_config, run_train) -> None:
    from hookrun.common.errors import TrainingError

    hooks = [{"type": "checkpoint_saver", "save_steps": 2}, {"type": "stop_at_step", "last_step": 2}]
    run_train(make_config(hooks=hooks))
    hooks[1]["last_step"] = 4
    with pytest.raises(TrainingError) as info:  # the checkpoint has no loss scale: restoring it fails, named
        run_train(make_config(hooks=hooks, session={"mixed_precision": True}))
    assert "current_loss_scale" in str(info.value) and "session.mixed_precision" in str(info.value), info.value
    off = run_train(make_config(hooks=hooks))  # back off: it resumes as it was
    assert off.initial_step == 2 and off.final_global_step == 4


def test_turning_mixed_precision_off_when_resuming_resumes(make_config, run_train, tmp_path) -> None:
    hooks = [{"type": "checkpoint_saver", "save_steps": 2}, {"type": "stop_at_step", "last_step": 2}]
    run_train(make_config(hooks=hooks, session={"mixed_precision": True}), tmp_path / "mixed")
    hooks[1]["last_step"] = 4
    off = run_train(make_config(hooks=hooks), tmp_path / "mixed")  # the checkpoint's loss scale is left unread
    assert off.initial_step == 2 and off.final_global_step == 4
