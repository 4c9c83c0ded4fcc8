"""CSV reading and its errors, typed columns and the validation split, and resuming the tf.data order.

The preprocessing itself (missing values, statistics, one-hot) is tested in ``preprocessing_test.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from hookrun.common.errors import DataError, SetupError
from hookrun.runner.data.formats.base import DataFile
from hookrun.runner.data.preprocessing import Preprocessor
from hookrun.runner.data.reader import (
    CATEGORICAL,
    NUMERIC,
    load_raw_data,
    make_dataset,
    read_csv,
    split_hash,
    split_rows,
    steps_per_run,
)
from hookrun.runner.data.streaming import split_hash_tf
from tests.conftest import data_config, write_data_file


def arrays(tmp_path, config):
    """The training arrays as the runner makes them: parse, fit on the training rows, transform."""
    raw = load_raw_data(config, tmp_path)
    return Preprocessor.fit(raw.train, config, raw.split).transform(raw.train)


# --------------------------------------------------------------------------- read_csv errors


def test_missing_file(tmp_path):
    with pytest.raises(SetupError, match=r"nope\.csv: data file not found"):
        read_csv(tmp_path / "nope.csv")


def test_directory(tmp_path):
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(SetupError, match="is a directory"):
        read_csv(tmp_path / "d.csv")


@pytest.mark.parametrize("text", ["", "\n", " , \n"])
def test_empty_file(tmp_path, text):
    with pytest.raises(SetupError, match="the file is empty"):
        read_csv(write_data_file(tmp_path, text))


def test_header_only(tmp_path):
    with pytest.raises(SetupError, match="has a header but no data rows"):
        read_csv(write_data_file(tmp_path, "a,b,y\n\n"))


def test_ragged_row_names_its_line(tmp_path):
    # Line 3 is blank; the short row is on line 4.
    path = write_data_file(tmp_path, "a,b,y\n1,2,3\n\n4,5\n")
    with pytest.raises(SetupError) as info:
        read_csv(path)
    assert str(info.value) == f"{path}:4: row has 2 cells but the header has 3 columns"


def test_duplicate_and_empty_header_names(tmp_path):
    with pytest.raises(SetupError, match=r":1: column 'a' appears twice"):
        read_csv(write_data_file(tmp_path, "a,b,a\n1,2,3\n"))
    with pytest.raises(SetupError, match=r":1: column 2 has no name"):
        read_csv(write_data_file(tmp_path, "a,,y\n1,2,3\n"))


def test_rows_keep_their_line_numbers_and_max_rows(tmp_path):
    table = read_csv(write_data_file(tmp_path, "a,b,y\n1,2,3\n\n4,5,6\n7,8,9\n"), max_rows=2)
    assert table.header == ["a", "b", "y"]
    assert [line for line, _ in table.rows] == [2, 4]


# --------------------------------------------------------------------------- cells to arrays


def test_a_text_column_is_categorical_and_remembers_its_first_text(tmp_path):
    write_data_file(tmp_path, "a,b,y\n1,2,3\n4,x,6\n7,,9\n")
    raw = load_raw_data(data_config(), tmp_path).train
    assert raw.kinds == {"a": NUMERIC, "b": CATEGORICAL, "y": NUMERIC}
    assert list(raw.values["b"]) == ["2", "x", None]
    assert raw.first_text["b"] == (3, "x")
    np.testing.assert_array_equal(raw.missing("b"), [False, False, True])


def test_a_declared_categorical_column_keeps_its_numbers_as_text(tmp_path):
    write_data_file(tmp_path, "zip,y\n10115,1\n80331,2\n")
    raw = load_raw_data(data_config(categorical=["zip"]), tmp_path).train
    assert raw.kinds["zip"] == CATEGORICAL and list(raw.values["zip"]) == ["10115", "80331"]


def test_text_in_a_column_that_is_numeric_in_training_names_the_validation_line(tmp_path):
    write_data_file(tmp_path, "a,b,y\n1,2,3\n4,5,6\n")
    path = write_data_file(tmp_path, "a,b,y\n1,2,3\n4,x,6\n", name="val.csv")
    with pytest.raises(DataError) as info:
        load_raw_data(data_config(validation="val.csv"), tmp_path)
    assert str(info.value).startswith(f"{path}:3: column 'b' (column 2) has 'x', not a number")
    assert info.value.loc == ("data", "validation")


def test_unknown_column_lists_the_columns(tmp_path):
    write_data_file(tmp_path, "a,b,y\n1,2,3\n")
    with pytest.raises(SetupError, match=r"no column 'c'; the columns are: a, b, y"):
        load_raw_data(data_config(features=["a", "c"]), tmp_path)


@pytest.mark.parametrize(
    ("key", "value", "loc"),
    [
        ("categorical", ["bb"], ("data", "categorical", 0)),
        ("missing_by_column", {"bb": "drop"}, ("data", "missing_by_column", "bb")),
    ],
)
def test_unknown_column_in_categorical_or_missing_by_column(tmp_path, key, value, loc):
    write_data_file(tmp_path, "a,b,y\n1,2,3\n")
    message = r"'bb' in `data\.\w+` is neither a feature nor the label.*did you mean 'b'"
    with pytest.raises(DataError, match=message) as info:
        load_raw_data(data_config(**{key: value}), tmp_path)
    assert info.value.loc == loc


def test_features_default_to_every_column_but_the_label(tmp_path):
    write_data_file(tmp_path, "a,y,b\n1,2,3\n4,5,6\n")
    data = arrays(tmp_path, data_config(standardize=False))
    assert data.feature_names == ["a", "b"]
    np.testing.assert_array_equal(data.features, [[1, 3], [4, 6]])
    np.testing.assert_array_equal(data.labels, [[2], [5]])
    assert data.features.dtype == np.float32 and data.labels.shape == (2, 1)


def test_split_rows_is_a_seeded_hash_of_the_row():
    train, val = split_rows(1000, 0.2, seed=3)
    assert 150 < len(val) < 250 and len(train) + len(val) == 1000
    assert sorted([*train, *val]) == list(range(1000))
    assert list(val) == sorted(val) and list(val) != list(range(len(val)))
    again_train, again_val = split_rows(1000, 0.2, seed=3)
    np.testing.assert_array_equal(val, again_val)
    assert list(split_rows(1000, 0.2, seed=4)[1]) != list(val)
    # By row, not by count: the first rows keep their side when rows are appended.
    _, more_val = split_rows(2000, 0.2, seed=3)
    np.testing.assert_array_equal(more_val[more_val < 1000], val)


def test_split_hash_in_numpy_equals_tf():
    lines = np.array([0, 1, 2, 3, 1_000_003, 2**31 + 5, 2**32 - 1], dtype=np.int64)
    salt = DataFile(Path("x.csv"), "csv").salt(7)
    expected = split_hash(lines, salt)
    assert ((expected >= 0) & (expected < 2**32)).all()
    np.testing.assert_array_equal(split_hash_tf(tf, tf.constant(lines), tf.constant(salt, tf.int64)).numpy(), expected)


def test_a_split_that_leaves_a_part_empty_is_refused(tmp_path):
    write_data_file(tmp_path, "a,y\n1,1\n2,2\n3,3\n")
    assert len(split_rows(3, 0.001, 0)[1]) == 0
    with pytest.raises(DataError, match="leaves no validation rows"):
        load_raw_data(data_config(validation_split=0.001), tmp_path)


def test_validation_split_in_load_raw_data(tmp_path):
    write_data_file(tmp_path, "a,y\n" + "".join(f"{i},{i}\n" for i in range(10)))
    raw = load_raw_data(data_config(validation_split=0.3), tmp_path)
    train, val = split_rows(10, 0.3, 0)
    assert raw.train.num_rows == len(train) and raw.validation.num_rows == len(val) > 0
    np.testing.assert_array_equal(raw.validation.lines, val + 2)
    assert sorted([*raw.train.lines, *raw.validation.lines]) == list(range(2, 12))
    assert raw.split == {"validation_split": 0.3, "seed": 0, "train_rows": len(train), "validation_rows": len(val)}


CSV_WITH_GAPS = "a,b,y\n1,2,3\n4,,6\n7,8,NA\n10,11,12\n"


def test_missing_error_names_the_cell(tmp_path):
    path = write_data_file(tmp_path, CSV_WITH_GAPS)
    with pytest.raises(SetupError) as info:
        arrays(tmp_path, data_config(missing="error"))
    assert str(info.value).startswith(f"{path}:3: column 'b' (column 2) is empty")
    assert "missing: drop" in str(info.value)


def test_missing_drop_drops_the_rows(tmp_path):
    write_data_file(tmp_path, CSV_WITH_GAPS)
    data = arrays(tmp_path, data_config(missing="drop"))
    assert data.dropped_rows == 2
    assert data.num_rows == 2
    np.testing.assert_array_equal(data.labels[:, 0], [3, 12])


def test_missing_drop_of_every_row(tmp_path):
    write_data_file(tmp_path, "a,y\n,1\n2,\n")
    with pytest.raises(SetupError, match="every row has a missing value"):
        arrays(tmp_path, data_config(missing="drop"))


@pytest.mark.parametrize(("rows", "batch", "epochs"), [(64, 8, 10), (10, 4, 3), (5, 8, 1)])
def test_steps_per_run(rows, batch, epochs):
    assert steps_per_run(rows, batch, epochs) == math.ceil(rows * epochs / batch)
    assert steps_per_run(rows, batch, None) is None


# --------------------------------------------------------------------------- tf.data order


def batches(data, config, skip_steps=0):
    """Every batch of the pipeline, built as the runner builds it (a fresh graph with the graph-level seed)."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(config.seed)
        ds = make_dataset(tf, data, config, skip_steps=skip_steps)
        features, labels = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
        out = []
        with tf.compat.v1.Session(graph=graph) as session:
            while True:
                try:
                    out.append(session.run([features, labels]))
                except tf.errors.OutOfRangeError:
                    return out


@pytest.mark.parametrize("skip", [1, 3, 5])
def test_skip_continues_the_same_order(tmp_path, skip):
    rows, batch_size, epochs = 10, 4, 3
    lines = "".join(f"{i},{i * 10}\n" for i in range(rows))
    config = data_config(batch_size=batch_size, epochs=epochs, seed=7, standardize=False)
    write_data_file(tmp_path, "a,y\n" + lines)
    data = arrays(tmp_path, config)

    full = batches(data, config)
    assert len(full) == steps_per_run(rows, batch_size, epochs)
    # Each epoch is a reshuffled permutation of all rows (batches cross epoch boundaries).
    order = np.concatenate([f[:, 0] for f, _ in full])
    assert sorted(order[:rows]) == list(range(rows)) and list(order[:rows]) != sorted(order[:rows])
    assert list(order[:rows]) != list(order[rows : 2 * rows])

    resumed = batches(data, config, skip_steps=skip)
    assert len(resumed) == len(full) - skip
    for (f_full, l_full), (f_res, l_res) in zip(full[skip:], resumed, strict=True):
        np.testing.assert_array_equal(f_full, f_res)
        np.testing.assert_array_equal(l_full, l_res)
