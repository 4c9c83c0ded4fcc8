"""CSV reading and its errors, the missing-value policy, the Standardizer, and resuming the tf.data order."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from hookrun.config_schemas.data import DataConfig
from hookrun.runner.data import (
    Standardizer,
    load_training_data,
    make_dataset,
    read_csv,
    steps_per_run,
    table_to_arrays,
)
from hookrun.runner.errors import SetupError


def write(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def data_config(**kwargs):
    return DataConfig(**{"train": "data.csv", "label": "y", **kwargs})


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
        read_csv(write(tmp_path, text))


def test_header_only(tmp_path):
    with pytest.raises(SetupError, match="has a header but no data rows"):
        read_csv(write(tmp_path, "a,b,y\n\n"))


def test_ragged_row_names_its_line(tmp_path):
    # Line 3 is blank; the short row is on line 4.
    path = write(tmp_path, "a,b,y\n1,2,3\n\n4,5\n")
    with pytest.raises(SetupError) as info:
        read_csv(path)
    assert str(info.value) == f"{path}:4: row has 2 cells but the header has 3 columns"


def test_duplicate_and_empty_header_names(tmp_path):
    with pytest.raises(SetupError, match=r":1: column 'a' appears twice"):
        read_csv(write(tmp_path, "a,b,a\n1,2,3\n"))
    with pytest.raises(SetupError, match=r":1: column 2 has no name"):
        read_csv(write(tmp_path, "a,,y\n1,2,3\n"))


def test_rows_keep_their_line_numbers_and_max_rows(tmp_path):
    table = read_csv(write(tmp_path, "a,b,y\n1,2,3\n\n4,5,6\n7,8,9\n"), max_rows=2)
    assert table.header == ["a", "b", "y"]
    assert [line for line, _ in table.rows] == [2, 4]


# --------------------------------------------------------------------------- cells to arrays


def test_non_numeric_cell_names_line_and_column(tmp_path):
    path = write(tmp_path, "a,b,y\n1,2,3\n4,x,6\n")
    with pytest.raises(SetupError) as info:
        table_to_arrays(read_csv(path), data_config())
    message = str(info.value)
    assert message.startswith(f"{path}:3: column 'b' (column 2) has 'x', not a number")


def test_unknown_column_lists_the_columns(tmp_path):
    path = write(tmp_path, "a,b,y\n1,2,3\n")
    with pytest.raises(SetupError, match=r"no column 'c'; the columns are: a, b, y"):
        table_to_arrays(read_csv(path), data_config(features=["a", "c"]))


def test_features_default_to_every_column_but_the_label(tmp_path):
    data = table_to_arrays(read_csv(write(tmp_path, "a,y,b\n1,2,3\n4,5,6\n")), data_config())
    assert data.feature_names == ["a", "b"]
    np.testing.assert_array_equal(data.features, [[1, 3], [4, 6]])
    np.testing.assert_array_equal(data.labels, [[2], [5]])
    assert data.features.dtype == np.float32 and data.labels.shape == (2, 1)


CSV_WITH_GAPS = "a,b,y\n1,2,3\n4,,6\n7,8,NA\n10,11,12\n"


def test_missing_error_names_the_cell(tmp_path):
    path = write(tmp_path, CSV_WITH_GAPS)
    with pytest.raises(SetupError) as info:
        table_to_arrays(read_csv(path), data_config(missing="error"))
    assert str(info.value).startswith(f"{path}:3: column 'b' (column 2) is empty")
    assert "missing: drop" in str(info.value)


def test_missing_drop_drops_the_rows(tmp_path):
    data = table_to_arrays(read_csv(write(tmp_path, CSV_WITH_GAPS)), data_config(missing="drop"))
    assert data.dropped_rows == 2
    assert data.num_rows == 2
    np.testing.assert_array_equal(data.labels[:, 0], [3, 12])


def test_missing_drop_of_every_row(tmp_path):
    with pytest.raises(SetupError, match="every row has a missing value"):
        table_to_arrays(read_csv(write(tmp_path, "a,y\n,1\n2,\n")), data_config(missing="drop"))


# --------------------------------------------------------------------------- Standardizer


def test_standardizer_round_trip(tmp_path):
    write(tmp_path, "a,b,c,y\n1,10,5,0\n2,30,5,1\n3,50,5,0\n4,70,5,1\n")
    data = load_training_data(data_config(), tmp_path)
    fitted = Standardizer.fit(data)
    assert fitted.feature_names == ["a", "b", "c"]
    assert fitted.mean == pytest.approx([2.5, 40.0, 5.0])
    assert fitted.std[2] == 1.0  # constant column: left unscaled instead of divided by zero

    scaled = fitted.apply(data.features)
    assert scaled.dtype == np.float32
    np.testing.assert_allclose(scaled[:, :2].mean(axis=0), 0, atol=1e-6)
    np.testing.assert_allclose(scaled[:, :2].std(axis=0), 1, atol=1e-6)
    np.testing.assert_array_equal(scaled[:, 2], 0)

    fitted.save(tmp_path / "preprocessing.json")
    loaded = Standardizer.load(tmp_path / "preprocessing.json")
    assert loaded == fitted
    np.testing.assert_array_equal(loaded.apply(data.features), scaled)


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
    write(tmp_path, "a,y\n" + lines)
    data = load_training_data(config, tmp_path)

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
