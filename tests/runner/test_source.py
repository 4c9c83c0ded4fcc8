"""runner/data/source.py: the run's input behind one interface (issue 24): the files source and the input_fn source."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import yaml

from hookrun.runner.config import load_config
from hookrun.runner.data.source import FileSource, InputFnSource, InputSource, open_source
from hookrun.runner.data.streaming import StreamInput, make_iterator
from tests.conftest import base_config


def _batches(dataset, count: int) -> list:
    graph = tf.Graph()
    with graph.as_default():
        nxt = make_iterator(tf, dataset()).get_next()
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.tables_initializer())
            return [session.run(nxt) for _ in range(count)]


def test_files_give_a_file_source_whose_datasets_are_the_stream_inputs(make_config, tmp_path):
    loaded = make_config(data={"validation_split": 0.25, "shuffle": False})
    source = open_source(loaded)
    assert isinstance(source, FileSource) and isinstance(source, InputSource)
    assert source.train is None  # nothing for the graph before open(): the preprocessing needs the checkpoint
    notes: list[str] = []
    source.open(tmp_path / "run" / "preprocessing.json", 0, notes, None)
    assert isinstance(source.train, StreamInput) and source.preprocessor is source.scan.state
    assert source.num_rows == source.scan.train_rows > 0 and source.shard is None
    ours = _batches(lambda: source.train_dataset(tf, skip_steps=1), 2)
    theirs = _batches(lambda: StreamInput(source.scan, source.scan.state, loaded.config.data).train_dataset(tf), 3)[1:]
    for (f1, l1), (f2, l2) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(f1, f2)
        np.testing.assert_array_equal(l1, l2)
    (features, labels), = _batches(lambda: source.eval_dataset(tf, 1000), 1)
    assert features.shape[0] == labels.shape[0] == source.scan.validation_rows
    assert source.position(tf, tf.Graph(), resume_path=None, ended_at_data_end=False, on_cluster=False,
                           own_saver=False) == (None, [])  # resumes by skipping the trained batches


def test_an_input_fn_gives_an_input_fn_source_calling_it_as_estimator_did(write_module, tmp_path):
    module = write_module("source_fns", '''
        import tensorflow as tf

        def input_fn(params, mode):
            rows = params["rows"] if mode == "train" else 3
            features = {"x": tf.range(rows, dtype=tf.float32)}
            return tf.data.Dataset.from_tensor_slices((features, tf.range(rows))).batch(2)
    ''')
    config = base_config(data={})
    config["data"] = {"input_fn": f"{module}:input_fn", "eval_input_fn": f"{module}:input_fn", "seed": 0}
    (tmp_path / "fns.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    loaded = load_config(tmp_path / "fns.yaml")
    source = open_source(loaded)
    assert isinstance(source, InputFnSource) and source.num_rows is None
    source.open(tmp_path / "preprocessing.json", 0, [], None)
    assert source.preprocessor is None
    batches = _batches(lambda: source.train_dataset(tf, params={"rows": 5}), 3)
    assert [list(labels) for _, labels in batches] == [[0, 1], [2, 3], [4]]  # the function's own batches, untouched
    assert batches[0][0]["x"].dtype == np.float32
    evaluated = _batches(lambda: source.eval_dataset(tf, 99, params={"rows": 5}), 2)
    assert [list(labels) for _, labels in evaluated] == [[0, 1], [2]]  # eval mode: its own 3 rows
    with pytest.raises(tf.errors.OutOfRangeError):
        _batches(lambda: source.eval_dataset(tf, 99, params={"rows": 5}), 3)
