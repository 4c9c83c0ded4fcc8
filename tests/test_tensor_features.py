"""TFRecord tensor features from a YAML parse spec (issue 24): fixed shapes, sparse/ragged tokens, raw bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from rich.console import Console

from hookrun.common.errors import DataError, SetupError
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


def test_the_serving_receiver_and_the_predict_dataset_parse_records_as_training(tmp_path):
    """tensor_serving: records of several files in order, each feature in the form training gave it."""
    from hookrun.config_schemas.data import TensorFeature
    from hookrun.runner.data.tensor_serving import EXAMPLES, predict_dataset, serving_receiver

    _write(tmp_path / "one.tfrecord")
    _write(tmp_path / "two.tfrecord")
    tensors = {name: TensorFeature(**spec) for name, spec in COLUMNS.items()}
    files = [(tmp_path / "one.tfrecord", ""), (tmp_path / "two.tfrecord", "")]
    batches = list(predict_dataset(tf, files, tensors, batch_size=10))
    assert [len(batch["jpeg"]) for batch in batches] == [10, 10, 4, 10, 10, 4]  # no batch spans two files
    assert list(batches[0]) == list(COLUMNS)  # spec order
    images = np.concatenate([batch["zimage"].numpy() for batch in batches])
    np.testing.assert_allclose(images[:, 0, 1, 0], [i + 0.1 for i in range(ROWS)] * 2, rtol=1e-6)
    assert isinstance(batches[0]["tokens"], tf.SparseTensor) and isinstance(batches[0]["ids"], tf.RaggedTensor)
    graph = tf.Graph()
    with graph.as_default():
        receiver = serving_receiver(tf, tensors)
        assert list(receiver.receiver_tensors) == [EXAMPLES] and list(receiver.features) == list(COLUMNS)
        with tf.compat.v1.Session() as session:
            served = session.run(receiver.features, {receiver.examples: [_record(i) for i in range(10)]})
    np.testing.assert_array_equal(served["zimage"], batches[0]["zimage"].numpy())
    assert served["ids"].to_list() == batches[0]["ids"].to_list()
    np.testing.assert_array_equal(served["tokens"].values, batches[0]["tokens"].values.numpy())
    assert list(served["jpeg"]) == list(batches[0]["jpeg"].numpy()) == [_record_jpeg(i) for i in range(10)]


def _record_jpeg(i: int) -> bytes:
    return bytes([255, 216, i, 0, 32])


PREDICT_MODEL_FN = """
import tensorflow as tf

from hookrun.runner import layers


def model_fn(features, labels, mode, params):
    image = tf.reshape(features["zimage"], [-1, 4])
    tokens = tf.cast(tf.sparse.reduce_sum(tf.sparse.map_values(tf.strings.length, features["tokens"]), 1), tf.float32)
    ids = tf.cast(features["ids"].row_lengths(), tf.float32)
    jpeg = tf.cast(tf.strings.length(features["jpeg"]), tf.float32)
    net = tf.reshape(tf.concat([features["a"], image, tokens[:, None], ids[:, None], jpeg[:, None]], 1), [-1, 8])
    out = layers.dense(net, 1, "out")
    first_id = features["ids"].to_tensor()[:, 0]
    third_byte = tf.cast(tf.io.decode_raw(features["jpeg"], tf.uint8)[:, 2], tf.int64)  # the bytes, raw
    predictions = {"predictions": out, "pair": tf.concat([out, 2 * out], 1), "first_id": first_id,
                   "third_byte": third_byte}
    if labels is None:
        from hookrun.runner.trained.serving import RegressionOutput

        return {"predictions": predictions, "export_outputs": {"regress": RegressionOutput(out)}}
    return {"loss": tf.reduce_mean(tf.square(out - labels)), "predictions": predictions}
"""


def _trained(make_config, write_module, run_train, tmp_path, model=PREDICT_MODEL_FN, **data):
    """A run of ``model`` trained one epoch on ``data.tfrecord`` (written before), and its directory."""
    module = write_module("tensors_predict", model)
    run = tmp_path / "run"
    hooks = [{"type": "checkpoint_saver", "save_steps": 2}]
    run_train(make_config(graph={"builder": f"{module}:model_fn"}, data=_data(epochs=1, **data), hooks=hooks),
              run_dir=run)
    return run


def _by_hand(run: Path, inputs: np.ndarray) -> np.ndarray:
    """The dense layer of the checkpoint on ``inputs [n, k]``: ``[n]`` (what the model_fn predicts)."""
    reader = tf.train.load_checkpoint(str(tf.train.latest_checkpoint(str(run))))
    return (inputs @ reader.get_tensor("out/kernel") + reader.get_tensor("out/bias"))[:, 0]


def _mixed_inputs(run: Path) -> np.ndarray:
    """The model_fn's ``net`` for the ROWS records of :func:`_record`, computed from the records' definition."""
    import json

    columns = json.loads((run / "preprocessing.json").read_text())["columns"]
    (column,) = [c for c in columns if c["name"] == "a"]  # declared data.columns come first (docs/data.md)
    rows = []
    for i in range(ROWS):
        a = (float(np.float32(i % 5)) - column["mean"]) / column["std"]
        tokens = sum(len(f"w{k}") for k in range(i % 4))
        rows.append([a, *(i + k / 10 for k in range(4)), tokens, i % 3 + 1, 5])
    return np.array(rows)


def _jsonl(path: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in path.read_text().splitlines()]


def test_predict_and_export_of_a_tensor_feature_run_parse_the_records_as_training_did(
    make_config, write_module, run_train, tmp_path
):
    """Fixed shape, sparse and ragged varlen, raw bytes and a column: predict writes every record in order, and the
    SavedModel (loaded by plain TensorFlow in another process) serves serialized records with the same outputs."""
    import json
    import subprocess
    import sys

    from hookrun.runner import export, predict

    with tf.io.TFRecordWriter(str(tmp_path / "data.tfrecord")) as writer:  # and a declared int column
        for i in range(ROWS):
            writer.write(_hostile(i, n=tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2]))))
    run = _trained(make_config, write_module, run_train, tmp_path, columns={**COLUMNS, "n": "int"})
    result = predict(run, [str(tmp_path / "data.tfrecord")], tmp_path / "out.jsonl")
    records = _jsonl(tmp_path / "out.jsonl")
    keys = ["predictions", "pair", "first_id", "third_byte"]
    assert result.rows == ROWS == len(records) and result.columns == keys
    assert [r["third_byte"] for r in records] == list(range(ROWS))  # each record's raw bytes, in record order
    expected = _by_hand(run, _mixed_inputs(run))
    np.testing.assert_allclose([r["predictions"] for r in records], expected, rtol=1e-5)  # record order, the parse
    np.testing.assert_allclose([r["pair"] for r in records], np.stack([expected, 2 * expected], 1), rtol=1e-5)
    assert [r["first_id"] for r in records] == [0] * ROWS  # the ragged ids, as parsed (int64)

    predict(run, [str(tmp_path / "data.tfrecord")], tmp_path / "out.csv")  # one value per cell: the pair split
    lines = (tmp_path / "out.csv").read_text().splitlines()
    assert lines[0] == "row,y,pair_0,pair_1,first_id,third_byte" and len(lines) == ROWS + 1
    np.testing.assert_allclose([float(line.split(",")[1]) for line in lines[1:]], expected, rtol=1e-5)

    exported = export(run, tmp_path / "model")
    assert exported.signatures["serving_default"]["inputs"] == {"examples": "string"}
    assert exported.signatures["examples"]["inputs"] == {"examples": "string"}
    assert exported.signatures["regress"]["inputs"] == {"inputs": "string"}  # TF Serving's regress: records
    script = (
        "import json, sys, tensorflow as tf\n"
        "model = tf.saved_model.load(sys.argv[1])\n"
        "records = tf.constant([r.numpy() for r in tf.data.TFRecordDataset(sys.argv[2])])\n"
        "out = model.signatures['serving_default'](examples=records)\n"
        "out['regress'] = model.signatures['regress'](inputs=records)['outputs']\n"
        "print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))\n"
    )
    served = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "model"), str(tmp_path / "data.tfrecord")],
        capture_output=True, text=True, check=True, env={**__import__("os").environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    outputs = json.loads(served.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(np.ravel(outputs.pop("regress")), expected, rtol=1e-5)
    assert set(outputs) == set(keys)
    for key in outputs:
        np.testing.assert_allclose(outputs[key], [r[key] for r in records], rtol=1e-5)


IMAGE_MODEL_FN = """
import tensorflow as tf

from hookrun.runner import layers


def model_fn(features, labels, mode, params):
    out = layers.dense(tf.reshape(features["zimage"], [-1, 4]), 1, "out")
    return {"loss": None if labels is None else tf.reduce_mean(tf.square(out - labels)), "predictions": out}
"""


def _write_images(path: Path, rows: range = range(ROWS), label: bool = True, gzip: bool = False) -> None:
    options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip else "")
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for i in rows:
            feature = {"zimage": tf.train.Feature(float_list=tf.train.FloatList(value=[i - k / 10 for k in range(4)]))}
            if label:
                feature["y"] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(i % 3)]))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def test_predict_a_run_of_an_image_feature_alone(make_config, write_module, run_train, tmp_path):
    """No one-value column at all: the records alone feed the model (and evaluate reads such a run too)."""
    from hookrun.runner import evaluate, predict

    _write_images(tmp_path / "data.tfrecord")
    run = _trained(make_config, write_module, run_train, tmp_path, IMAGE_MODEL_FN,
                   columns={"zimage": COLUMNS["zimage"]})
    _write_images(tmp_path / "new-1.tfrecord", range(30, 33), label=False)  # no label: nothing needs it
    _write_images(tmp_path / "new-2.tfrecord.gz", range(40, 45), label=False, gzip=True)
    predict(run, [str(tmp_path / "new-*")], tmp_path / "out.jsonl")
    got = [r["predictions"] for r in _jsonl(tmp_path / "out.jsonl")]
    rows = [*range(30, 33), *range(40, 45)]  # the files in sorted order, each in record order
    np.testing.assert_allclose(got, _by_hand(run, np.array([[i - k / 10 for k in range(4)] for i in rows])),
                               rtol=1e-5)
    evaluated = evaluate(run, [str(tmp_path / "data.tfrecord")])  # its preprocessing.json has no column: it loads
    by_hand = _by_hand(run, np.array([[i - k / 10 for k in range(4)] for i in range(ROWS)]))
    np.testing.assert_allclose(evaluated.metrics["val_loss"], np.mean((by_hand - np.arange(ROWS) % 3) ** 2), rtol=1e-5)
    (tmp_path / "new.csv").write_text("zimage,y\n1,2\n")
    with pytest.raises(SetupError, match=r"new.csv: the run reads TFRecord tensor features \(data.columns.zimage\)"):
        predict(run, [str(tmp_path / "new.csv")], tmp_path / "csv.jsonl")
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    with pytest.raises(DataError, match=r"empty.tfrecord: the file is empty"):
        predict(run, [str(tmp_path / "empty.tfrecord")], tmp_path / "empty.jsonl")
    with tf.io.TFRecordWriter(str(tmp_path / "garbage.tfrecord")) as writer:
        writer.write(_record(0))
        writer.write(b"not an Example")
    with pytest.raises(DataError, match=r"garbage.tfrecord: record 2 is not a tf.train.Example the run's parse spec "
                       r"reads \(Could not parse example input, value: 'not an Example'\)$"):
        predict(run, [str(tmp_path / "garbage.tfrecord")], tmp_path / "garbage.jsonl")
    (tmp_path / "cut.tfrecord").write_bytes((tmp_path / "new-1.tfrecord").read_bytes()[:-3])
    with pytest.raises(DataError, match=r"cut.tfrecord: records 1 or after cannot be read as TFRecord \([^\[{]*\)$"):
        predict(run, [str(tmp_path / "cut.tfrecord")], tmp_path / "cut.jsonl")
    assert not [path.name for path in tmp_path.glob("*.jsonl") if path.name != "out.jsonl"]  # nothing written


def _hostile(record: int, **changes) -> bytes:
    """Record ``record`` of :func:`_record` with features replaced (None: removed)."""
    example = tf.train.Example.FromString(_record(record))
    for name, feature in changes.items():
        if feature is None:
            del example.features.feature[name]
        else:
            example.features.feature[name].CopyFrom(feature)
    return example.SerializeToString()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"zimage": None}, r"record 10: feature 'zimage' does not fit data.columns.zimage \(the record lacks it"),
        ({"ids": tf.train.Feature(float_list=tf.train.FloatList(value=[1.5]))},
         r"record 10: feature 'ids' does not fit data.columns.ids \(.*[Dd]ata types? .*match"),
        ({"zimage": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * 9)), "tokens": None,
          "jpeg": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))},
         r"record 10: feature '(zimage|jpeg)' does not fit data.columns.\1 \("),
    ],
    ids=["missing-feature", "wrong-dtype", "another-spec"],
)
def test_predict_names_the_file_and_record_that_does_not_fit_the_spec(
    make_config, write_module, run_train, tmp_path, changes, message
):
    from hookrun.runner import predict

    _write(tmp_path / "data.tfrecord")
    run = _trained(make_config, write_module, run_train, tmp_path)
    bad = tmp_path / "new-2.tfrecord"  # the second file: its records are numbered from 1 again
    with tf.io.TFRecordWriter(str(bad)) as writer:
        for i in range(12):
            writer.write(_hostile(i, **changes) if i == 9 else _record(i))
    _write(tmp_path / "new-1.tfrecord")
    with pytest.raises(DataError, match=f"^{bad}: {message}") as raised:
        predict(run, [str(tmp_path / "new-1.tfrecord"), str(bad)], tmp_path / "out.jsonl")
    assert "\n" not in str(raised.value) and "[Op:" not in str(raised.value)  # one line, for the user
    assert not (tmp_path / "out.jsonl").exists()


def test_an_unused_multi_valued_feature_of_the_records_is_ignored_by_training_and_evaluate(
    make_config, write_module, run_train, tmp_path
):
    """Records often carry more than a run reads (``image/object/bbox/xmin``: several floats). With ``data.features``
    listing the columns, training reads only those, the label and ``data.columns``; ``hookrun evaluate`` reads the
    run's saved columns. Both refused such records before: ``feature 'bbox' has 7 values``."""
    from hookrun.runner import evaluate

    bbox = tf.train.Feature(float_list=tf.train.FloatList(value=[0.5] * 7))
    with tf.io.TFRecordWriter(str(tmp_path / "data.tfrecord")) as writer:
        for i in range(ROWS):
            writer.write(_hostile(i, bbox=bbox))
    run = _trained(make_config, write_module, run_train, tmp_path, features=["a"])
    _write(tmp_path / "plain.tfrecord")  # the same records without it
    with_bbox = evaluate(run, [str(tmp_path / "data.tfrecord")])
    plain = evaluate(run, [str(tmp_path / "plain.tfrecord")])
    assert with_bbox.rows == plain.rows == ROWS and np.isfinite(plain.metrics["val_loss"])
    assert with_bbox.metrics == plain.metrics
    typo = data_config(**{"epochs": 1, "seed": 0, **_data(), "features": ["a", "b"]})  # a listed feature is absent
    with pytest.raises(SetupError, match=r"data.tfrecord:1: no column 'b'; the columns are: a, bbox, y$"):
        scan_data(typo, tmp_path)


def test_towers_split_every_kind_of_tensor_feature_and_train_as_one_device(
    make_config, write_module, run_train, tmp_path
):
    """``device: [cpu:0, cpu:1]`` on a fixed shape, a sparse and a ragged varlen feature and raw bytes: each tower
    gets its half of each (a ragged feature was an internal error: TensorFlow cannot convert a RaggedTensor to a
    Tensor for tf.split), and the weights are one device's on the same batches (a mean loss: the mean of the
    towers' means)."""
    _write(tmp_path / "data.tfrecord")
    module = write_module("tensors_towers", MODEL_FN)
    weights = {}
    for name, device in (("one", "cpu"), ("towers", ["cpu:0", "cpu:1"])):
        hooks = [{"type": "checkpoint_saver", "save_steps": 100}]
        loaded = make_config(graph={"builder": f"{module}:model_fn"}, data=_data(epochs=1), device=device, hooks=hooks)
        run_train(loaded, run_dir=tmp_path / name)
        reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / name)))
        weights[name] = {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map()}
    assert sorted(weights["one"]) == sorted(weights["towers"]) and int(weights["towers"]["global_step"]) == 4
    for key, value in weights["one"].items():  # summation order only
        np.testing.assert_allclose(weights["towers"][key], value, rtol=1e-5, atol=1e-6, err_msg=key)


RAW_MODEL_FN = """
import tensorflow as tf

from hookrun.runner import layers


def model_fn(features, labels, mode, params):
    out = layers.dense(tf.reshape(features["zimage"], [-1, 4]), 1, "out")
    if labels is None:  # the raw bytes passed through, as a model keeps an image's key or thumbnail
        return {"predictions": {"predictions": out, "raw": features["jpeg"]}}
    return {"loss": tf.reduce_mean(tf.square(out - labels)), "predictions": out}
"""


def test_raw_bytes_predictions_are_written_to_csv_without_loss(make_config, write_module, run_train, tmp_path):
    """A `bytes` output that is not UTF-8 (a JPEG's 0xFF 0xD8) became U+FFFD in the CSV, silently: now ``\\xNN``
    escapes, as ``.jsonl`` writes them, so every byte can be read back."""
    import csv

    from hookrun.runner import predict

    _write(tmp_path / "data.tfrecord")
    run = _trained(make_config, write_module, run_train, tmp_path, RAW_MODEL_FN,
                   columns={"zimage": COLUMNS["zimage"], "jpeg": COLUMNS["jpeg"]}, features=["a"])
    predict(run, [str(tmp_path / "data.tfrecord")], tmp_path / "out.csv")
    with open(tmp_path / "out.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["row", "y", "raw"] and len(rows) == ROWS + 1
    assert [row[2] for row in rows[1:]] == [_record_jpeg(i).decode("utf-8", "backslashreplace") for i in range(ROWS)]
    assert rows[1][2] == "\\xff\\xd8\x00\x00 "  # the bytes, each one readable


@pytest.mark.parametrize(
    "spec, issues",
    [
        ({"type": "float", "shape": [-1]},
         ["data.columns.zimage.shape: every dimension of `shape` must be at least 1 (got [-1])"]),
        ({"type": "float", "shape": [1] * 9}, ["data.columns.zimage.shape: at most 8 dimensions"]),
        ({"typo": "float"}, ["data.columns.zimage: missing required key `type`",
                             "data.columns.zimage.typo: unknown key `typo` in `data.columns.zimage` (allowed: type, "
                             "shape, varlen); did you mean `type`?"]),
        ("floot", ["data.columns.zimage: must be one of `float`, `int`, `string` or a mapping (got 'floot'); did you "
                   "mean `float`?"]),
    ],
    ids=["negative-dimension", "too-many-dimensions", "no-type", "a-typo"],
)
def test_a_bad_parse_spec_in_yaml_gets_the_issue_of_what_was_written(make_config, spec, issues):
    """A mapping is a parse spec: its own error, not the one-value type's `must be one of float, int, string`
    (printed first, before), nor `missing required key zimage` for its missing `type`."""
    with pytest.raises(ConfigError) as raised:
        make_config(data={"train": "x.tfrecord", "label": "y", "columns": {"zimage": spec}})
    lines = [line.split(": error: ", 1)[1] for line in str(raised.value).splitlines() if ": error: " in line]
    assert [line[: len(issue)] for line, issue in zip(lines, issues, strict=False)] == issues and len(lines) == len(
        issues), lines


def test_the_statistics_pass_parses_tensor_features_in_chunks_of_bounded_bytes(tmp_path, monkeypatch):
    """TensorFlow allocates ``[rows, *shape]`` per chunk before parsing: 65,536 rows of a [64, 64, 3] float image
    were 3.2 GB. A chunk's fixed-shape tensors now take at most TENSOR_CHUNK_BYTES (here 5 records' worth)."""
    from hookrun.config_schemas.data import TensorFeature
    from hookrun.runner.data import reader
    from hookrun.runner.data.formats import tfrecord
    from hookrun.runner.data.reader import iter_chunks, plan_columns, resolve_sets

    _write(tmp_path / "data.tfrecord")
    monkeypatch.setattr(tfrecord, "TENSOR_CHUNK_BYTES", 5 * 4 * 8)  # zimage: 4 values of 8 bytes
    config = data_config(**{"epochs": 1, "seed": 0, **_data(), "features": ["a"]})
    train, _ = resolve_sets(config, tmp_path, "data.train")
    plan = plan_columns(config, train)
    sizes = [chunk.num_rows for chunk in iter_chunks(train, plan, reader.CHUNK_ROWS, fast_tfrecord=True)]
    assert sizes == [5, 5, 5, 5, 4]  # every record once, in order
    monkeypatch.undo()
    image = TensorFeature(type="float", shape=[64, 64, 3])
    assert tfrecord.tensor_chunk_rows({"image": image}, 65_536) == 682  # 64 MiB: 682 x 12,288 values x 8 bytes


def test_a_shape_typo_is_refused_from_the_first_record_before_tensorflow_allocates_it(tmp_path):
    """`shape: [1000000000]` for 4 values: TensorFlow allocated [rows, 1e9] floats for the first chunk and the process
    died (a segmentation fault under an address-space limit) before its own "Number of float values" error. The first
    record's values are counted first. A child process with 8 GB of address space runs the statistics pass."""
    import resource
    import subprocess
    import sys

    _write(tmp_path / "data.tfrecord")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from hookrun.common.errors import DataError\n"
        "from hookrun.runner.data.streaming import scan_data\n"
        "from tests.conftest import data_config\n"
        "columns = {'zimage': {'type': 'float', 'shape': [1000000000]}}\n"
        "config = data_config(train='data.tfrecord', label='y', columns=columns, features=['a'], shuffle=False)\n"
        "try:\n"
        "    scan_data(config, Path(sys.argv[1]))\n"
        "except DataError as err:\n"
        "    print(err)\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (8 * 2**30, 8 * 2**30))

    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1], preexec_fn=limit)
    assert done.returncode == 0, (done.returncode, done.stderr[-1500:])
    assert done.stdout.strip().endswith(
        "data.tfrecord: record 1: feature 'zimage' does not fit data.columns.zimage (Number of float values != "
        "expected.  Values size: 4 but output shape: [1000000000])"
    ), done.stdout


BATCH_MODEL_FN = """
import tensorflow as tf

from hookrun.runner import layers


def model_fn(features, labels, mode, params):
    out = layers.dense(tf.reshape(features["zimage"], [-1, 4]), 1, "out")
    if labels is None:  # each row's session call's rows
        rows = tf.shape(out)[0]
        return {"predictions": {"predictions": out, "call_rows": tf.fill([rows], rows)}}
    return {"loss": tf.reduce_mean(tf.square(out - labels)), "predictions": out}
"""


def test_predict_feeds_fixed_shape_tensor_features_in_calls_of_bounded_bytes(
    make_config, write_module, run_train, tmp_path, monkeypatch
):
    """4,096 records a session call whatever their size: 8,000 records of a [128, 128, 3] float image took 4.5 GB
    (the parse allocates [rows, *shape], the model's activations scale with the rows). A call's fixed-shape tensors
    now take at most TENSOR_CHUNK_BYTES (here 5 records' worth); the predictions are the same, in order."""
    from hookrun.runner import predict
    from hookrun.runner.data.formats import tfrecord

    _write_images(tmp_path / "data.tfrecord")
    run = _trained(make_config, write_module, run_train, tmp_path, BATCH_MODEL_FN,
                   columns={"zimage": COLUMNS["zimage"]})
    predict(run, [str(tmp_path / "data.tfrecord")], tmp_path / "whole.jsonl")
    monkeypatch.setattr(tfrecord, "TENSOR_CHUNK_BYTES", 5 * 4 * 8)
    predict(run, [str(tmp_path / "data.tfrecord")], tmp_path / "bounded.jsonl")
    whole, bounded = _jsonl(tmp_path / "whole.jsonl"), _jsonl(tmp_path / "bounded.jsonl")
    assert [r["call_rows"] for r in whole] == [ROWS] * ROWS  # 24 tiny records: one call
    assert [r["call_rows"] for r in bounded] == [5] * 20 + [4] * 4
    np.testing.assert_allclose([r["predictions"] for r in bounded], [r["predictions"] for r in whole], rtol=1e-6)
