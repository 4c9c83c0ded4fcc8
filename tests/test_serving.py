"""Serving receivers and export outputs (``hookrun.runner.trained.serving``) against TF 1.15's tf.estimator.export.

Each case is what TF 1.15's ``export.py`` / ``export_output.py`` did with the same arguments: the same wrapping
names (``feature``, ``input``, ``examples``, ``output``), the same refusals, the same SignatureDef method names
and keys (``tensorflow/serving/{predict,classify,regress}``; ``inputs``, ``classes``, ``scores``, ``outputs``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from hookrun.runner.trained import serving
from hookrun.runner.trained.serving import (
    ClassificationOutput,
    PredictOutput,
    RegressionOutput,
    ServingInputReceiver,
    TensorServingInputReceiver,
    build_parsing_serving_input_receiver_fn,
    build_raw_serving_input_receiver_fn,
)


@pytest.fixture
def tf():
    """TensorFlow, with a fresh graph as the default for the test."""
    import tensorflow as tf

    with tf.Graph().as_default():
        yield tf


def test_importing_serving_imports_no_tensorflow() -> None:
    code = "import sys; import hookrun.runner.trained.serving; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_receiver_wraps_single_tensors_with_tf_names(tf) -> None:
    x = tf.compat.v1.placeholder(tf.float32, [None, 3])
    receiver = ServingInputReceiver(x, x)
    assert receiver.features == {"feature": x}
    assert receiver.receiver_tensors == {"input": x}
    assert receiver.receiver_tensors_alternatives is None
    features, tensors, alternatives = receiver  # a namedtuple, as Estimator's
    assert features is receiver.features and tensors is receiver.receiver_tensors and alternatives is None


def test_receiver_alternatives_are_wrapped(tf) -> None:
    s = tf.compat.v1.placeholder(tf.string, [None])
    x = tf.compat.v1.placeholder(tf.float32, [None])
    receiver = ServingInputReceiver({"x": x, 3: x}, {"examples": s}, {"raw": x})
    assert receiver.receiver_tensors_alternatives == {"raw": {"input": x}}
    assert set(receiver.features) == {"x", 3}  # int feature keys allowed, as in TF 1.15


def test_receiver_accepts_sparse_and_ragged_features(tf) -> None:
    s = tf.compat.v1.placeholder(tf.string, [None])
    sparse = tf.io.parse_example(s, {"t": tf.io.VarLenFeature(tf.int64)})["t"]
    ragged = tf.RaggedTensor.from_sparse(sparse)
    receiver = ServingInputReceiver({"t": sparse, "r": ragged}, s)
    assert receiver.features["t"] is sparse


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tf, x: ServingInputReceiver(None, x), "features must be defined"),
        (lambda tf, x: ServingInputReceiver(x, None), "receiver_tensors must be defined"),
        (lambda tf, x: ServingInputReceiver({"a": [1.0]}, x), "feature a must be a Tensor"),
        (lambda tf, x: ServingInputReceiver(x, {3: x}), "receiver_tensor keys must be strings"),
        (lambda tf, x: ServingInputReceiver({1.5: x}, x), "feature keys must be strings or ints"),
        (lambda tf, x: ServingInputReceiver(x, x, [x]), "receiver_tensors_alternatives must be a dict"),
        (lambda tf, x: ServingInputReceiver(x, x, {"alt": "no"}), "receiver_tensors_alternative input must be"),
        (lambda tf, x: TensorServingInputReceiver(None, x), "features must be defined"),
        (lambda tf, x: TensorServingInputReceiver({"a": x}, x), "feature must be a Tensor"),
    ],
)
def test_receiver_refusals_as_tf(tf, make, message: str) -> None:
    x = tf.compat.v1.placeholder(tf.float32, [None])
    with pytest.raises(ValueError, match=message):
        make(tf, x)


def test_tensor_receiver_passes_the_tensor_as_is(tf) -> None:
    x = tf.compat.v1.placeholder(tf.float32, [None, 2])
    receiver = TensorServingInputReceiver(x, {"x": x})
    assert receiver.features is x
    assert receiver.receiver_tensors == {"x": x}


def test_parsing_receiver_fn_feeds_examples(tf) -> None:
    spec = {"a": tf.io.FixedLenFeature([2], tf.float32), "t": tf.io.VarLenFeature(tf.string)}
    receiver = build_parsing_serving_input_receiver_fn(spec, default_batch_size=4)()
    (examples,) = receiver.receiver_tensors.values()
    assert list(receiver.receiver_tensors) == ["examples"]
    assert examples.op.name == "input_example_tensor" and examples.dtype == tf.string
    assert examples.shape.as_list() == [4]
    assert receiver.features["a"].shape.as_list() == [4, 2]
    assert isinstance(receiver.features["t"], tf.sparse.SparseTensor)


def test_raw_receiver_fn_makes_placeholders_like_the_features(tf) -> None:
    image = tf.zeros([7, 28, 28, 1], tf.uint8, name="image")
    receiver = build_raw_serving_input_receiver_fn({"img": image, "n": tf.TensorSpec([None], tf.int64)})()
    placeholder = receiver.features["img"]
    assert placeholder is receiver.receiver_tensors["img"]
    assert placeholder.op.type == "Placeholder" and placeholder.op.name.startswith("image")
    assert placeholder.shape.as_list() == [None, 28, 28, 1] and placeholder.dtype == tf.uint8
    assert receiver.features["n"].shape.as_list() == [None] and receiver.features["n"].dtype == tf.int64


def test_predict_output_signature(tf) -> None:
    x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
    output = PredictOutput(x * 2)
    assert list(output.outputs) == ["output"]
    assert list(PredictOutput({("a", "b"): x}).outputs) == ["a/b"]
    signature = output.as_signature_def({"x": x})
    assert signature.method_name == serving.PREDICT_METHOD_NAME == "tensorflow/serving/predict"
    assert list(signature.inputs) == ["x"] and list(signature.outputs) == ["output"]


def test_classification_output_signature(tf) -> None:
    examples = tf.compat.v1.placeholder(tf.string, [None], name="examples")
    scores = tf.zeros([3, 2])
    classes = tf.constant([["a", "b"]] * 3)
    signature = ClassificationOutput(scores=scores, classes=classes).as_signature_def({"examples": examples})
    assert signature.method_name == "tensorflow/serving/classify"
    assert list(signature.inputs) == ["inputs"]
    assert sorted(signature.outputs) == ["classes", "scores"]
    only_scores = ClassificationOutput(scores=scores).as_signature_def({"e": examples})
    assert list(only_scores.outputs) == ["scores"]


def test_regression_output_signature(tf) -> None:
    examples = tf.compat.v1.placeholder(tf.string, [None])
    signature = RegressionOutput(tf.zeros([3])).as_signature_def({"examples": examples})
    assert signature.method_name == "tensorflow/serving/regress"
    assert list(signature.inputs) == ["inputs"] and list(signature.outputs) == ["outputs"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tf: ClassificationOutput(), "At least one of `scores` and `classes`"),
        (lambda tf: ClassificationOutput(scores=tf.zeros([2], tf.int32)), "scores must be a float32 Tensor"),
        (lambda tf: ClassificationOutput(classes=tf.zeros([2])), "classes must be a string Tensor"),
        (lambda tf: RegressionOutput(tf.constant(["a"])), "Regression output value must be a float32 Tensor"),
        (lambda tf: RegressionOutput(1.0), "Regression output value must be a float32 Tensor"),
        (lambda tf: PredictOutput({"a": 1.0}), "Prediction output value must be a Tensor"),
        (lambda tf: PredictOutput({1: tf.zeros([1])}), "Prediction output key must be a string"),
    ],
)
def test_output_refusals_as_tf(tf, make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(tf)


def test_classify_and_regress_need_one_string_input(tf) -> None:
    x = tf.compat.v1.placeholder(tf.float32, [None])
    s = tf.compat.v1.placeholder(tf.string, [None])
    for output, kind in [(ClassificationOutput(scores=tf.zeros([1, 2])), "Classification"),
                         (RegressionOutput(tf.zeros([1])), "Regression")]:
        with pytest.raises(ValueError, match=f"{kind} signatures can only accept a single tensor input"):
            output.as_signature_def({"x": x})
        with pytest.raises(ValueError, match=f"{kind} signatures can only accept a single tensor input"):
            output.as_signature_def({"a": s, "b": s})


def test_estimator_spec_keeps_export_output_objects(tf) -> None:
    from hookrun.runner.graph.model_fn import EstimatorSpec, ModeKeys, check_spec

    x = tf.compat.v1.placeholder(tf.float32, [None])
    classify = ClassificationOutput(scores=tf.stack([x, -x], axis=1))
    regress = RegressionOutput(x)
    spec = EstimatorSpec(
        mode=ModeKeys.PREDICT,
        predictions={"y": x},
        export_outputs={"serving_default": PredictOutput({"y": x}), "classify": classify, "regress": regress},
    )
    checked = check_spec(tf, spec, "m:model_fn", ModeKeys.PREDICT)
    assert checked.export_outputs["classify"] is classify and checked.export_outputs["regress"] is regress
    assert isinstance(checked.export_outputs["serving_default"], PredictOutput)


EXPORT_OUTPUTS_MODEL_FN = """
import tensorflow as tf
from hookrun.runner import EstimatorSpec, ModeKeys, layers
from hookrun.runner.trained.serving import ClassificationOutput, RegressionOutput


def model_fn(features, labels, mode, params):
    out = layers.dense(features, 1, "out")
    if mode == ModeKeys.PREDICT:
        p = tf.sigmoid(out)
        return EstimatorSpec(mode=mode, predictions=out[:, 0], export_outputs={
            "regress": RegressionOutput(out[:, 0]),
            "classify": ClassificationOutput(scores=tf.concat([1.0 - p, p], axis=1)),
        })
    return EstimatorSpec(mode=mode, loss=tf.reduce_mean(tf.square(out - labels)))


model_fn.hookrun_features = "dense"  # takes the dense matrix (a model_fn's default is named)
"""


def test_builtin_reader_export_gives_classify_and_regress_on_the_examples_input(tmp_path, write_module):
    """A model_fn's ClassificationOutput/RegressionOutput on a run of the built-in reader: TF Serving's Classify
    and Regress signatures, on serialized tf.train.Example (the raw columns are several float inputs)."""
    import numpy as np
    import tensorflow as tf
    import yaml

    from hookrun.runner import export
    from hookrun.runner.config import load_config
    from hookrun.runner.trainer import train
    from tests.conftest import base_config, linear_rows, write_csv

    module = write_module("export_outputs_model", EXPORT_OUTPUTS_MODEL_FN)
    write_csv(tmp_path / "data.csv", linear_rows(32, seed=5))
    config = base_config(
        hooks=[{"type": "stop_at_step", "num_steps": 2}, {"type": "checkpoint_saver", "save_steps": 2}],
        graph={"builder": f"{module}:model_fn"}, data={"train": "data.csv"},
    )
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    train(load_config(tmp_path / "run.yaml"), run_dir=tmp_path / "run")
    result = export(tmp_path / "run", tmp_path / "model")
    assert {"serving_default", "examples", "regress", "classify"} <= set(result.signatures)
    assert set(result.signatures["classify"]["inputs"]) == {"inputs"}
    assert result.signatures["classify"]["outputs"] == {"scores": "float32"}

    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((tmp_path / "model" / "saved_model.pb").read_bytes())
    methods = {key: s.method_name for key, s in saved.meta_graphs[0].signature_def.items()}
    assert methods["classify"] == "tensorflow/serving/classify" and methods["regress"] == "tensorflow/serving/regress"
    assert methods["serving_default"] == "tensorflow/serving/predict"

    rows = linear_rows(4, seed=9)
    examples = tf.constant([
        tf.train.Example(features=tf.train.Features(feature={
            "a": tf.train.Feature(float_list=tf.train.FloatList(value=[a])),
            "b": tf.train.Feature(float_list=tf.train.FloatList(value=[b])),
        })).SerializeToString()
        for a, b, _ in rows
    ])
    model = tf.saved_model.load(str(tmp_path / "model"))
    default = model.signatures["serving_default"](a=tf.constant(rows[:, 0], tf.float32),
                                                  b=tf.constant(rows[:, 1], tf.float32))
    values = default["predictions"].numpy()
    np.testing.assert_allclose(model.signatures["regress"](inputs=examples)["outputs"].numpy(), values, rtol=1e-5)
    scores = model.signatures["classify"](inputs=examples)["scores"].numpy()
    np.testing.assert_allclose(scores[:, 1], 1 / (1 + np.exp(-values)), rtol=1e-5)
