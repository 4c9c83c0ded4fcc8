"""The canned wide-and-deep built-ins from YAML: California wide-and-deep trains, evaluates and exports with TF
Serving's ``regression``/``classification`` signatures; the columns read raw values and ``from_data`` statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hookrun.config_schemas.feature_columns import parse_columns
from hookrun.runner import export
from hookrun.runner.config import load_config
from hookrun.runner.graph.builders.canned.columns import ColumnBuilder, raw_features
from hookrun.runner.tf_env import import_tensorflow
from tests.conftest import CONFIGS

tf = import_tensorflow()

#: The first row of configs/data/california_housing.csv, its numeric columns (median_house_value: $452,600).
FIRST_ROW = {
    "longitude": -122.23,
    "latitude": 37.88,
    "housing_median_age": 41.0,
    "total_rooms": 880.0,
    "total_bedrooms": 129.0,
    "population": 322.0,
    "households": 126.0,
    "median_income": 8.3252,
}


def signatures(export_dir) -> dict[str, object]:
    from tensorflow.core.protobuf import saved_model_pb2

    model = saved_model_pb2.SavedModel()
    model.ParseFromString((export_dir / "saved_model.pb").read_bytes())
    return dict(model.meta_graphs[0].signature_def)


def run_signature(export_dir, name: str, serialized: list[bytes]) -> dict[str, np.ndarray]:
    """Run one signature of the SavedModel on serialized examples, as TensorFlow Serving feeds them."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(export_dir))
        signature = meta.signature_def[name]
        (info,) = signature.inputs.values()
        fetches = {key: value.name for key, value in signature.outputs.items()}
        return session.run(fetches, {info.name: serialized})


def test_wide_deep_regressor_trains_evaluates_and_exports_a_regression_signature(run_train, tmp_path):
    result = run_train(load_config(CONFIGS / "california_housing_wide_deep.yaml", ["data.epochs=1"]))
    last = result.evaluations[-1]
    assert last["step"] == 258
    assert {"val_average_loss", "val_label/mean", "val_prediction/mean"} <= set(last)
    rmse = math.sqrt(last["val_average_loss"]) * 100_000  # average_loss: the mean squared error, in label_scale units
    assert 40_000 < rmse < 100_000
    output = tmp_path / "export" / "1"
    export(result.run_dir, output)
    found = signatures(output)
    assert found["regression"].method_name == "tensorflow/serving/regress"
    assert list(found["regression"].inputs) == ["inputs"] and list(found["regression"].outputs) == ["outputs"]

    serving = pytest.importorskip("tensorflow_serving.apis.regression_pb2")
    request = serving.RegressionRequest()
    request.model_spec.signature_name = "regression"
    example = request.input.example_list.examples.add()
    for key, value in FIRST_ROW.items():
        example.features.feature[key].float_list.value.append(value)
    example.features.feature["ocean_proximity"].bytes_list.value.append(b"NEAR BAY")
    serialized = [e.SerializeToString() for e in request.input.example_list.examples]
    value = run_signature(output, request.model_spec.signature_name, serialized)["outputs"]
    assert value.shape == (1, 1) and 100_000 < float(value[0, 0]) < 600_000  # the first row's $452,600: dollars


@pytest.mark.slow
def test_wide_deep_beats_the_linear_baseline(run_train, tmp_path):
    wide_deep = run_train(load_config(CONFIGS / "california_housing_wide_deep.yaml"), tmp_path / "wide_deep")
    linear = run_train(load_config(CONFIGS / "california_housing_linear.yaml"), tmp_path / "linear")
    wide_deep_rmse = math.sqrt(wide_deep.evaluations[-1]["val_average_loss"]) * 100_000
    assert wide_deep_rmse < linear.evaluations[-1]["val_rmse"]


def test_wide_deep_classifier_exports_a_classification_signature(run_train, tmp_path):
    config = load_config(CONFIGS / "california_ocean_wide_deep_classifier.yaml", ["data.epochs=1"])
    result = run_train(config)
    assert 0.5 < result.evaluations[-1]["val_accuracy"] <= 1.0
    output = tmp_path / "export" / "1"
    export(result.run_dir, output)
    found = signatures(output)
    assert found["classification"].method_name == "tensorflow/serving/classify"
    assert set(found["classification"].outputs) == {"classes", "scores"}

    serving = pytest.importorskip("tensorflow_serving.apis.classification_pb2")
    request = serving.ClassificationRequest()
    request.model_spec.signature_name = "classification"
    example = request.input.example_list.examples.add()
    for key, value in {**FIRST_ROW, "median_house_value": 452_600.0}.items():
        example.features.feature[key].float_list.value.append(value)
    serialized = [e.SerializeToString() for e in request.input.example_list.examples]
    outputs = run_signature(output, "classification", serialized)
    assert outputs["scores"].shape == (1, 5) and outputs["classes"].shape == (1, 5)
    assert float(outputs["scores"].sum()) == pytest.approx(1.0, rel=1e-5)


def test_named_features_reach_the_columns_as_read_with_from_data_statistics():
    described = {
        "x": {"kind": "numeric", "mean": 10.0, "std": 2.0},
        "c": {"kind": "categorical", "num_buckets": 3, "vocabulary": ["p", "q"]},
    }
    builder = ColumnBuilder(described)
    entries = [
        {"numeric": "x", "normalizer": "zscore"},
        {"bucketized": "x", "boundaries": [9.0, 11.0]},
        {"indicator": {"vocabulary_list": "c"}},
    ]
    with tf.Graph().as_default():
        columns = builder.build(parse_columns(entries, "dnn_feature_columns"), "dnn_feature_columns", dense=True)
        named = {  # what the built-in reader gives a named-features builder: z-scores and ids, the text beside
            "x": tf.constant([[-1.0], [0.0], [1.5]]),
            "c": tf.constant([[1], [0], [2]], tf.int64),
            "c/raw": tf.constant([["q"], ["p"], ["r"]]),
        }
        raw = raw_features(named, described, builder.identity_keys)
        layer = tf.compat.v1.feature_column.input_layer(raw, columns)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.tables_initializer())
            values, x = session.run([layer, raw["x"]])
    np.testing.assert_allclose(x[:, 0], [8.0, 10.0, 13.0])  # back in the column's units
    # columns sorted by name: c_indicator (p, q), x (z-score again), x_bucketized (3 buckets)
    np.testing.assert_allclose(
        values,
        [[0, 1, -1.0, 1, 0, 0], [1, 0, 0.0, 0, 1, 0], [0, 0, 1.5, 0, 0, 1]],
    )


PREMADE_ON_FILES = """
import tensorflow as tf

from hookrun.runner.graph.builders.canned import dnn_linear_combined_classifier

fc = tf.compat.v1.feature_column
education = fc.categorical_column_with_vocabulary_list(
    "education", ["Bachelors", "Doctorate", "HS-grad", "Masters", "Some-college"]
)
age = fc.bucketized_column(fc.numeric_column("age"), boundaries=[25, 35, 45, 55, 65])  # years, as read
model_fn = dnn_linear_combined_classifier(
    linear_feature_columns=[age, education, fc.crossed_column([age, education], hash_bucket_size=50)],
    dnn_feature_columns=[fc.numeric_column("hours_per_week"), fc.indicator_column(education)],
    dnn_hidden_units=[8],
)
"""


def test_a_python_premade_model_fn_reads_data_files_as_read(tmp_path, run_train):
    """With data files the model_fn gets hookrun's named features; the columns still read years and text."""
    from tests.test_migrating_from_estimator import _census_csv

    (tmp_path / "premade_csv.py").write_text(PREMADE_ON_FILES, encoding="utf-8")
    (tmp_path / "adult.csv").write_text(_census_csv(), encoding="utf-8")
    (tmp_path / "run.yaml").write_text(
        "name: premade-csv\ngraph: {builder: 'premade_csv:model_fn'}\n"
        "data: {train: adult.csv, label: income_bracket, validation_split: 0.2, batch_size: 32, epochs: 1, seed: 0}\n"
        "hooks: [{type: evaluation, every_n_steps: 100}]\n",
        encoding="utf-8",
    )
    result = run_train(load_config(tmp_path / "run.yaml"))
    assert result.end_of_data and 0.0 <= result.evaluations[-1]["val_accuracy"] <= 1.0
    assert "val_auc" in result.evaluations[-1]
