"""The model_fn builder form: ``fn(features, labels, mode, params) -> EstimatorSpec`` (issue 16 b)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hookrun.config_schemas.loader import ConfigError
from hookrun.runner.config import load_config
from tests.conftest import user_module

MODEL_FN = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys, layers

CALLS = []
EVENTS = []


class Recorder(tf.compat.v1.train.SessionRunHook):
    def __init__(self, name):
        self.name = name

    def begin(self):
        EVENTS.append((self.name, "begin"))

    def after_run(self, run_context, run_values):
        EVENTS.append((self.name, "after_run"))

    def end(self, session):
        EVENTS.append((self.name, "end"))


def model_fn(features, labels, mode, params):
    CALLS.append((mode, dict(params), labels is None))
    out = layers.dense(features, 1, "linear")
    loss = tf.reduce_mean(tf.square(out - labels))
    train_op = None
    if mode == ModeKeys.TRAIN and params.get("own_train_op"):
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    spec = dict(
        mode=mode,
        loss=loss,
        train_op=train_op,
        predictions={"doubled": 2 * out, "predictions": out},
        eval_metric_ops={"mae": tf.compat.v1.metrics.mean_absolute_error(labels, out)},
        training_hooks=[Recorder("first"), Recorder("second")],
    )
    return spec if params.get("as_dict") else EstimatorSpec(**spec)
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize("as_dict, engine", [(False, "hookrun"), (True, "hookrun"), (False, "tf")])
def test_model_fn_gets_mode_and_params_and_its_training_hooks_run_after_the_yaml_hooks(
    make_config, write_module, run_train, tmp_path, as_dict, engine
):
    module = write_module("mfn", MODEL_FN)
    loaded = make_config(
        graph={"builder": f"{module}:model_fn", "params": {"k": 1, "as_dict": as_dict}},
        data={"validation_split": 0.25, "epochs": 1},
        hooks=[
            {"type": "evaluation", "every_n_steps": 3},
            {"type": "history_saver", "every_n_step": 1},
        ],
        session={"trace": True, "engine": engine},
    )
    result = run_train(loaded)
    calls = user_module(module).CALLS
    # params exactly as written: hookrun's label_scale is in config.hookrun (tests/test_estimator_programs.py)
    assert calls == [("train", {"k": 1, "as_dict": as_dict}, False), ("eval", {"k": 1, "as_dict": as_dict}, False)]
    events = user_module(module).EVENTS
    assert events[:2] == [("first", "begin"), ("second", "begin")]
    steps = result.final_global_step
    assert events.count(("first", "after_run")) == steps == events.count(("second", "after_run"))
    runs = [e for e in events if e[1] == "after_run"]
    assert runs[:2] == [("first", "after_run"), ("second", "after_run")]
    assert events[-2:] == [("first", "end"), ("second", "end")]
    trace = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    begins = [(t["position"], t["hook"]) for t in trace if t["method"] == "begin"]
    assert begins[-2:] == [(2, "training_hooks[0] Recorder"), (3, "training_hooks[1] Recorder")]
    assert begins[0][0] == 0
    assert "val_mae" in result.history_columns  # eval_metric_ops are the evaluation's val_<name>


PREDICTIONS = """
import tensorflow as tf

from hookrun.runner import layers


def model_fn(features, labels, mode, params):
    out = layers.dense(features, 1, "linear")
    loss = tf.reduce_mean(tf.square(out - labels))
    named = {"first": tf.identity(out, name="first_out"), "second": tf.identity(2 * out, name="second_out")}
    if params["with_key"]:
        named["predictions"] = tf.identity(3 * out, name="chosen_out")
    return {"loss": loss, "predictions": named}
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize("with_key, chosen", [(True, "chosen_out"), (False, "first_out")])
def test_dict_predictions_the_entry_named_predictions_else_the_first(
    make_config, write_module, tmp_path, with_key, chosen
):
    from rich.console import Console

    from hookrun.runner.training.prepare import prepare

    module = write_module("pred", PREDICTIONS)
    loaded = make_config(
        graph={"builder": f"{module}:model_fn", "params": {"with_key": with_key}},
        data={"validation_split": 0.25},
        hooks=[{"type": "evaluation", "every_n_steps": 3}],
    )
    built = prepare(loaded, tmp_path / "run", Console(quiet=True)).built
    assert built.named["predictions"].op.name == chosen
    assert built.evaluation.predictions.op.inputs[0].op.name == f"evaluation/{chosen}"
    assert sorted(built.spec.prediction_dict) == sorted(["first", "second"] + (["predictions"] if with_key else []))


def test_own_train_op_is_used_and_the_eval_call_gets_none_of_it(make_config, write_module, run_train):
    module = write_module("mfn", MODEL_FN)
    loaded = make_config(
        graph={"builder": f"{module}:model_fn", "params": {"own_train_op": True}},
        data={"validation_split": 0.25, "epochs": 1},
        hooks=[{"type": "evaluation", "every_n_steps": 2}],
    )
    result = run_train(loaded)
    assert result.final_global_step == 6  # 48 training rows / 8, one epoch: the model_fn's train_op stepped it


def test_style_builder_forces_the_three_argument_call(make_config, write_module, run_train):
    module = write_module("mfn", MODEL_FN)
    loaded = make_config(graph={"builder": f"{module}:model_fn", "style": "builder"})
    with pytest.raises(ConfigError, match="model_fn\\(\\) missing 1 required positional argument: 'params'"):
        run_train(loaded)


WRONG = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec


def model_fn(features, labels, mode, params):
    w = tf.compat.v1.get_variable("w", [int(features.shape[-1]), 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    kind = params["kind"]
    if kind == "tensor":
        return loss
    if kind == "unknown_key":
        return {"loss": loss, "eval_metrics": {}}
    if kind == "loss_vector":
        return EstimatorSpec(mode=mode, loss=tf.reshape(loss, [1]))
    if kind == "predictions":
        return EstimatorSpec(mode=mode, loss=loss, predictions={"p": 3})
    if kind == "metric_ops":
        return EstimatorSpec(mode=mode, loss=loss, eval_metric_ops={"m": loss})
    if kind == "hooks":
        return EstimatorSpec(mode=mode, loss=loss, training_hooks=[object()])
    if kind == "partial_hook":
        return EstimatorSpec(mode=mode, loss=loss, training_hooks=[tf.compat.v1.train.SessionRunHook(), Half()])
    if kind == "hooks_not_a_list":
        return EstimatorSpec(mode=mode, loss=loss, training_hooks=tf.compat.v1.train.SessionRunHook())
    if kind == "chief_hooks":
        return EstimatorSpec(mode=mode, loss=loss, training_chief_hooks="hook")
    if kind == "eval_hook_class":  # checked in every mode, as tf.estimator.EstimatorSpec checked them
        return EstimatorSpec(mode=mode, loss=loss, evaluation_hooks=[tf.compat.v1.train.SessionRunHook])
    if kind == "prediction_hooks":
        return EstimatorSpec(mode=mode, loss=loss, prediction_hooks=[Half()])
    if kind == "train_op":
        return EstimatorSpec(mode=mode, loss=loss, train_op="minimize")
    if kind == "mode":
        return EstimatorSpec(mode="eval", loss=loss)
    if kind == "scaffold":
        return EstimatorSpec(mode=mode, loss=loss, scaffold=tf.compat.v1.train.Saver)


class Half:
    # two of the five SessionRunHook methods

    def begin(self):
        pass

    def after_run(self, run_context, run_values):
        pass
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize(
    "kind, field",
    [
        ("tensor", "returned tensorflow.python.framework"),
        ("unknown_key", "unknown key(s) eval_metrics"),
        ("loss_vector", "EstimatorSpec.loss must be a scalar tensor, got a tensor of shape (1,)"),
        ("predictions", "EstimatorSpec.predictions['p'] must be a tensor"),
        ("metric_ops", "EstimatorSpec.eval_metric_ops['m'] must be a (value, update_op) pair"),
        ("hooks", "EstimatorSpec.training_hooks[0] (object) is not a SessionRunHook: it lacks begin, "
         "after_create_session, before_run, after_run, end"),
        ("partial_hook", "EstimatorSpec.training_hooks[1] (Half) is not a SessionRunHook: it lacks "
         "after_create_session, before_run, end (subclass"),
        ("hooks_not_a_list", "EstimatorSpec.training_hooks must be a list of SessionRunHook, got SessionRunHook"),
        ("chief_hooks", "EstimatorSpec.training_chief_hooks must be a list of SessionRunHook, got str"),
        ("eval_hook_class", "EstimatorSpec.evaluation_hooks[0] is the class SessionRunHook, not a hook; "
         "give an instance: SessionRunHook(...)"),
        ("prediction_hooks", "EstimatorSpec.prediction_hooks[0] (Half) is not a SessionRunHook: it lacks"),
        ("train_op", "EstimatorSpec.train_op must be a tf.Operation"),
        ("mode", "EstimatorSpec.mode is 'eval'"),
        ("scaffold", "EstimatorSpec.scaffold must be a tf.compat.v1.train.Scaffold, got type"),
    ],
)
def test_a_wrong_return_is_a_config_error_naming_the_field(make_config, write_module, run_train, kind, field):
    module = write_module("wrong", WRONG)
    loaded = make_config(graph={"builder": f"{module}:model_fn", "params": {"kind": kind}})
    with pytest.raises(ConfigError) as caught:
        run_train(loaded)
    text = str(caught.value)
    assert field in text
    assert "graph.builder" in text and "internal error" not in text


@pytest.mark.parametrize(
    "kind, field",
    [
        ("predictions", "EstimatorSpec.predictions['p'] must be a tensor"),
        ("partial_hook", "EstimatorSpec.training_hooks[1] (Half) is not a SessionRunHook: it lacks "
         "after_create_session, before_run, end"),
    ],
)
def test_the_cli_exits_2_with_one_line_naming_the_field(make_config, write_module, tmp_path, kind, field):
    module = write_module("wrong", WRONG)
    loaded = make_config(graph={"builder": f"{module}:model_fn", "params": {"kind": kind}})
    done = subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", "train", str(loaded.path), "--run-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert field in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_validate_build_lists_the_training_hooks(make_config, write_module, tmp_path):
    module = write_module("mfn", MODEL_FN)
    loaded = make_config(graph={"builder": f"{module}:model_fn"}, hooks=[{"type": "stop_at_step", "last_step": 2}])
    done = subprocess.run(
        [sys.executable, "-m", "hookrun.cli.app", "validate", str(loaded.path), "--build"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "model_fn training_hooks (run after the config's hooks, in this order): "
        "training_hooks[0] Recorder, training_hooks[1] Recorder" in done.stdout
    )


def test_style_model_fn_with_a_built_in_builder_is_refused(tmp_path, linear_csv):
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: t\ngraph: {builder: linear_regressor, style: model_fn}\ndata: {train: data.csv, label: y}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="not a model_fn"):
        load_config(path)
