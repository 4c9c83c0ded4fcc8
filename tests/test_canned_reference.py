"""The six canned model_fns against small references written directly with ``tf.compat.v1.feature_column``.

Each reference follows TF 1.15's canned code path by hand (``tensorflow_estimator`` r1.15, ``canned/dnn.py``,
``linear.py``, ``dnn_linear_combined.py``, ``head.py``): ``input_layer`` under ``dnn/input_from_feature_columns``,
``tf.compat.v1.layers.dense`` layers named ``hiddenlayer_<i>`` and ``logits``, ``linear_model`` under ``linear/``,
the v1 loss with ``Reduction.SUM`` and the v1 optimizer at TF 1.15's default learning rate. Both graphs get the
same initial weights (copied by variable name, so the names must agree) and the same batches; the loss of each
step must match.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from hookrun.runner.graph.builders import canned
from hookrun.runner.graph.builders.canned.head import PredictionKeys
from hookrun.runner.graph.model_fn import ModeKeys
from hookrun.runner.tf_env import import_tensorflow

tf = import_tensorflow()
v1 = tf.compat.v1
fc = v1.feature_column

STEPS = 5
BATCH = 8
VOCAB = ["a", "b", "c"]


def batches(n_classes: int | None, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """``STEPS`` batches: numerics ``x1``, ``x2``, a string ``cat``, a weight ``w`` and a label ``y``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(STEPS):
        x1 = rng.normal(size=(BATCH, 1)).astype(np.float32)
        x2 = rng.normal(size=(BATCH, 1)).astype(np.float32)
        cat = rng.choice(VOCAB, size=(BATCH, 1)).astype(object)
        w = rng.uniform(0.5, 2.0, size=(BATCH, 1)).astype(np.float32)
        if n_classes is None:
            y = (2 * x1 - x2 + (cat == "a")).astype(np.float32)
        else:
            y = rng.integers(0, n_classes, size=(BATCH, 1)).astype(np.int64)
        out.append({"x1": x1, "x2": x2, "cat": cat, "w": w, "y": y})
    return out


def placeholders(label_dtype: Any) -> tuple[dict[str, Any], Any]:
    features = {
        "x1": v1.placeholder(tf.float32, [None, 1], name="x1"),
        "x2": v1.placeholder(tf.float32, [None, 1], name="x2"),
        "cat": v1.placeholder(tf.string, [None, 1], name="cat"),
        "w": v1.placeholder(tf.float32, [None, 1], name="w"),
    }
    return features, v1.placeholder(label_dtype, [None, 1], name="y")


def dnn_columns() -> list[Any]:
    cat = fc.categorical_column_with_vocabulary_list("cat", VOCAB)
    return [fc.numeric_column("x1"), fc.numeric_column("x2"), fc.embedding_column(cat, dimension=3)]


def linear_columns() -> list[Any]:
    cat = fc.categorical_column_with_vocabulary_list("cat", VOCAB)
    x1 = fc.bucketized_column(fc.numeric_column("x1"), boundaries=[-1.0, 0.0, 1.0])
    return [fc.numeric_column("x2"), x1, cat, fc.crossed_column([x1, cat], hash_bucket_size=7)]


# --- the references: TF 1.15's code path written out with tf.compat.v1 ---------------------------------------


def ref_dnn_logits(features: dict[str, Any], units: int, hidden: list[int], columns: list[Any]) -> Any:
    with v1.variable_scope("input_from_feature_columns"):
        net = fc.input_layer(features, columns)
    for index, width in enumerate(hidden):
        net = v1.layers.dense(
            net,
            width,
            activation=tf.nn.relu,
            kernel_initializer=v1.glorot_uniform_initializer(),
            name=f"hiddenlayer_{index}",
        )
    return v1.layers.dense(net, units, kernel_initializer=v1.glorot_uniform_initializer(), name="logits")


def ref_loss(logits: Any, labels: Any, n_classes: int | None, weights: Any) -> Any:
    reduction = v1.losses.Reduction.SUM
    if n_classes is None:
        return v1.losses.mean_squared_error(labels, logits, weights=weights, reduction=reduction)
    if n_classes == 2:
        return v1.losses.sigmoid_cross_entropy(
            tf.cast(labels, tf.float32), logits, weights=weights, reduction=reduction
        )
    return v1.losses.sparse_softmax_cross_entropy(labels, logits, weights=weights, reduction=reduction)


def ref_dnn(features: dict[str, Any], labels: Any, n_classes: int | None) -> Any:
    units = 1 if n_classes in (None, 2) else n_classes
    with v1.variable_scope("dnn"):
        logits = ref_dnn_logits(features, units, [4, 3], dnn_columns())
    loss = ref_loss(logits, labels, n_classes, features["w"])
    return loss, v1.train.AdagradOptimizer(0.05).minimize(loss, global_step=v1.train.get_or_create_global_step())


def ref_linear(features: dict[str, Any], labels: Any, n_classes: int | None) -> Any:
    units = 1 if n_classes in (None, 2) else n_classes
    with v1.variable_scope("linear"):
        logits = fc.linear_model(features, linear_columns(), units=units)
    loss = ref_loss(logits, labels, n_classes, features["w"])
    return loss, v1.train.FtrlOptimizer(0.2).minimize(loss, global_step=v1.train.get_or_create_global_step())


def ref_combined(features: dict[str, Any], labels: Any, n_classes: int | None) -> Any:
    units = 1 if n_classes in (None, 2) else n_classes
    with v1.variable_scope("dnn"):
        dnn = ref_dnn_logits(features, units, [4, 3], dnn_columns())
    with v1.variable_scope("linear"):
        columns = linear_columns()
        linear = fc.linear_model(features, columns, units=units)
    loss = ref_loss(dnn + linear, labels, n_classes, features["w"])
    trainable = v1.GraphKeys.TRAINABLE_VARIABLES
    step = v1.train.get_or_create_global_step()
    dnn_train = v1.train.AdagradOptimizer(0.001).minimize(loss, var_list=v1.get_collection(trainable, scope="dnn"))
    rate = min(0.005, 1 / math.sqrt(len(columns)))
    linear_train = v1.train.FtrlOptimizer(rate).minimize(loss, var_list=v1.get_collection(trainable, scope="linear"))
    with tf.control_dependencies([dnn_train, linear_train]):
        return loss, v1.assign_add(step, 1).op


# --- ours -----------------------------------------------------------------------------------------------------


def ours(name: str, n_classes: int | None) -> Callable[[dict[str, Any], Any], Any]:
    kwargs: dict[str, Any] = {"weight_column": "w"}
    if n_classes is not None:
        kwargs["n_classes"] = n_classes
    if name.startswith("dnn_linear_combined"):
        kwargs.update(
            linear_feature_columns=linear_columns(), dnn_feature_columns=dnn_columns(), dnn_hidden_units=[4, 3]
        )
    elif name.startswith("dnn"):
        kwargs.update(hidden_units=[4, 3], feature_columns=dnn_columns())
    else:
        kwargs.update(feature_columns=linear_columns())
    model_fn = getattr(canned, name)(**kwargs)

    def build(features: dict[str, Any], labels: Any) -> Any:
        v1.train.get_or_create_global_step()
        spec = model_fn(features, labels, ModeKeys.TRAIN)
        return spec.loss, spec.train_op

    return build


CASES = [
    ("dnn_classifier", 2, ref_dnn),
    ("dnn_classifier", 3, ref_dnn),
    ("dnn_regressor", None, ref_dnn),
    ("linear_classifier", 2, ref_linear),
    ("linear_classifier", 3, ref_linear),
    ("linear_regressor", None, ref_linear),
    ("dnn_linear_combined_classifier", 2, ref_combined),
    ("dnn_linear_combined_classifier", 3, ref_combined),
    ("dnn_linear_combined_regressor", None, ref_combined),
]


def run_steps(
    build: Callable[..., Any],
    n_classes: int | None,
    data: list[dict[str, np.ndarray]],
    initial: dict[str, np.ndarray] | None,
) -> tuple[list[float], dict[str, np.ndarray], list[str]]:
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(1)
        features, labels = placeholders(tf.float32 if n_classes is None else tf.int64)
        loss, train_op = build(features, labels)
        variables = {v.op.name: v for v in v1.global_variables()}
        model = sorted(v.op.name for v in v1.trainable_variables())
        with v1.Session(graph=graph) as session:
            session.run([v1.global_variables_initializer(), v1.tables_initializer()])
            if initial is not None:
                for name in model:
                    variables[name].load(initial[name], session)
            start = {name: session.run(variables[name]) for name in model}
            losses = []
            for batch in data:
                feed = {features[key]: batch[key] for key in features}
                feed[labels] = batch["y"]
                value, _ = session.run([loss, train_op], feed)
                losses.append(float(value))
            assert session.run(v1.train.get_global_step()) == len(data)
    return losses, start, model


@pytest.mark.parametrize(("name", "n_classes", "reference"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_same_loss_per_step_and_variable_names(name: str, n_classes: int | None, reference: Callable[..., Any]) -> None:
    data = batches(n_classes)
    our_losses, start, our_names = run_steps(ours(name, n_classes), n_classes, data, None)
    ref_losses, _, ref_names = run_steps(lambda f, y: reference(f, y, n_classes), n_classes, data, start)
    assert our_names == ref_names
    np.testing.assert_allclose(our_losses, ref_losses, rtol=1e-5, atol=1e-6)
    assert our_losses[-1] != our_losses[0]  # it trains


def test_variable_names_are_tf_115s() -> None:
    """The names TF 1.15's tests pin (``dnn_testing_utils.py``, ``linear_testing_utils.py``)."""
    with tf.Graph().as_default():
        features, labels = placeholders(tf.int64)
        ours("dnn_linear_combined_classifier", 2)(features, labels)
        names = {v.op.name for v in v1.global_variables()}
    for expected in (
        "dnn/hiddenlayer_0/kernel",
        "dnn/hiddenlayer_1/bias",
        "dnn/logits/kernel",
        "dnn/logits/bias",
        "dnn/input_from_feature_columns/input_layer/cat_embedding/embedding_weights",
        "linear/linear_model/x2/weights",
        "linear/linear_model/cat/weights",
        "linear/linear_model/bias_weights",
        "linear/linear_model/cat_X_x1_bucketized/weights",
        "global_step",
    ):
        assert expected in names


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_predictions_and_metrics(n_classes: int) -> None:
    model_fn = canned.dnn_classifier(
        hidden_units=[3],
        feature_columns=dnn_columns(),
        n_classes=n_classes,
        label_vocabulary=["no", "yes", "maybe"][:n_classes],
    )
    with tf.Graph().as_default():
        features, _ = placeholders(tf.string)
        labels = v1.placeholder(tf.string, [None, 1])
        v1.train.get_or_create_global_step()
        predict = model_fn(features, None, ModeKeys.PREDICT)
    with tf.Graph().as_default():
        features, _ = placeholders(tf.string)
        labels = v1.placeholder(tf.string, [None, 1])
        evaluate = model_fn(features, labels, ModeKeys.EVAL)
    keys = {
        PredictionKeys.LOGITS,
        PredictionKeys.PROBABILITIES,
        PredictionKeys.CLASS_IDS,
        PredictionKeys.CLASSES,
        PredictionKeys.ALL_CLASS_IDS,
        PredictionKeys.ALL_CLASSES,
    }
    if n_classes == 2:
        keys.add(PredictionKeys.LOGISTIC)
    assert set(predict.predictions) == keys
    signatures = {"serving_default", "classification", "predict"} | ({"regression"} if n_classes == 2 else set())
    assert set(predict.export_outputs) == signatures
    assert predict.export_outputs["classification"].method_name == "tensorflow/serving/classify"
    metrics = {"accuracy", "average_loss"}
    if n_classes == 2:
        metrics |= {
            "auc",
            "auc_precision_recall",
            "precision",
            "recall",
            "label/mean",
            "prediction/mean",
            "accuracy_baseline",
        }
    assert set(evaluate.eval_metric_ops) == metrics


def test_regressor_predictions_and_metrics() -> None:
    model_fn = canned.linear_regressor(feature_columns=linear_columns())
    with tf.Graph().as_default():
        features, labels = placeholders(tf.float32)
        predict = model_fn(features, None, ModeKeys.PREDICT)
    with tf.Graph().as_default():
        features, labels = placeholders(tf.float32)
        evaluate = model_fn(features, labels, ModeKeys.EVAL)
    assert set(predict.predictions) == {"predictions"}
    assert set(predict.export_outputs) == {"serving_default", "regression", "predict"}
    assert predict.export_outputs["regression"].method_name == "tensorflow/serving/regress"
    assert set(evaluate.eval_metric_ops) == {"average_loss", "label/mean", "prediction/mean"}


def test_optimizer_by_name_object_or_callable_and_bad_ones() -> None:
    from hookrun.runner.graph.builders.canned.models import get_optimizer_instance

    with tf.Graph().as_default():
        assert isinstance(get_optimizer_instance("SGD", 0.1), v1.train.GradientDescentOptimizer)
        adam = v1.train.AdamOptimizer(0.01)
        assert get_optimizer_instance(adam, 0.1) is adam
        assert isinstance(get_optimizer_instance(lambda: v1.train.AdamOptimizer(0.01), 0.1), v1.train.AdamOptimizer)
        with pytest.raises(ValueError, match="Unsupported optimizer name: sgd"):
            get_optimizer_instance("sgd", 0.1)
        with pytest.raises(ValueError, match="not an Optimizer"):
            get_optimizer_instance(3, 0.1)


def test_batch_norm_and_dropout_variables_are_named_as_tf_115s():
    """``dnn_testing_utils.py``'s BATCH_NORM_*_NAME_PATTERN: ``dnn/hiddenlayer_%d/batchnorm_%d/...``."""
    model_fn = canned.dnn_regressor(hidden_units=[4, 3], feature_columns=dnn_columns(), dropout=0.5, batch_norm=True)
    with tf.Graph().as_default():
        features, labels = placeholders(tf.float32)
        v1.train.get_or_create_global_step()
        spec = model_fn(features, labels, ModeKeys.TRAIN)
        names = {v.op.name for v in v1.global_variables()}
        updates = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
        assert spec.train_op is not None
    for layer in (0, 1):
        for part in ("gamma", "beta", "moving_mean", "moving_variance"):
            assert f"dnn/hiddenlayer_{layer}/batchnorm_{layer}/{part}" in names
    assert len(updates) == 4  # the moving mean and variance of both layers, run with the train op
