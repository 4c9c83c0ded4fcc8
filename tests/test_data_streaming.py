"""Input at scale (issue 14): no data in the graph, streaming sources, formats, split, errors."""

from __future__ import annotations

from pathlib import Path

import yaml

from hookrun.runner.config import load_config
from tests.conftest import base_config, linear_rows, write_csv


def _train_rows(tmp_path: Path, run_train, rows: int, name: str) -> Path:
    """Train 3 steps on ``rows`` rows (with an evaluation over 10% of them); return the run directory."""
    folder = tmp_path / name
    folder.mkdir()
    write_csv(folder / "data.csv", linear_rows(rows))
    config = base_config(
        data={"epochs": 1, "validation_split": 0.1},
        hooks=[
            {"type": "stop_at_step", "last_step": 3},
            {"type": "evaluation", "every_n_steps": 3},
            {"type": "summary_saver", "save_steps": 1},
            {"type": "checkpoint_saver", "save_steps": 3},
        ],
    )
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    run_train(load_config(folder / "config.yaml"), run_dir=folder / "run")
    return folder / "run"


def _size(run_dir: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in run_dir.rglob(pattern))


def test_graph_and_artefacts_do_not_grow_with_rows(tmp_path, run_train):
    small = _train_rows(tmp_path, run_train, 1_000, "small")
    large = _train_rows(tmp_path, run_train, 100_000, "large")
    for pattern in ("*.meta", "events.out.tfevents*", "graph.pbtxt"):
        small_size, large_size = _size(small, pattern), _size(large, pattern)
        assert small_size > 0, pattern
        assert abs(large_size - small_size) < 4096, (pattern, small_size, large_size)


# --------------------------------------------------------------------------- sources and formats

import gzip  # noqa: E402
import json  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from hookrun.common.errors import DataError  # noqa: E402
from hookrun.runner.data.preprocessing import Preprocessor  # noqa: E402
from hookrun.runner.data.reader import load_raw_data  # noqa: E402
from hookrun.runner.data.streaming import StreamInput, check_shards, make_iterator, scan_data  # noqa: E402
from tests.conftest import data_config  # noqa: E402

HEADER = "a,b,colour,y"


def _rows(count: int, start: int = 0) -> list[str]:
    """Rows whose label ``y`` is the row's id (so rows can be traced); values exact in float32."""
    colours = ["red", "green", "blue"]
    return [f"{(i % 17) * 0.25},{(i % 5) - 2.5},{colours[i % 3]},{i}" for i in range(start, start + count)]


def _write_shards(folder: Path, shards: int = 3, rows: int = 40, gz: bool = False) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(shards):
        text = "\n".join([HEADER, *_rows(rows, index * rows)]) + "\n"
        path = folder / f"part-{index}.csv{'.gz' if gz else ''}"
        if gz:
            with gzip.open(path, "wt", encoding="utf-8") as handle:
                handle.write(text)
        else:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def _write_tfrecords(folder: Path, shards: int = 3, rows: int = 40, gz: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    options = tf.io.TFRecordOptions(compression_type="GZIP" if gz else "")
    for index in range(shards):
        name = folder / f"part-{index}.tfrecord{'.gz' if gz else ''}"
        with tf.io.TFRecordWriter(str(name), options) as writer:
            for line in _rows(rows, index * rows):
                a, b, colour, y = line.split(",")
                feature = {
                    "a": tf.train.Feature(float_list=tf.train.FloatList(value=[float(a)])),
                    "b": tf.train.Feature(float_list=tf.train.FloatList(value=[float(b)])),
                    "colour": tf.train.Feature(bytes_list=tf.train.BytesList(value=[colour.encode()])),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(y)])),
                }
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def _all(dataset) -> tuple[np.ndarray, np.ndarray]:
    """Every (features, labels) row of a dataset, run in a graph session as the runner runs it."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        features, labels = make_iterator(tf, dataset()).get_next()
        out = []
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.tables_initializer())
            while True:
                try:
                    out.append(session.run([features, labels]))
                except tf.errors.OutOfRangeError:
                    break
    return np.concatenate([f for f, _ in out]), np.concatenate([lab for _, lab in out])[:, 0]


def _stream(tmp_path: Path, **data) -> StreamInput:
    config = data_config(**{"epochs": 1, "batch_size": 7, "seed": 0, **data})
    scan = scan_data(config, tmp_path)
    return StreamInput(scan, scan.state, config)


SPECS = {
    "glob": "shards/*.csv",
    "list": ["shards/part-0.csv", "shards/part-1.csv", "shards/part-2.csv"],
    "directory": "shards",
    "glob-list": ["shards/part-0.csv", "shards/part-[12].csv"],
}


@pytest.mark.parametrize("spec", list(SPECS), ids=list(SPECS))
def test_a_glob_list_or_directory_reads_every_shard(tmp_path, spec):
    _write_shards(tmp_path / "shards")
    (tmp_path / "shards" / "README.txt").write_text("not data")  # a directory takes the data files only
    stream = _stream(tmp_path, train=SPECS[spec])
    assert [f.path.name for f in stream.scan.train.files] == ["part-0.csv", "part-1.csv", "part-2.csv"]
    features, labels = _all(lambda: stream.train_dataset(tf))
    assert sorted(labels.tolist()) == list(range(120))
    assert features.shape == (120, 5)  # a, b, colour=blue/green/red


def _one_file_state(tmp_path: Path):
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "data.csv").write_text("\n".join([HEADER, *_rows(120)]) + "\n")
    config = data_config(train="one/data.csv")
    raw = load_raw_data(config, tmp_path)
    return Preprocessor.fit(raw.train, config, raw.split), raw, config


@pytest.mark.parametrize("kind", ["csv.gz", "tfrecord", "tfrecord.gz"])
def test_gzip_csv_and_tfrecord_give_the_rows_and_statistics_of_the_csv(tmp_path, kind):
    if kind == "csv.gz":
        _write_shards(tmp_path / "shards", gz=True)
    else:
        _write_tfrecords(tmp_path / "shards", gz=kind.endswith(".gz"))
    stream = _stream(tmp_path, train="shards", shuffle=False)
    state, raw, _ = _one_file_state(tmp_path)
    fitted = stream.scan.state
    assert fitted.feature_names == state.feature_names == ["a", "b", "colour=blue", "colour=green", "colour=red"]
    for mine, theirs in zip(fitted.columns, state.columns, strict=True):
        assert (mine.kind, mine.vocabulary) == (theirs.kind, theirs.vocabulary)
        assert mine.mean == pytest.approx(theirs.mean) and mine.std == pytest.approx(theirs.std)
    features, labels = _all(lambda: stream.train_dataset(tf))
    expected = state.transform(raw.train)
    order = np.argsort(labels)
    np.testing.assert_array_equal(labels[order], expected.labels[:, 0])
    np.testing.assert_allclose(features[order], expected.features, rtol=1e-6, atol=1e-6)


def test_data_format_names_the_format_of_files_without_an_ending(tmp_path):
    _write_tfrecords(tmp_path / "shards", shards=1)
    (tmp_path / "shards" / "part-0.tfrecord").rename(tmp_path / "shards" / "records")
    with pytest.raises(DataError, match=r"records: unknown data format; hookrun reads CSV \(\.csv, \.csv\.gz\), "
                       r"TFRecord .* or JSON lines \(\.jsonl, \.jsonl\.gz\)"):
        _stream(tmp_path, train="shards/records")
    assert _stream(tmp_path, train="shards/records", format="tfrecord").scan.train_rows == 40


def test_the_streamed_pipeline_equals_the_numpy_transform_with_gaps_and_drops(tmp_path):
    lines = _rows(60)
    lines[3] = "NA,1,red,3"  # filled with the median
    lines[10] = "1,2,,10"  # a categorical gap: constant
    lines[20] = "1,2,red,"  # no label: dropped
    (tmp_path / "data.csv").write_text("\n".join([HEADER, *lines]) + "\n\n")
    data = {
        "missing_by_column": {"a": "median", "colour": {"constant": "grey"}, "y": "drop"},
        "validation_split": 0.25,
        "shuffle": False,
    }
    stream = _stream(tmp_path, **data)
    config = data_config(**{"epochs": 1, "batch_size": 7, "seed": 0, **data})
    raw = load_raw_data(config, tmp_path)
    state = Preprocessor.fit(raw.train, config, raw.split)
    assert stream.scan.state.to_json() == state.to_json()
    for dataset, part in [(lambda: stream.train_dataset(tf), raw.train), (lambda: stream.evaluation().dataset(tf, 5),
                                                                          raw.validation)]:
        features, labels = _all(dataset)
        expected = state.transform(part)
        order = np.argsort(labels)
        np.testing.assert_array_equal(labels[order], np.sort(expected.labels[:, 0]))
        np.testing.assert_allclose(features[order], expected.features[np.argsort(expected.labels[:, 0])], atol=1e-6)
    assert stream.scan.validation_rows == len(_all(lambda: stream.evaluation().dataset(tf, 5))[1])


def test_the_validation_split_is_the_same_rows_every_run_and_never_in_both(tmp_path):
    _write_shards(tmp_path / "shards", shards=3, rows=200)
    streams = [_stream(tmp_path, train="shards", validation_split=0.3) for _ in range(2)]
    train = [_all(lambda s=s: s.train_dataset(tf))[1] for s in streams]
    held = [_all(lambda s=s: s.evaluation().dataset(tf, 9))[1] for s in streams]
    assert set(train[0]) == set(train[1]) and list(held[0]) == list(held[1])
    assert not set(train[0]) & set(held[0])
    assert sorted([*train[0], *held[0]]) == list(range(600))
    assert 130 < len(held[0]) < 230


@pytest.mark.parametrize(("cache_bytes", "buffer"), [(0, 16), (1 << 20, 16), (1 << 20, 90)],
                         ids=["streamed", "cached", "cached-epoch-in-buffer"])
@pytest.mark.parametrize("skip", [1, 6, 13])
def test_resume_skips_the_batches_already_trained_on(tmp_path, skip, cache_bytes, buffer, monkeypatch):
    monkeypatch.setattr("hookrun.runner.data.streaming.CACHE_BYTES", cache_bytes)
    _write_shards(tmp_path / "shards", shards=3, rows=30)
    stream = _stream(tmp_path, train="shards", epochs=2, shuffle_buffer=buffer)
    assert stream.cached == (cache_bytes > 0)

    def batches(skip_steps):
        graph = tf.Graph()
        with graph.as_default():
            tf.compat.v1.set_random_seed(0)
            _, labels = make_iterator(tf, stream.train_dataset(tf, skip_steps)).get_next()
            out = []
            with tf.compat.v1.Session(graph=graph) as session:
                session.run(tf.compat.v1.tables_initializer())
                while True:
                    try:
                        out.append(session.run(labels)[:, 0].tolist())
                    except tf.errors.OutOfRangeError:
                        return out

    full = batches(0)
    assert len(full) == -(-180 // 7)
    first_epoch = [y for batch in full for y in batch][:90]
    assert sorted(first_epoch) == list(range(90)) and first_epoch != sorted(first_epoch)
    assert batches(skip) == full[skip:]


@pytest.mark.parametrize(("shards", "workers"), [(4, 2), (1, 3)], ids=["by-file", "by-row"])
def test_workers_read_disjoint_shards_that_cover_the_data(tmp_path, shards, workers):
    _write_shards(tmp_path / "shards", shards=shards, rows=30)
    config = data_config(train="shards", epochs=1, batch_size=7, seed=0)
    scan = scan_data(config, tmp_path, shards=workers)
    seen = []
    for index in range(workers):
        stream = StreamInput(scan, scan.state, config, shard=(workers, index))
        labels = _all(lambda s=stream: s.train_dataset(tf))[1]
        assert len(labels) == scan.shard_rows[index] > 0  # the pass counts each task's rows as tf.data reads them
        seen.append(set(labels.tolist()))
    assert sum(len(s) for s in seen) == len(set().union(*seen)) == shards * 30


@pytest.mark.parametrize(("shards", "workers"), [(4, 2), (1, 3)], ids=["by-file", "by-row"])
def test_workers_repeat_their_own_small_epoch(tmp_path, shards, workers, monkeypatch):
    from hookrun.runner.data import streaming

    calls = []
    real = streaming.repeat_epoch
    monkeypatch.setattr(streaming, "repeat_epoch", lambda *args: calls.append(args[2]) or real(*args))
    _write_shards(tmp_path / "shards", shards=shards, rows=30)
    config = data_config(train="shards", epochs=3, batch_size=7, seed=0)
    scan = scan_data(config, tmp_path, shards=workers)
    for index in range(workers):
        stream = StreamInput(scan, scan.state, config, shard=(workers, index))
        labels = _all(lambda s=stream: s.train_dataset(tf))[1].astype(int).tolist()
        rows = scan.shard_rows[index]
        assert calls[-1] == rows and len(labels) == 3 * rows  # the path of a small epoch, this task's rows
        epochs = [labels[i * rows:(i + 1) * rows] for i in range(3)]
        assert sorted(epochs[0]) == sorted(epochs[1]) == sorted(epochs[2]) and epochs[0] != epochs[1]


# --------------------------------------------------------------------------- errors


def test_a_glob_that_matches_nothing_names_the_pattern(tmp_path):
    with pytest.raises(DataError, match=r"the pattern `shards/\*\.csv` in `data\.train` matches no file"):
        _stream(tmp_path, train="shards/*.csv")


def test_a_binary_file_named_csv_says_which_formats_are_accepted(tmp_path):
    (tmp_path / "data.csv").write_bytes(b"\x1f\x8b\x08\x00\xff\xfe\x00\x00garbage")
    accepted = r"hookrun reads CSV \(\.csv, \.csv\.gz\), TFRecord .* or JSON lines"
    with pytest.raises(DataError, match=r"data\.csv: not UTF-8 text .*" + accepted):
        _stream(tmp_path)


def test_a_truncated_tfrecord_names_the_record(tmp_path):
    _write_tfrecords(tmp_path / "shards", shards=1, rows=5)
    path = tmp_path / "shards" / "part-0.tfrecord"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(DataError, match=r"part-0\.tfrecord: record 5 is truncated"):
        _stream(tmp_path, train="shards")


def test_a_bad_cell_deep_in_a_later_shard_names_file_line_and_column(tmp_path):
    paths = _write_shards(tmp_path / "shards", shards=3, rows=400)
    lines = paths[2].read_text().splitlines()
    lines[351] = lines[351].replace(lines[351].split(",")[1], "oops", 1)
    paths[2].write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as info:
        _stream(tmp_path, train="shards/*.csv")
    assert str(info.value).startswith(f"{paths[2]}:352: column 'b' (column 2) has 'oops', not a number")
    assert f"numeric in the first 200 rows of {paths[0]}" in str(info.value)


# --------------------------------------------------------------------------- issue 12, items 7 and 14

from typer.testing import CliRunner  # noqa: E402

from hookrun.cli.app import app  # noqa: E402

cli = CliRunner(env={"COLUMNS": "250"})


def _validate(tmp_path: Path, **data) -> tuple[int, str]:
    config = base_config(data=data)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = cli.invoke(app, ["validate", str(tmp_path / "config.yaml")])
    return result.exit_code, result.output


def test_validate_refuses_a_device_instead_of_reading_it_forever(tmp_path):
    code, output = _validate(tmp_path, train="/dev/zero")
    assert code == 2
    assert "/dev/zero: not a regular file" in output


def test_validate_bounds_the_line_length_of_its_sample(tmp_path):
    (tmp_path / "data.csv").write_text("a,b,y\n" + "1" * 3_000_000)  # one 3 MB line, no newline
    code, output = _validate(tmp_path)
    assert code == 2
    assert "data.csv:2: a line longer than 1,048,576 characters" in output


def test_text_deep_in_a_numeric_column_is_an_error_not_a_one_hot_column(tmp_path, run_train):
    rows = linear_rows(20_000)
    path = write_csv(tmp_path / "data.csv", rows)
    lines = path.read_text().splitlines()
    lines[15_000] = "oops," + lines[15_000].split(",", 1)[1]
    path.write_text("\n".join(lines) + "\n")
    assert _validate(tmp_path)[0] == 0  # the sample (first 200 rows) fixes column a as numeric
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(base_config()), encoding="utf-8")
    with pytest.raises(DataError) as info:
        run_train(load_config(tmp_path / "config.yaml"))
    assert str(info.value).startswith(f"{path}:15001: column 'a' (column 1) has 'oops', not a number")
    assert "numeric in the first 200 rows" in str(info.value)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_a_categorical_column_over_max_categories_is_refused(tmp_path):
    lines = [f"id{i},{i % 7},{i}" for i in range(300)]
    (tmp_path / "data.csv").write_text("\n".join(["name,b,y", *lines]) + "\n")
    code, output = _validate(tmp_path, max_categories=50)
    assert code == 2
    assert "data.csv:52: column 'name' (column 1) has 'id50', distinct value number 51" in output
    assert "`data.max_categories` (50)" in output
    with pytest.raises(DataError, match=r"data\.csv:1002: column 'name' .*distinct value number 1,001"):
        (tmp_path / "data.csv").write_text("\n".join(["name,b,y", *[f"id{i},1,{i}" for i in range(1500)]]) + "\n")
        _stream(tmp_path)  # the default bound: 1,000
    assert _stream(tmp_path, max_categories=2000).scan.state.columns[0].vocabulary[:2] == ["id0", "id1"]


def test_wide_rows_get_smaller_parse_batches():
    from hookrun.runner.data.streaming import PARSE_BATCH, PARSE_BATCH_BYTES, parse_batch_rows

    assert parse_batch_rows(10) == PARSE_BATCH  # California
    wide = parse_batch_rows(20_000)
    assert 64 <= wide < PARSE_BATCH and wide * 20_000 * 16 <= max(PARSE_BATCH_BYTES, 64 * 20_000 * 16)
    assert parse_batch_rows(10_000_000) == 64


@pytest.mark.parametrize("parse_batch", [None, 7], ids=["one-batch", "batches-of-7"])
def test_blank_lines_and_quoted_cells_keep_the_pass_and_tf_data_in_step(tmp_path, parse_batch, monkeypatch):
    if parse_batch:  # line numbers (the split's hash) counted across tf.data's parse batches, the header in the first
        monkeypatch.setattr("hookrun.runner.data.streaming.PARSE_BATCH", parse_batch)
    lines = _rows(300)
    lines[100] = '"1.5","2","red","100"'  # quoted cells
    text = "\n".join([HEADER, *lines[:150], "", *lines[150:]]) + "\n"  # a blank line in the middle
    (tmp_path / "data.csv").write_text(text)
    stream = _stream(tmp_path, validation_split=0.3)
    held = _all(lambda: stream.evaluation().dataset(tf, 8))[1]
    trained = _all(lambda: stream.train_dataset(tf))[1]
    assert len(held) == stream.scan.validation_rows and len(trained) == stream.scan.train_rows
    assert sorted([*held, *trained]) == list(range(300))
    lines[250] = '"1.5","2","gr\neen","250"'  # a line break in a quoted cell, after the 200-row sample
    (tmp_path / "data.csv").write_text("\n".join([HEADER, *lines[:150], "", *lines[150:]]) + "\n")
    with pytest.raises(DataError, match=r"data\.csv:253: a quoted cell spans lines 253-254"):
        _stream(tmp_path)


# --------------------------------------------------------------------------- data.columns (TFRecord types)


def _write_examples(path: Path, records: list[dict]) -> None:
    """Write ``tf.train.Example`` records from dicts feature -> a float, an int or a str."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            feature = {}
            for name, value in record.items():
                if isinstance(value, str):
                    feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
                elif isinstance(value, int):
                    feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
                else:
                    feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def _sparse_records(count: int = 300, absent: int = 3) -> list[dict]:
    """Records whose int64 feature ``rooms`` is absent from the first ``absent`` ones."""
    return [
        {"a": float(i % 7), "y": float(i), **({"rooms": i % 5} if i >= absent else {})} for i in range(count)
    ]


def test_data_columns_makes_a_feature_the_first_record_lacks_a_column_of_its_type(tmp_path):
    _write_examples(tmp_path / "shards" / "part-0.tfrecord", _sparse_records())
    plain = _stream(tmp_path, train="shards", label="y")
    assert plain.feature_names == ["a"]  # the columns are the first record's features
    data = {"train": "shards", "label": "y", "columns": {"rooms": "int"}, "missing_by_column": {"rooms": "median"},
            "shuffle": False}
    stream = _stream(tmp_path, **data)
    # data.columns' features first, in declaration order (then the first record's)
    assert stream.feature_names == ["rooms", "a"] and stream.scan.train.dtypes["rooms"] == "int64"
    assert stream.scan.state.columns[0].fill == 2.0  # the median of i % 5 over the records that have it
    config = data_config(**{"epochs": 1, "batch_size": 7, "seed": 0, **data})
    raw = load_raw_data(config, tmp_path)
    expected = Preprocessor.fit(raw.train, config, raw.split).transform(raw.train)
    features, labels = _all(lambda: stream.train_dataset(tf))
    np.testing.assert_array_equal(labels, expected.labels[:, 0])
    np.testing.assert_allclose(features, expected.features, rtol=1e-6, atol=1e-6)


def test_data_columns_that_disagrees_with_the_records_names_the_record_and_the_fix(tmp_path):
    _write_examples(tmp_path / "shards" / "part-0.tfrecord", _sparse_records())
    with pytest.raises(DataError, match=r"part-0\.tfrecord: record 1: feature 'a' holds a float_list, but "
                       r"data\.columns\.a is int; set it to float") as info:
        _stream(tmp_path, train="shards", label="y", columns={"a": "int"})
    assert info.value.loc == ("data", "columns", "a")


def test_data_columns_disagreeing_deep_in_a_file_names_the_record_tensorflow_failed_on(tmp_path):
    records = _sparse_records(count=600)
    records[450]["rooms"] = 2.5  # a float where data.columns says int, after the 200-record sample
    _write_examples(tmp_path / "shards" / "part-0.tfrecord", records)
    with pytest.raises(DataError, match=r"part-0\.tfrecord: record 451: feature 'rooms' holds a float_list, but "
                       r"data\.columns\.rooms is int; set it to float"):
        _stream(tmp_path, train="shards", label="y", columns={"rooms": "int"}, missing_by_column={"rooms": "median"})


def test_data_columns_naming_a_feature_no_record_has_is_an_error(tmp_path):
    _write_examples(tmp_path / "shards" / "part-0.tfrecord", _sparse_records())
    with pytest.raises(DataError, match=r"no record of the first 200 has a value for feature 'room', which data\."
                       r"columns names \(their features: a, rooms, y\); fix the name") as info:
        _stream(tmp_path, train="shards", label="y", columns={"room": "int"})
    assert info.value.loc == ("data", "columns", "room")


def test_data_columns_is_refused_for_csv(tmp_path):
    _write_shards(tmp_path / "shards", shards=1)
    with pytest.raises(DataError, match=r"`data\.columns` sets the value types of TFRecord features, but .*part-0\.csv "
                       r"is CSV"):
        _stream(tmp_path, train="shards", columns={"a": "float"})
    with pytest.raises(ValueError, match=r"`columns` sets the value types of TFRecord features"):
        data_config(train="shards", format="csv", columns={"a": "float"})
    with pytest.raises(ValueError, match=r"Input should be 'float', 'int' or 'string'"):
        data_config(train="shards", columns={"a": "double"})


# --------------------------------------------------------------------------- more training tasks than data


def test_a_training_task_that_would_get_no_rows_is_refused_by_line(tmp_path):
    (tmp_path / "data.csv").write_text("\n".join([HEADER, *_rows(2)]) + "\n")  # lines 2 and 3
    config = data_config(train="data.csv", epochs=1, seed=0)
    tasks = ["chief:0", "worker:0", "worker:1"]
    scan = scan_data(config, tmp_path, shards=3)
    assert scan.shard_rows == [1, 0, 1]  # line % 3: line 1 is the header
    with pytest.raises(DataError, match=r"^worker:0 would get no training rows: 3 training tasks share 2 training "
                       r"row\(s\) by line \(1 file\(s\), fewer than the tasks: task i reads lines i, i \+ 3, \.\.\.\); "
                       r"run fewer workers, or give `data.train` more rows or files$") as info:
        check_shards(scan, tasks)
    assert info.value.loc == ("data", "train")
    check_shards(scan_data(config, tmp_path, shards=2), tasks[:2])  # two tasks: a row each


def test_a_training_task_whose_files_lose_every_row_is_refused_by_file(tmp_path):
    paths = _write_shards(tmp_path / "shards", shards=2, rows=5)
    lines = paths[1].read_text().splitlines()
    paths[1].write_text("\n".join([lines[0], *[line.rsplit(",", 1)[0] + "," for line in lines[1:]]]) + "\n")
    config = data_config(train="shards", epochs=1, seed=0, missing_by_column={"y": "drop"})
    scan = scan_data(config, tmp_path, shards=2)
    assert scan.shard_rows == [5, 0]
    with pytest.raises(DataError, match=r"^worker:1 would get no training rows: 2 training tasks share 5 training "
                       r"row\(s\) by file \(2 files: task i reads files i, i \+ 2, \.\.\.\)"):
        check_shards(scan, ["worker:0", "worker:1"])


def test_prepare_on_a_cluster_with_more_tasks_than_lines_refuses_before_tensorflow_is_used(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from rich.console import Console

    import hookrun.runner.training.prepare as prepare_phase
    from hookrun.runner.cluster.plan import Task
    from hookrun.runner.roles import ClusterTaskRole

    (tmp_path / "data.csv").write_text("\n".join([HEADER, *_rows(2)]) + "\n")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(base_config()), encoding="utf-8")
    tasks = [Task("chief", 0), Task("worker", 0), Task("worker", 1)]
    role = ClusterTaskRole(SimpleNamespace(training_tasks=tasks, replica=2))
    monkeypatch.setattr(prepare_phase, "import_tensorflow", lambda verbose: pytest.fail("TensorFlow set up first"))
    with pytest.raises(DataError, match=r"^worker:0 would get no training rows: 3 training tasks share 2"):
        prepare_phase.prepare(load_config(tmp_path / "config.yaml"), tmp_path / "run", Console(quiet=True), False,
                              role=role)


# --------------------------------------------------------------------------- the chunked shuffle buffer


def _row_id_chunks(chunks: list[int]) -> tf.data.Dataset:
    """Chunks of the given sizes of ``(features, labels)``, both ``[rows, 1]`` row ids 0.., in the default graph."""
    ids = np.arange(sum(chunks), dtype=np.float32)
    parts = np.split(ids, np.cumsum(chunks)[:-1])
    return tf.data.Dataset.from_generator(
        lambda: ((p[:, None] * 0 + p[:, None], p[:, None]) for p in parts),
        output_signature=(tf.TensorSpec([None, 1], tf.float32), tf.TensorSpec([None, 1], tf.float32)),
    )


def _row_ids_out(graph: tf.Graph, ds: tf.data.Dataset, take_rows: int | None = None) -> list[int]:
    """The label row ids ``ds`` (of :func:`_row_id_chunks` rows) hands out, to its end or past ``take_rows``."""
    features, labels = make_iterator(tf, ds).get_next()
    out: list[int] = []
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(tf.compat.v1.tables_initializer())
        while take_rows is None or len(out) < take_rows:
            try:
                f, lab = session.run([features, labels])
            except tf.errors.OutOfRangeError:
                break
            assert (f == lab).all()  # features and labels stay paired
            out.extend(int(v) for v in lab[:, 0])
    return out


def _shuffled(
    chunks: list[int], buffer_rows: int, seed: int | None, epochs: int = 1, shuffle: str = "shuffle_chunks"
) -> list[list[int]]:
    """Row ids out of ``shuffle`` (a function of streaming.py) over chunks of the given sizes (ids 0..), per epoch."""
    from hookrun.runner.data import streaming

    graph = tf.Graph()
    with graph.as_default():
        ds = _row_id_chunks(chunks)
        ds = getattr(streaming, shuffle)(tf, ds, buffer_rows, seed).repeat(epochs).rebatch(5)
        out = _row_ids_out(graph, ds)
    rows = sum(chunks)
    return [out[i * rows:(i + 1) * rows] for i in range(epochs)]


def test_the_chunked_shuffle_hands_out_every_row_once_reshuffled_each_epoch():
    chunks = [7, 0, 13, 40, 1, 25, 14]  # 100 rows; an empty chunk too
    first, second = _shuffled(chunks, buffer_rows=30, seed=3, epochs=2)
    assert sorted(first) == sorted(second) == list(range(100))  # each epoch: every row once
    assert first != list(range(100)) and first != second  # shuffled, and differently each epoch
    assert _shuffled(chunks, buffer_rows=30, seed=3, epochs=2) == [first, second]  # the same in every run
    assert _shuffled(chunks, buffer_rows=30, seed=4)[0] != first
    # a bounded buffer: no row is handed out before the buffer (plus an eighth and a chunk) has seen it
    assert all(position >= row - (30 + 3 + 40) for position, row in enumerate(first))
    assert sorted(_shuffled(chunks, buffer_rows=1000, seed=None)[0]) == list(range(100))  # more buffer than rows


def _repeated(
    chunks: list[int], epochs: int | None, seed: int | None, shuffle: bool = True, skip_rows: int = 0,
    group_rows: int | None = None, take_rows: int | None = None, monkeypatch=None,
) -> list[int]:
    """Row ids out of ``repeat_epoch`` over chunks of the given sizes (ids 0..), rebatched by 5; all of them or
    the first ``take_rows``; ``group_rows`` sets :data:`GROUP_ROWS` (the epochs per element)."""
    from hookrun.runner.data import streaming

    if group_rows is not None:
        monkeypatch.setattr(streaming, "GROUP_ROWS", group_rows)
    graph = tf.Graph()
    with graph.as_default():
        ds = _row_id_chunks(chunks)
        ds = streaming.repeat_epoch(tf, ds, sum(chunks), epochs, shuffle, seed, skip_rows).rebatch(5)
        out = _row_ids_out(graph, ds, take_rows)
    return out if take_rows is None else out[:take_rows]


CHUNKS = [7, 0, 13, 40, 1, 25, 14]  # 100 rows; an empty chunk too


@pytest.mark.parametrize("group_rows", [100, 250, 4096], ids=["1-epoch", "2-epochs", "40-epochs"])
def test_a_small_epoch_repeated_by_groups_is_a_new_permutation_each_epoch(group_rows, monkeypatch):
    """``repeat_epoch``, cached data no larger than the buffer: every epoch every row once, all rows mixed."""
    out = _repeated(CHUNKS, epochs=5, seed=3, group_rows=group_rows, monkeypatch=monkeypatch)
    assert len(out) == 500  # exactly epochs x rows
    epochs = [out[i * 100:(i + 1) * 100] for i in range(5)]
    assert all(sorted(epoch) == list(range(100)) for epoch in epochs)  # each epoch: every row once
    assert len({tuple(epoch) for epoch in epochs}) == 5 and epochs[0] != list(range(100))  # a new order each epoch
    assert any(row >= 86 for row in epochs[0][:20])  # the last chunk's rows mix into the start: one permutation
    assert _repeated(CHUNKS, 5, 3, group_rows=group_rows, monkeypatch=monkeypatch) == out  # the same every run
    assert _repeated(CHUNKS, 1, 4)[:100] != epochs[0]  # another seed, another order
    assert _repeated(CHUNKS, 1, None) != _repeated(CHUNKS, 1, None)  # no seed: a new order every run


def test_the_order_of_an_epoch_does_not_depend_on_the_epochs_per_element(monkeypatch):
    one = _repeated(CHUNKS, epochs=7, seed=3, group_rows=1, monkeypatch=monkeypatch)
    assert _repeated(CHUNKS, epochs=7, seed=3, group_rows=300, monkeypatch=monkeypatch) == one  # 3 epochs each
    assert _repeated(CHUNKS, epochs=7, seed=3, group_rows=4096, monkeypatch=monkeypatch) == one  # all in one
    assert _repeated(CHUNKS, epochs=None, seed=3, take_rows=700) == one  # forever: the same first 7 epochs


def test_every_order_of_a_small_epoch_is_equally_likely():
    out = _repeated([3], epochs=6000, seed=0)
    counts: dict[tuple[int, ...], int] = {}
    for i in range(0, len(out), 3):
        counts[tuple(out[i:i + 3])] = counts.get(tuple(out[i:i + 3]), 0) + 1
    assert len(counts) == 6 and sum(counts.values()) == 6000
    assert all(870 < n < 1130 for n in counts.values()), counts  # 1000 each, 4 standard deviations


@pytest.mark.parametrize("shuffle", [True, False], ids=["shuffle", "no-shuffle"])
@pytest.mark.parametrize("skip_rows", [5, 95, 100, 235, 600, 2000])
def test_a_resumed_small_epoch_continues_the_same_sequence(shuffle, skip_rows, monkeypatch):
    full = _repeated(CHUNKS, epochs=6, seed=3, shuffle=shuffle)  # all 6 epochs in one element
    monkeypatch.setattr("hookrun.runner.data.streaming.GROUP_ROWS", 200)  # 2 epochs an element from here on
    if not shuffle:
        assert full == list(range(100)) * 6
    assert _repeated(CHUNKS, 6, 3, shuffle=shuffle, skip_rows=skip_rows) == full[skip_rows:]
    endless = _repeated(CHUNKS, None, 3, shuffle=shuffle, take_rows=skip_rows + 100)
    assert _repeated(CHUNKS, None, 3, shuffle=shuffle, skip_rows=skip_rows, take_rows=100) == endless[skip_rows:]


@pytest.mark.parametrize(
    ("data", "group_rows", "repeated"),
    [
        ({"epochs": 3, "shuffle_buffer": 90}, 4096, True),  # the epoch fits the buffer
        ({"epochs": 3, "shuffle_buffer": 89}, 4096, False),  # it does not: the chunked shuffle
        ({"epochs": 1, "shuffle_buffer": 90}, 4096, False),  # one epoch: nothing cached, nothing repeated
        ({"epochs": 3, "shuffle": False}, 90, True),  # no shuffle: an epoch of at most GROUP_ROWS rows
        ({"epochs": 3, "shuffle": False}, 89, False),  # a larger one streams from the cache
    ],
    ids=["fits", "over-buffer", "one-epoch", "no-shuffle-small", "no-shuffle-large"],
)
def test_train_dataset_repeats_a_small_cached_epoch_by_groups(tmp_path, data, group_rows, repeated, monkeypatch):
    from hookrun.runner.data import streaming

    monkeypatch.setattr(streaming, "GROUP_ROWS", group_rows)
    calls = []
    real = streaming.repeat_epoch

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(streaming, "repeat_epoch", spy)
    _write_shards(tmp_path / "shards", shards=3, rows=30)
    stream = _stream(tmp_path, train="shards", **data)
    labels = _all(lambda: stream.train_dataset(tf))[1].astype(int).tolist()
    assert bool(calls) == repeated
    epochs = data["epochs"]
    assert len(labels) == epochs * 90  # exactly epochs x rows
    for i in range(epochs):
        assert sorted(labels[i * 90:(i + 1) * 90]) == list(range(90))  # each epoch every row once
    if data.get("shuffle", True) and epochs > 1:
        assert labels[:90] != labels[90:180]  # a new order each epoch
    if not data.get("shuffle", True):
        assert labels[:90] == labels[90:180] == labels[180:]  # the first epoch's order, every epoch



@pytest.mark.parametrize("shuffle", [True, False], ids=["shuffle", "no-shuffle"])
@pytest.mark.parametrize("steps_per_run", [1, 4])
def test_a_resumed_run_trains_on_the_batches_of_an_uninterrupted_one(make_config, run_train, tmp_path, shuffle,
                                                                      steps_per_run):
    """A small cached epoch (64 rows, batch 8), stopped at step 12 and resumed: every history row (the loss over
    each window of steps, up to step 30) is that of the run that went straight to 30."""
    def history(name: str, last_step: int) -> dict[int, float]:
        loaded = make_config(
            hooks=[{"type": "stop_at_step", "last_step": last_step}, {"type": "history_saver", "every_n_step": 1},
                   {"type": "checkpoint_saver", "save_steps": 1000}],
            data={"epochs": None, "shuffle": shuffle}, session={"steps_per_run": steps_per_run},
            filename=f"{name}.yaml",
        )
        result = run_train(loaded, run_dir=tmp_path / name)
        return {int(row["step"]): float(row["total_loss"]) for row in result.history}

    straight = history("straight", 30)
    assert max(straight) == 30 and len(straight) == (30 if steps_per_run == 1 else 8)  # windows 4, 8, ... 28, 30
    history("resumed", 12)
    resumed = history("resumed", 30)
    assert sorted(resumed) == sorted(straight)
    for step, loss in resumed.items():
        assert loss == pytest.approx(straight[step], rel=1e-6), step


def test_tfrecord_columns_follow_data_columns_then_pixel_order_never_the_alphabet(tmp_path):
    # an image stored one value a feature, names not zero-padded: the alphabet would read p0, p1, p10, p11, p2, ...
    records = [{**{f"p{k}": float(i * 12 + k) for k in range(12)}, "zeta": float(i), "alpha": float(-i), "y": float(i)}
               for i in range(20)]
    _write_examples(tmp_path / "shards" / "part-0.tfrecord", records)
    pixels = [f"p{k}" for k in range(12)]
    assert _stream(tmp_path, train="shards", label="y").feature_names == ["alpha", *pixels, "zeta"]
    declared = _stream(tmp_path, train="shards", label="y", shuffle=False, columns={"zeta": "float", "p3": "float"})
    assert declared.feature_names == ["zeta", "p3", "alpha", *[p for p in pixels if p != "p3"]]
    features, _ = _all(lambda: declared.train_dataset(tf))
    raw = np.array([[r[name] for name in declared.feature_names] for r in records])
    np.testing.assert_allclose(features, (raw - raw.mean(0)) / raw.std(0), rtol=1e-5, atol=1e-5)  # each column's own


def _jsonl_of_csv(csv_path: Path, out: Path) -> None:
    """The rows of a CSV as JSON lines (numbers as numbers), keys in another order, a blank line and a null."""
    lines = csv_path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    objects = []
    for line in lines[1:]:
        cells = dict(zip(header, line.split(","), strict=True))
        row = {"y": float(cells["y"]), "colour": cells["colour"] or None}
        row.update(b=float(cells["b"]), a=float(cells["a"]))
        objects.append(json.dumps(row))
    objects.insert(5, "")  # a blank line: no row, as in the CSV reader
    out.write_text("\n".join(objects) + "\n", encoding="utf-8")


def test_json_lines_is_a_format_of_its_own_module_and_reads_as_the_csv(tmp_path):
    csv_path, = _write_shards(tmp_path / "csv", shards=1, rows=60)
    (tmp_path / "jsonl").mkdir()
    _jsonl_of_csv(csv_path, tmp_path / "jsonl" / "part-0.jsonl")
    from_csv = _stream(tmp_path, train="csv", features=["a", "b", "colour"], shuffle=False)
    from_jsonl = _stream(tmp_path, train="jsonl", features=["a", "b", "colour"], shuffle=False)
    assert from_jsonl.scan.train.format == "jsonl" and from_jsonl.scan.train_rows == 60
    assert from_jsonl.scan.state.to_json() == from_csv.scan.state.to_json()  # the same statistics, vocabulary
    ours, theirs = _all(lambda: from_jsonl.train_dataset(tf)), _all(lambda: from_csv.train_dataset(tf))
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    # without data.features: the first object's keys, in its order (a JSON object keeps it), but the label
    assert _stream(tmp_path, train="jsonl").feature_names[:2] == ["colour=blue", "colour=green"]
    with pytest.raises(DataError, match=r"part-0\.jsonl:3: key 'b' holds a list; hookrun reads one value per column"):
        lines = (tmp_path / "jsonl" / "part-0.jsonl").read_text().splitlines()
        lines[2] = json.dumps({"y": 1.0, "colour": "red", "b": [1, 2], "a": 0.5})
        (tmp_path / "jsonl" / "part-0.jsonl").write_text("\n".join(lines) + "\n")
        _stream(tmp_path, train="jsonl")
