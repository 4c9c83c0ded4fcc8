"""TFRecord tensor features from a YAML parse spec (issue 24): fixed shapes, sparse/ragged tokens, raw bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from rich.console import Console

from hookrun.common.errors import DataError
from hookrun.config_schemas.loader import ConfigError
from hookrun.runner.data.streaming import StreamInput, make_iterator, scan_data
from tests.conftest import data_config, user_module

ROWS = 24


def _record(i: int, image_values: int = 4) -> bytes:
    feature = {
        "a": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i % 5)])),
        "y": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i % 3)])),
        # in the spec's order (zimage before tokens), never the alphabet's
        "zimage": tf.train.Feature(float_list=tf.train.FloatList(value=[i + k / 10 for k in range(image_values)])),
        "tokens": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"w%d" % k for k in range(i % 4)])),
        "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i % 3 + 1)))),
        "jpeg": tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes([255, 216, i, 0, 32])])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _write(path: Path, bad_record: int | None = None) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(ROWS):
            writer.write(_record(i, image_values=3 if i == bad_record else 4))


COLUMNS = {
    "zimage": {"type": "float", "shape": [2, 2, 1]},
    "tokens": {"type": "string", "varlen": "sparse"},
    "ids": {"type": "int", "varlen": "ragged"},
    "jpeg": {"type": "bytes"},
}


def _data(**extra):
    return {"train": "data.tfrecord", "label": "y", "columns": COLUMNS, "shuffle": False, "batch_size": 6, **extra}


def test_tensor_features_reach_the_named_features_as_parsed_in_spec_order(tmp_path):
    _write(tmp_path / "data.tfrecord")
    config = data_config(**{"epochs": 1, "seed": 0, **_data()})
    scan = scan_data(config, tmp_path)
    stream = StreamInput(scan, scan.state, config)
    assert stream.feature_names == ["a"]  # the tensor features are no columns: no statistics, no scaling
    graph = tf.Graph()
    with graph.as_default():
        features, labels = make_iterator(tf, stream.train_dataset(tf, named=True)).get_next()
        assert list(features) == ["a", "zimage", "tokens", "ids", "jpeg"]
        assert features["zimage"].dtype == tf.float32 and features["zimage"].shape.as_list() == [None, 2, 2, 1]
        assert isinstance(features["tokens"], tf.SparseTensor) and features["tokens"].dtype == tf.string
        assert isinstance(features["ids"], tf.RaggedTensor) and features["ids"].dtype == tf.int64
        assert features["jpeg"].dtype == tf.string and features["jpeg"].shape.as_list() == [None]
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.tables_initializer())
            first = session.run(features)
    np.testing.assert_allclose(first["zimage"][1].ravel(), [1.0, 1.1, 1.2, 1.3], rtol=1e-6)  # row-major, as written
    assert first["tokens"].dense_shape.tolist() == [6, 3]
    assert [v.decode() for v in first["tokens"].values[:3]] == ["w0", "w0", "w1"]  # rows 1 (w0) and 2 (w0, w1)
    assert first["ids"].to_list() == [[0], [0, 1], [0, 1, 2], [0], [0, 1], [0, 1, 2]]
    assert first["jpeg"][2] == bytes([255, 216, 2, 0, 32])  # raw bytes, untouched


MODEL_FN = """
import tensorflow as tf

from hookrun.runner import layers


def model_fn(features, labels, mode, params):
    image = tf.reshape(features["zimage"], [-1, 4])
    tokens = tf.cast(tf.sparse.reduce_sum(tf.sparse.map_values(tf.strings.length, features["tokens"]), 1), tf.float32)
    ids = tf.cast(features["ids"].row_lengths(), tf.float32)
    jpeg = tf.cast(tf.strings.length(features["jpeg"]), tf.float32)
    net = tf.reshape(tf.concat([features["a"], image, tokens[:, None], ids[:, None], jpeg[:, None]], 1), [-1, 8])
    out = layers.dense(net, 1, "out")
    return {"loss": tf.reduce_mean(tf.square(out - labels)), "predictions": out}
"""


def test_a_model_fn_trains_and_evaluates_on_tensor_features(make_config, write_module, run_train, tmp_path):
    _write(tmp_path / "data.tfrecord")
    module = write_module("tensors", MODEL_FN)
    loaded = make_config(
        graph={"builder": f"{module}:model_fn"},
        data=_data(epochs=2, validation_split=0.25),
        hooks=[{"type": "evaluation", "every_n_steps": 2}],
    )
    result = run_train(loaded)
    assert result.final_global_step > 0 and np.isfinite(result.evaluations[-1]["val_loss"])
    assert user_module(module) is not None


def test_a_dense_builder_gets_a_clear_error_for_a_tensor_feature(make_config, tmp_path):
    _write(tmp_path / "data.tfrecord")
    loaded = make_config(data=_data())
    from hookrun.runner.training.prepare import prepare

    with pytest.raises(ConfigError, match=r"data.columns.zimage.*feature 'zimage' \(shape \[2, 2, 1\]\) is not one "
                       r"value per row.*use a model_fn"):
        prepare(loaded, tmp_path / "run", Console(quiet=True))


def test_a_record_with_another_shape_is_refused_before_training_naming_the_feature(tmp_path):
    _write(tmp_path / "data.tfrecord", bad_record=7)
    config = data_config(**{"epochs": 1, "seed": 0, **_data()})
    with pytest.raises(DataError, match=r"data.tfrecord: record 8: feature 'zimage' does not fit data.columns.zimage "
                       r"\(Number of float values != expected.  Values size: 3 but output shape: \[2,2,1\]\)"):
        scan_data(config, tmp_path)
    (tmp_path / "data.tfrecord").unlink()
    _write(tmp_path / "data.tfrecord")
    absent = data_config(**{"epochs": 1, "seed": 0, **_data()}, )
    absent.columns["nope"] = absent.columns["zimage"]
    with pytest.raises(DataError, match=r"records 1 or after: feature 'nope' does not fit data.columns.nope \(a "
                       "record lacks it"):
        scan_data(absent, tmp_path)


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"type": "float", "shape": [2], "varlen": "sparse"}, "not both"),
        ({"type": "float", "shape": [0]}, "at least 1"),
        ({"type": "complex"}, "type"),
    ],
)
def test_a_bad_parse_spec_is_refused_by_the_config(spec, message):
    with pytest.raises(ValueError, match=message):
        data_config(train="x.tfrecord", label="y", columns={"image": spec})


def test_a_tensor_feature_cannot_be_the_label_or_categorical():
    with pytest.raises(ValueError, match="the label is one value per record"):
        data_config(train="x.tfrecord", label="y", columns={"y": {"type": "float", "shape": [2]}})
    with pytest.raises(ValueError, match="read as it is"):
        ragged = {"t": {"type": "string", "varlen": "ragged"}}
        data_config(train="x.tfrecord", label="y", categorical=["t"], columns=ragged)


def test_export_of_a_run_with_tensor_features_is_refused_naming_the_feature(make_config, write_module, run_train,
                                                                             tmp_path):
    """predict/export feed one value per column: refused in one line, nothing written (not yet supported)."""
    from hookrun.common.errors import PlacedError
    from hookrun.runner import export

    _write(tmp_path / "data.tfrecord")
    module = write_module("tensors_export", MODEL_FN)
    run = tmp_path / "run"
    hooks = [{"type": "checkpoint_saver", "save_steps": 2}]
    run_train(make_config(graph={"builder": f"{module}:model_fn"}, data=_data(epochs=1), hooks=hooks), run_dir=run)
    with pytest.raises((PlacedError, ConfigError), match="data.columns.zimage.*predict and export take one value"):
        export(run, tmp_path / "model")
    assert not (tmp_path / "model").exists()
