"""Evaluation built as Estimator built it: every model_fn that trains evaluates unchanged (issue 25, item 1).

The ``evaluation`` hook used to call the model_fn again inside the training graph under ``reuse=True``;
these model_fns, which Estimator ran as they are, failed there. Each test trains with an ``evaluation``
hook and then checks that the last in-training evaluation equals ``hookrun evaluate`` of the final
checkpoint (a fresh graph restored from it, as Estimator's ``evaluate``): the grafted evaluation read
the trained weights, not a copy of its own.
"""

from __future__ import annotations

import numpy as np
import pytest

from hookrun.config_schemas.loader import ConfigError

MODEL_FNS = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys

v1 = tf.compat.v1


def dense(inputs, units):
    # as tf.compat.v1.layers.dense names its weights: a default name made unique per graph (dense, dense_1, ...)
    with v1.variable_scope(None, default_name="dense"):
        kernel = v1.get_variable("kernel", [inputs.shape[-1], units], initializer=v1.glorot_uniform_initializer())
        bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
    return tf.matmul(inputs, kernel) + bias


def model_fn(features, labels, mode, params):
    pattern = params["pattern"]
    if pattern == "default_names":
        out = dense(tf.nn.relu(dense(features, 4)), 1)
    elif pattern == "embedding_input_layer":
        fc = v1.feature_column
        x = fc.numeric_column("x", shape=[2])
        a = fc.bucketized_column(fc.numeric_column("a"), boundaries=[-1.0, 0.0, 1.0])
        columns = [x, fc.embedding_column(a, dimension=2)]
        net = fc.input_layer({"x": features, "a": features[:, :1]}, columns)
        out = dense(net, 1)
    elif pattern == "tf_variable":
        w = tf.Variable(tf.zeros([2, 1]), name="w")
        b = tf.Variable(0.0, name="b")
        out = tf.matmul(features, w) + b
    else:  # optimizer_in_eval: default names and a tf.Variable too
        out = dense(features, 1) + tf.Variable(0.0, name="offset")
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode=mode, predictions=out)
    loss = tf.reduce_mean(tf.square(out - labels))
    spec = dict(mode=mode, loss=loss, predictions=out)
    # a common Estimator pattern: `if mode != PREDICT:` around the optimizer, so eval mode builds it too
    with_optimizer = mode == ModeKeys.TRAIN or (pattern == "optimizer_in_eval" and mode != ModeKeys.PREDICT)
    if with_optimizer:
        optimizer = v1.train.AdamOptimizer(0.05)
        spec["train_op"] = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    if mode != ModeKeys.PREDICT:
        spec["eval_metric_ops"] = {"mae": v1.metrics.mean_absolute_error(labels, out)}
    return EstimatorSpec(**spec)


def counts_in_a_global(features, labels, mode, params):
    w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
    seen = tf.Variable(0.0, trainable=False, name="seen")  # a global variable, in every mode
    out = tf.matmul(features, w)
    loss = tf.reduce_mean(tf.square(out - labels))
    metrics = {"seen": (seen.read_value(), seen.assign_add(1.0))} if mode == ModeKeys.EVAL else None
    return EstimatorSpec(mode=mode, loss=loss, predictions=out, eval_metric_ops=metrics)


def eval_only_variable(features, labels, mode, params):
    width = 2 if params.get("other_shape") and mode == ModeKeys.EVAL else 1
    w = v1.get_variable("w", [2, width], initializer=v1.zeros_initializer())
    out = tf.matmul(features, w)
    if mode == ModeKeys.EVAL and not params.get("other_shape"):
        out = out + v1.get_variable("calibration", [], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(out - labels))
    return EstimatorSpec(mode=mode, loss=loss, predictions=out)
model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
counts_in_a_global.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
eval_only_variable.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


@pytest.mark.parametrize("pattern", ["default_names", "embedding_input_layer", "tf_variable", "optimizer_in_eval"])
def test_a_model_fn_estimator_ran_trains_with_evaluation_and_hookrun_evaluate_agrees(
    make_config, write_module, run_train, pattern
):
    from hookrun.runner.trained.evaluate import evaluate

    module = write_module("estimator_fns", MODEL_FNS)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn", "params": {"pattern": pattern}},
            data={"validation_split": 0.25, "epochs": 2},
            hooks=[{"type": "evaluation", "every_n_steps": 5}, {"type": "checkpoint_saver", "save_steps": 100}],
        )
    )
    steps = [e["step"] for e in result.evaluations]
    assert steps == [5, 10, 12] and result.final_global_step == 12
    first, last = result.evaluations[0], result.evaluations[-1]
    assert np.isfinite(last["val_loss"]) and last["val_loss"] != first["val_loss"]  # the weights moved
    evaluated = evaluate(result.run_dir)  # a fresh graph restored from the final checkpoint
    assert evaluated.global_step == 12
    assert evaluated.metrics["val_loss"] == pytest.approx(last["val_loss"], rel=1e-5)
    assert evaluated.metrics["val_mae"] == pytest.approx(last["val_mae"], rel=1e-5)


def test_hookrun_evaluate_of_a_model_fn_building_its_optimizer_in_eval_mode(
    make_config, write_module, run_train, linear_csv, tmp_path
):
    """It used to refuse: `evaluation/beta1_power is not in it` (the model_fn was called under evaluation/)."""
    from hookrun.runner.trained.evaluate import evaluate

    module = write_module("estimator_fns", MODEL_FNS)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:model_fn", "params": {"pattern": "optimizer_in_eval"}},
            data={"validation_split": 0.25, "epochs": 1},
            hooks=[{"type": "checkpoint_saver", "save_steps": 100}],
        )
    )
    evaluated = evaluate(result.run_dir)
    assert evaluated.global_step == result.final_global_step == 6
    assert np.isfinite(evaluated.metrics["val_loss"]) and np.isfinite(evaluated.metrics["val_mae"])
    # and it predicts and exports unchanged (infer mode: no optimizer under `mode != PREDICT`)
    from hookrun.runner import export, predict

    predicted = predict(result.run_dir, [str(linear_csv)], tmp_path / "preds.csv")
    assert predicted.rows == 64
    exported = export(result.run_dir, tmp_path / "model")
    assert set(exported.signatures) >= {"serving_default", "examples"}


def test_a_variable_only_the_eval_call_makes_is_named_with_the_mode_and_the_fix(make_config, write_module, run_train):
    module = write_module("estimator_fns", MODEL_FNS)
    loaded = make_config(
        graph={"builder": f"{module}:eval_only_variable"},
        data={"validation_split": 0.25},
        hooks=[{"type": "evaluation", "every_n_steps": 5}],
    )
    with pytest.raises(ConfigError) as caught:
        run_train(loaded)
    text = str(caught.value)
    assert "graph.builder" in text
    assert "in eval mode reads the variable 'calibration', which its train-mode call does not create" in text
    assert "create 'calibration' in train mode too" in text


def test_a_variable_of_another_shape_in_eval_mode_is_named_with_both_shapes(make_config, write_module, run_train):
    module = write_module("estimator_fns", MODEL_FNS)
    loaded = make_config(
        graph={"builder": f"{module}:eval_only_variable", "params": {"other_shape": True}},
        data={"validation_split": 0.25},
        hooks=[{"type": "evaluation", "every_n_steps": 5}],
    )
    with pytest.raises(ConfigError) as caught:
        run_train(loaded)
    text = str(caught.value)
    assert "makes the variable 'w' as VarHandleOp float32 [2, 2] in eval mode" in text
    assert "but as VarHandleOp float32 [2, 1] in train mode; make it alike in both modes" in text


def test_an_eval_pass_changing_a_training_variable_changes_a_copy_set_before_each_pass(
    make_config, write_module, run_train
):
    """Estimator's evaluation changed a restored copy: the training variable stays, each pass starts from it."""
    import tensorflow as tf

    module = write_module("estimator_fns", MODEL_FNS)
    result = run_train(
        make_config(
            graph={"builder": f"{module}:counts_in_a_global"},
            data={"validation_split": 0.25, "epochs": 2},
            hooks=[{"type": "evaluation", "every_n_steps": 5}, {"type": "checkpoint_saver", "save_steps": 100}],
        )
    )
    assert [e["step"] for e in result.evaluations] == [5, 10, 12]
    # 2 validation batches per pass, each adding 1 to a copy that starts at the training value (0)
    assert [e["val_seen"] for e in result.evaluations] == [2.0, 2.0, 2.0]
    assert tf.train.load_variable(tf.train.latest_checkpoint(str(result.run_dir)), "seen") == 0.0
