"""The premade estimators in hookrun.estimator: TF 1.15's classes over feature columns, trained, evaluated and
exported through hookrun.estimator.Estimator."""

from __future__ import annotations

import numpy as np
import pytest

from hookrun import estimator as tf_estimator
from hookrun.runner.tf_env import import_tensorflow

tf = import_tensorflow()
fc = tf.compat.v1.feature_column


def input_fn():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 1)).astype(np.float32)
    city = rng.choice(["a", "b", "c"], size=(64, 1))
    label = np.where(x[:, 0] > 0, "yes", "no").reshape(-1, 1)
    return tf.data.Dataset.from_tensor_slices(({"x": x, "city": city}, label)).batch(16)


def columns():
    city = fc.categorical_column_with_vocabulary_list("city", ["a", "b", "c"])
    return [fc.numeric_column("x")], [fc.embedding_column(city, dimension=2), fc.numeric_column("x")], city


def test_wide_and_deep_classifier_trains_evaluates_predicts_and_exports(tmp_path):
    linear, dnn, city = columns()
    model = tf_estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "run"),
        linear_feature_columns=[*linear, city],
        dnn_feature_columns=dnn,
        dnn_hidden_units=[4],
        label_vocabulary=["no", "yes"],
    )
    assert isinstance(model, tf_estimator.Estimator)
    model.train(input_fn, steps=8)
    metrics = model.evaluate(input_fn)
    assert {"accuracy", "auc", "auc_precision_recall", "precision", "recall", "average_loss", "label/mean",
            "prediction/mean", "accuracy_baseline", "loss", "global_step"} <= set(metrics)
    assert metrics["global_step"] == 4  # the input_fn ends after 4 batches, as under TF
    first = next(iter(model.predict(input_fn)))
    assert set(first) == {"logits", "logistic", "probabilities", "class_ids", "classes", "all_class_ids",
                          "all_classes"}
    assert first["classes"][0] in (b"no", b"yes")
    names = set(tf.train.list_variables(model.latest_checkpoint()) and
                [name for name, _ in tf.train.list_variables(model.latest_checkpoint())])
    assert {"dnn/hiddenlayer_0/kernel", "dnn/logits/bias", "linear/linear_model/x/weights",
            "linear/linear_model/city/weights", "linear/linear_model/bias_weights",
            "dnn/input_from_feature_columns/input_layer/city_embedding/embedding_weights"} <= names


@pytest.mark.parametrize("name", ["DNNRegressor", "LinearRegressor", "DNNClassifier", "LinearClassifier"])
def test_each_premade_class_has_tf_115s_arguments(name):
    import inspect

    cls = getattr(tf_estimator, name)
    parameters = inspect.signature(cls).parameters
    assert parameters["loss_reduction"].default == tf.compat.v1.losses.Reduction.SUM
    assert parameters["optimizer"].default == ("Adagrad" if name.startswith("DNN") else "Ftrl")
    assert "model_dir" in parameters and "config" in parameters and "warm_start_from" in parameters
