"""Issue 24's one interface: each input source gives train, eval and predict datasets, a serving receiver,
position and shard (runner/data/source.py). Every method of both sources is called here, on real files and a
real user input_fn, in small graphs (no training)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import yaml

from hookrun.common.errors import SetupError
from hookrun.runner.config import load_config
from hookrun.runner.data.formats.registry import format_named
from hookrun.runner.data.input_fn import input_fn_of
from hookrun.runner.data.source import FileReceiver, FileSource, InputFnSource, open_source, saved_source
from hookrun.runner.data.streaming import make_iterator
from tests.conftest import BATCH_SIZE

PROGRAM = """
import numpy as np
import tensorflow as tf

from hookrun.runner.trained.serving import ServingInputReceiver

MODES = []


def rows(n):
    x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
    return {"x": x}, (x[:, 0] > 3).astype(np.int64)


def input_fn(params, mode):
    MODES.append(mode)
    features, labels = rows(12)
    if mode == "infer":  # as an Estimator predict input_fn: features alone
        return tf.data.Dataset.from_tensor_slices(features).batch(5)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(4)


def eval_input_fn(params, mode):
    MODES.append(mode)
    features, labels = rows(6)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(4)


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    return ServingInputReceiver({"x": x}, {"x": x})
"""


def _session_values(fetches, feed=None):
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.tables_initializer())
        return session.run(fetches, feed_dict=feed)


def _first(dataset):
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()


@pytest.fixture
def file_source(make_config, tmp_path):
    """An opened files source of the 64-row linear CSV (a, b -> y), 16 of its rows for validation, not shuffled."""
    loaded = make_config(data={"validation_split": 0.25, "shuffle": False, "epochs": 1})
    source = open_source(loaded)
    assert isinstance(source, FileSource)
    source.open(tmp_path / "preprocessing.json", 0, [], None)
    return loaded, source


def _csv_cells(path, rows):
    lines = path.read_text().splitlines()[1:1 + rows]
    return np.array([[float(c) for c in line.split(",")] for line in lines])


def test_file_source_train_eval_position_and_shard(file_source):
    _loaded, source = file_source
    assert source.num_rows == 48 and source.shard is None
    with tf.Graph().as_default():
        features, labels = _first(source.train_dataset(tf, named=True))
        eval_features, _ = _first(source.eval_dataset(tf, BATCH_SIZE, named=True))
        got, got_labels, got_eval = _session_values((features, labels, eval_features))
    assert list(got) == ["a", "b"] and got["a"].shape == (BATCH_SIZE, 1) and got_labels.shape[0] == BATCH_SIZE
    assert got_eval["a"].shape == (BATCH_SIZE, 1)
    assert source.position(tf, None, resume_path=None, ended_at_data_end=False, on_cluster=False,
                           own_saver=False) == (None, [])


def test_file_source_on_a_cluster_takes_its_shard(make_config, tmp_path):
    source = open_source(make_config(), tasks=["chief:0", "worker:1"])
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    source.open(tmp_path / "preprocessing.json", 0, [], context)
    assert source.shard == (2, 1)


def test_file_source_predicts_the_files_rows_through_the_saved_preprocessing(make_config, linear_csv, tmp_path):
    loaded = make_config(data={"shuffle": False, "epochs": 1})  # no validation split: batch 1 is rows 1 to 8
    opened = open_source(loaded)
    opened.open(tmp_path / "preprocessing.json", 0, [], None)
    source = saved_source(loaded, opened.preprocessor)  # a trained run's: its saved preprocessing, no scan
    assert isinstance(source, FileSource) and source.num_rows is None
    chunks = list(source.predict_dataset(tf, [str(linear_csv)]))
    for given in (str(linear_csv), (str(linear_csv),), source.prediction_files([str(linear_csv)])):
        assert sum(raw.num_rows for raw, _, _ in source.predict_dataset(tf, given)) == 64  # any form of --data
    cells = _csv_cells(linear_csv, 64)
    assert sum(raw.num_rows for raw, _records, _file in chunks) == 64
    raw, records, _file = chunks[0]
    assert records is None  # no tensor feature: no serialized records beside the cells
    np.testing.assert_allclose(raw.values["a"][:5], cells[:5, 0])
    np.testing.assert_allclose(raw.values["b"][:5], cells[:5, 1])
    # the receiver takes those raw cells and gives what training fed the model for the same rows
    with tf.Graph().as_default():
        receiver = source.serving_receiver(tf, named=True)
        assert isinstance(receiver, FileReceiver) and list(receiver.receiver_tensors) == ["a", "b"]
        assert receiver.examples is None
        feed = {receiver.inputs[name]: raw.values[name][:BATCH_SIZE].astype(np.float32) for name in ("a", "b")}
        served = _session_values(receiver.features, feed)
        trained, _ = _first(opened.train_dataset(tf, named=True))  # the first batch: the first 8 rows (no shuffle)
        expected = _session_values(trained)
    for name in ("a", "b"):
        np.testing.assert_allclose(served[name], expected[name], rtol=1e-5, atol=1e-6)
        assert not np.allclose(served[name].ravel(), cells[:BATCH_SIZE, 0 if name == "a" else 1])  # standardized


def test_file_source_receiver_parses_serialized_examples(file_source):
    loaded, opened = file_source
    source = saved_source(loaded, opened.preprocessor)
    example = tf.train.Example(features=tf.train.Features(feature={
        "a": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5])),
        "b": tf.train.Feature(float_list=tf.train.FloatList(value=[-1.0])),
    })).SerializeToString()
    with tf.Graph().as_default():
        receiver = source.serving_receiver(tf, examples=True, named=True)
        from_examples = _session_values(receiver.features, {receiver.examples: [example]})
        from_columns = _session_values(
            receiver.features, {receiver.inputs["a"]: [0.5], receiver.inputs["b"]: [-1.0]}
        )
    np.testing.assert_allclose(from_examples["a"], from_columns["a"])
    np.testing.assert_allclose(from_examples["b"], from_columns["b"])


def test_file_source_takes_the_users_functions_as_estimator_did(file_source, write_module, tmp_path):
    module = write_module("program", PROGRAM)
    loaded, opened = file_source
    source = saved_source(loaded, opened.preprocessor)
    assert source.serving_function(None) is None  # its own receiver
    assert source.serving_function(f"{module}:serving_input_fn") == f"{module}:serving_input_fn"
    with tf.Graph().as_default():
        receiver = source.serving_receiver(tf, function=input_fn_of(f"{module}:serving_input_fn", "--x", tmp_path))
        assert list(receiver.receiver_tensors) == ["x"]
        dataset = source.predict_dataset(tf, function=input_fn_of(f"{module}:input_fn", "--input-fn", tmp_path))
        assert isinstance(dataset, tf.data.Dataset) and isinstance(dataset.element_spec, dict)  # infer mode


@pytest.fixture
def input_fn_source(write_module, tmp_path):
    module = write_module("program", PROGRAM)
    config = {
        "name": "t",
        "graph": {"builder": "linear_regressor", "serving_input_fn": f"{module}:serving_input_fn"},
        "data": {"input_fn": f"{module}:input_fn", "eval_input_fn": f"{module}:eval_input_fn", "seed": 0},
        "hooks": [],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    loaded = load_config(tmp_path / "config.yaml")
    source = open_source(loaded)
    assert isinstance(source, InputFnSource) and source.num_rows is None
    source.open(tmp_path / "preprocessing.json", 0, [], None)
    return loaded, source, module


def test_input_fn_source_calls_the_input_fn_in_each_mode(input_fn_source):
    import sys

    _loaded, source, module = input_fn_source
    modes = sys.modules[module].MODES
    with tf.Graph().as_default():
        train = source.train_dataset(tf, params={})
        evaluation = source.eval_dataset(tf, 4, params={})
        predict = source.predict_dataset(tf, params={})
        assert modes == ["train", "eval", "infer"]
        assert isinstance(train.element_spec, tuple) and isinstance(evaluation.element_spec, tuple)
        assert isinstance(predict.element_spec, dict)  # features alone, as the input_fn gives them in infer mode
        got = _session_values(_first(predict))
    np.testing.assert_array_equal(got["x"], np.arange(10, dtype=np.float32).reshape(5, 2))


def test_input_fn_source_position_and_shard(input_fn_source, tmp_path):
    _loaded, source, _module = input_fn_source
    assert source.shard is None
    graph = tf.Graph()
    with graph.as_default():
        dataset = source.train_dataset(tf, params={})
        make_iterator(tf, dataset).get_next()  # as the graph builder reads it
        state, notes = source.position(tf, graph, resume_path=None, ended_at_data_end=False, on_cluster=False,
                                       own_saver=False)
    assert state is not None and notes == []  # a from_tensor_slices pipeline saves its iterator state
    context = tf.distribute.InputContext(num_input_pipelines=3, input_pipeline_id=2)
    source.open(tmp_path / "preprocessing.json", 0, [], context)
    assert source.shard == (3, 2) and source.train.input_context is context


def test_input_fn_source_serving_receiver_is_graph_serving_input_fn(input_fn_source):
    loaded, source, module = input_fn_source
    with tf.Graph().as_default():
        receiver = source.serving_receiver(tf)
        assert list(receiver.features) == ["x"] and receiver.features["x"].shape.as_list() == [None, 2]
    graph = loaded.config.graph.model_copy(update={"serving_input_fn": None})
    without = InputFnSource(dataclasses.replace(loaded, config=loaded.config.model_copy(update={"graph": graph})))
    assert source.serving_function(None) == f"{module}:serving_input_fn"
    assert without.serving_function("m:given") == "m:given"
    with pytest.raises(SetupError, match="export needs your serving_input_fn"):
        without.serving_function(None)  # before TensorFlow: export refuses at once
    with pytest.raises(SetupError, match="export needs your serving_input_fn"), tf.Graph().as_default():
        without.serving_receiver(tf)


def test_the_tfrecord_format_gives_the_tensor_features_receiver_and_predict_dataset(tmp_path):
    from hookrun.config_schemas.data import TensorFeature

    tensors = {"image": TensorFeature(type="float", shape=[2, 2])}
    path = tmp_path / "d.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(3):
            feature = {"image": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i + 0.5, i + 1, i + 2]))}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    tfrecord = format_named("tfrecord")
    with tf.Graph().as_default():
        receiver = tfrecord.serving_receiver(tf, tensors)
        assert receiver.features["image"].shape.as_list() == [None, 2, 2]
        batch = _session_values(_first(tfrecord.predict_dataset(tf, [(path, "")], tensors, 2)))
    np.testing.assert_allclose(batch["image"], [[[0, 0.5], [1, 2]], [[1, 1.5], [2, 3]]])
    with pytest.raises(NotImplementedError):
        format_named("csv").serving_receiver(tf, tensors)
