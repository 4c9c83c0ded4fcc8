"""Towers (``device: [cpu:0, cpu:1]``, issue 28) on an input_fn with a ``RaggedTensor`` feature (issue 24 allows them).

``split_batch`` splits a ragged batch of B rows by rows (``ragged[i*B/K:(i+1)*B/K]``), as ``SparseTensor`` s are
split by ``tf.sparse.split``; before, ``tf.convert_to_tensor`` of a ragged feature crashed the run (``internal
error: TypeError: Failed to convert elements of tf.RaggedTensor``). Here a model_fn reads a dense ``x``, a ragged
``ids``, a string ``city`` and a nested ``{"pair": (a, b)}`` from its input_fn: K = 2 towers give the weights of
one device, with batches of static rows (``drop_remainder=True``), of rows known only when they run, and under
``session.steps_per_run: 2`` (a ragged batch cannot stack: the loop pulls one a step; before, the loop's first
builder call refused the ragged component).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from hookrun.runner.config import load_config

PROGRAM = """
import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec

ROWS = 32
CITIES = np.array([b"paris", b"oslo", b"lima", b"rome"])


def input_fn(params):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(ROWS, 2)).astype(np.float32)
    ids = [[(i + j) % 5 for j in range(i % 3)] for i in range(ROWS)]  # zero to two ids a row
    city = CITIES[np.arange(ROWS) % 4]
    a, b = x[:, :1] * 2.0, x[:, 1:] - 1.0
    y = (x @ np.array([[1.5], [-2.0]], np.float32)
         + np.array([[0.3 * sum(t)] for t in ids], np.float32) + (np.arange(ROWS) % 4)[:, None] * 0.2)
    features = {"x": x, "ids": tf.ragged.constant(ids, dtype=tf.int64), "city": city, "nested": {"pair": (a, b)}}
    dataset = tf.data.Dataset.from_tensor_slices((features, y.astype(np.float32)))
    return dataset.batch(8, drop_remainder=params["drop_remainder"]).repeat()


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
    b = v1.get_variable("b", [1], initializer=v1.zeros_initializer())
    emb = v1.get_variable("emb", [5, 1], initializer=v1.constant_initializer(0.1))
    cities = v1.get_variable("cities", [4, 1], initializer=v1.zeros_initializer())
    pair = v1.get_variable("pair", [2, 1], initializer=v1.zeros_initializer())
    assert isinstance(features["ids"], tf.RaggedTensor)
    ids = tf.reduce_sum(tf.ragged.map_flat_values(tf.nn.embedding_lookup, emb, features["ids"]), axis=1)
    city = tf.nn.embedding_lookup(cities, tf.strings.to_hash_bucket_strong(features["city"], 4, [1, 2]))
    a, b_ = features["nested"]["pair"]
    out = tf.matmul(features["x"], w) + b + ids + city + tf.matmul(tf.concat([a, b_], axis=1), pair)
    loss = tf.reduce_mean(tf.square(out - labels))
    train_op = v1.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op, predictions={"y": out})
"""


def _weights(
    tmp_path: Path, run_train: Any, module: str, name: str, device: Any, drop_remainder: bool, steps_per_run: int = 1
) -> dict:
    import tensorflow as tf

    config = {
        "name": name,
        "graph": {"builder": f"{module}:model_fn", "params": {"drop_remainder": drop_remainder}},
        "data": {"input_fn": f"{module}:input_fn", "seed": 0},
        "device": device,
        "session": {"steps_per_run": steps_per_run},
        "hooks": [{"type": "stop_at_step", "last_step": 6}, {"type": "checkpoint_saver", "save_steps": 100}],
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = run_train(load_config(path), run_dir=tmp_path / name)
    assert result.final_global_step == 6
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path / name)))
    return {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map() if "/" not in key}


@pytest.mark.parametrize(
    "drop_remainder, steps_per_run", [(True, 1), (False, 1), (True, 2)],
    ids=["static rows", "rows known when run", "steps_per_run 2"],
)
def test_towers_split_a_ragged_feature_by_rows_and_equal_one_device(
    tmp_path, run_train, write_module, drop_remainder, steps_per_run
):
    module = write_module("towers_ragged", PROGRAM)
    one = _weights(tmp_path, run_train, module, "one", "cpu", drop_remainder)
    towers = _weights(tmp_path, run_train, module, "towers", ["cpu:0", "cpu:1"], drop_remainder, steps_per_run)
    if steps_per_run > 1:  # a ragged batch is pulled once a step in the loop (it cannot stack), on one device too
        looped = _weights(tmp_path, run_train, module, "looped", "cpu", drop_remainder, steps_per_run)
        for name in ("w", "b", "emb", "cities", "pair"):
            np.testing.assert_allclose(looped[name], one[name], atol=1e-6, err_msg=name)
    assert sorted(towers) == sorted(one) == ["b", "cities", "emb", "global_step", "pair", "w"]
    for name in ("w", "b", "emb", "cities", "pair"):
        np.testing.assert_allclose(towers[name], one[name], atol=1e-6, err_msg=name)
        assert not np.allclose(towers[name], 0.1 if name == "emb" else 0.0), name  # every feature's weights trained


UNEVEN = """
import tensorflow as tf

from hookrun.runner import EstimatorSpec


def input_fn():  # batches of 7 rows, known only when they run: 2 towers cannot split them
    ids = tf.ragged.constant([[i % 5] * (i % 3) for i in range(35)], dtype=tf.int64)
    return tf.data.Dataset.from_tensor_slices(({"ids": ids}, tf.ones([35, 1]))).batch(7).repeat()


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    emb = v1.get_variable("emb", [5, 1])
    out = tf.reduce_sum(tf.ragged.map_flat_values(tf.nn.embedding_lookup, emb, features["ids"]), axis=1)
    loss = tf.reduce_mean(tf.square(out - labels))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op)
"""


def test_a_batch_that_does_not_split_when_it_runs_stops_with_tensorflows_own_line(tmp_path, run_train, write_module):
    """Each tower's split fails at once; the error is the first one's line, not "2 root error(s) found."."""
    from hookrun.common.errors import TrainingError

    module = write_module("towers_uneven", UNEVEN)
    config = {
        "name": "uneven",
        "graph": {"builder": f"{module}:model_fn"},
        "data": {"input_fn": f"{module}:input_fn"},
        "device": ["cpu:0", "cpu:1"],
        "hooks": [{"type": "stop_at_step", "last_step": 2}],
    }
    path = tmp_path / "uneven.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    with pytest.raises(TrainingError) as raised:
        run_train(load_config(path), run_dir=tmp_path / "uneven")
    assert str(raised.value) == (
        "TensorFlow error at step 1: InvalidArgumentError: Number of ways to split should evenly divide the split "
        "dimension, but got split_dim 0 (size = 7) and num_split 2"
    )
