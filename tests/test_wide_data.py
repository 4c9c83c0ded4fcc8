"""Wide data (issue 24): hundreds of columns transform as one block, so set-up does not grow with the width.

Speed itself is measured by ``benchmarks/wide_setup.py``; these tests pin what makes it fast (the map
function's size does not grow with the columns) and that the block gives what the numpy transform gives.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from hookrun.runner.data.preprocessing import Preprocessor
from hookrun.runner.data.reader import load_raw_data
from hookrun.runner.data.streaming import StreamInput, make_iterator, scan_data
from tests.conftest import data_config


def _wide_csv(path: Path, columns: int, rows: int = 30, padded: bool = False) -> None:
    rng = np.random.default_rng(1)
    names = [f"p{i:03d}" for i in range(columns)]
    lines = [",".join(["y", *names[: columns // 2], "colour", *names[columns // 2 :]])]
    for row in range(rows):
        values = [f"{v:.3f}" for v in rng.normal(size=columns)]
        if padded:
            values[1] = f" {values[1]} "  # padding: the column is not plain (decoded as text)
        if row % 7 == 3:
            values[0] = "NA"  # filled with the median
        if row % 11 == 5:
            values[2] = ""  # dropped
        cells = [str(row), *values[: columns // 2], ["red", "blue", ""][row % 3], *values[columns // 2 :]]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _config(train: str):
    policies = {"p000": "median", "p002": "drop", "colour": {"constant": "grey"}}
    return data_config(train=train, label="y", epochs=1, batch_size=8, seed=0, shuffle=False,
                       missing_by_column=policies)


def _stream(tmp_path: Path, name: str) -> StreamInput:
    config = _config(name)
    scan = scan_data(config, tmp_path)
    return StreamInput(scan, scan.state, config)


def _rows(dataset) -> tuple[np.ndarray, np.ndarray]:
    graph = tf.Graph()
    with graph.as_default():
        features, labels = make_iterator(tf, dataset(tf)).get_next()
        out = []
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.tables_initializer())
            while True:
                try:
                    out.append(session.run([features, labels]))
                except tf.errors.OutOfRangeError:
                    break
    return np.concatenate([f for f, _ in out]), np.concatenate([lab for _, lab in out])[:, 0]


def _function_nodes(stream: StreamInput) -> int:
    """Nodes in every function of the training pipeline's graph (the map functions are most of them)."""
    graph = tf.Graph()
    with graph.as_default():
        make_iterator(tf, stream.train_dataset(tf))
    return sum(len(function.node_def) for function in graph.as_graph_def().library.function)


def test_the_map_function_does_not_grow_with_the_columns(tmp_path):
    """Per-column ops made a 784-column map function take tens of seconds to build; one block takes a few ops."""
    for columns in (10, 200):
        _wide_csv(tmp_path / f"w{columns}.csv", columns)
    narrow = _function_nodes(_stream(tmp_path, "w10.csv"))
    wide = _function_nodes(_stream(tmp_path, "w200.csv"))
    # decode_csv's default per column is the one op left that grows with the width (per-column ops were 6-20)
    assert (wide - narrow) / 190 < 1.5, (narrow, wide)


def test_the_block_transform_equals_the_numpy_transform(tmp_path):
    """Numeric runs around a categorical column, a median fill, a drop and padded (text-decoded) cells."""
    for padded in (False, True):
        name = f"wide_{padded}.csv"
        _wide_csv(tmp_path / name, 40, padded=padded)
        stream = _stream(tmp_path, name)
        config = _config(name)
        raw = load_raw_data(config, tmp_path)
        state = Preprocessor.fit(raw.train, config, raw.split)
        assert stream.scan.state.to_json() == state.to_json()
        assert stream.scan.plain != set() and ("p001" in stream.scan.plain) is not padded
        expected = state.transform(raw.train)
        features, labels = _rows(stream.train_dataset)
        assert features.shape == expected.features.shape == (30 - 3, 40 + 3)  # 3 rows dropped; colour one-hot
        np.testing.assert_array_equal(labels, expected.labels[:, 0])
        np.testing.assert_allclose(features, expected.features, rtol=1e-6, atol=1e-6)
