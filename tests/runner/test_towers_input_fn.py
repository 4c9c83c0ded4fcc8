"""Towers (``device: [cpu:0, cpu:1]``, issue 28) on a user's ``data.input_fn`` (issue 24), then export and warm start.

Issue 28 asks towers to work "with user input_fns, warm start, ... export (a single-device serving graph)";
docs/devices.md says a towers checkpoint "restores, warm-starts, evaluates and exports with ``device: cpu``".
Here a model_fn reads a dense ``features["x"]`` and a ``SparseTensor`` ``features["tags"]`` (split between the
towers by ``tf.sparse.split``) from its own input_fn; K = 2 towers give the weights of one device, the towers
run exports a SavedModel that serves the checkpoint's model, and a one-device run warm-starts from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from hookrun.runner.config import load_config

PROGRAM = """
import numpy as np
import tensorflow as tf

from hookrun.runner import EstimatorSpec, ModeKeys
from hookrun.runner.trained.serving import ServingInputReceiver

ROWS = 32


def rows(n):
    rng = np.random.RandomState(0)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    ids = [[(i + j) % 5 for j in range(1 + i % 2)] for i in range(n)]  # one or two tags a row
    y = (x @ np.array([[1.5], [-2.0]], np.float32) + np.array([[0.3 * sum(t)] for t in ids], np.float32))
    return x, ids, y.astype(np.float32)


def input_fn(params):
    x, ids, y = rows(ROWS)
    indices = [[i, j] for i, row in enumerate(ids) for j in range(len(row))]
    values = np.array([t for row in ids for t in row], np.int64)
    tags = tf.sparse.SparseTensor(indices, values, [ROWS, 2])
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x, "tags": tags}, y))
    return dataset.batch(8, drop_remainder=True).repeat()


def model_fn(features, labels, mode, params):
    v1 = tf.compat.v1
    w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
    b = v1.get_variable("b", [1], initializer=v1.zeros_initializer())
    emb = v1.get_variable("emb", [5, 1], initializer=v1.constant_initializer(0.1))
    out = tf.matmul(features["x"], w) + b + tf.nn.embedding_lookup_sparse(emb, features["tags"], None, combiner="sum")
    if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode, predictions={"y": out})
    loss = tf.reduce_mean(tf.square(out - labels))
    train_op = v1.train.GradientDescentOptimizer(params["lr"]).minimize(loss, global_step=v1.train.get_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=train_op, predictions={"y": out})


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    ids = tf.compat.v1.placeholder(tf.int64, [None, 2], name="ids")  # -1 pads a row
    where = tf.where(ids >= 0)
    tags = tf.SparseTensor(where, tf.gather_nd(ids, where), tf.shape(ids, out_type=tf.int64))
    return ServingInputReceiver({"x": x, "tags": tags}, {"x": x, "ids": ids})
"""


def _train(tmp_path: Path, run_train: Any, module: str, name: str, device: Any, **graph: Any) -> Any:
    config = {
        "name": name,
        "graph": {"builder": f"{module}:model_fn", "serving_input_fn": f"{module}:serving_input_fn",
                  "params": {"lr": 0.1}, **graph},
        "data": {"input_fn": f"{module}:input_fn", "seed": 0},
        "device": device,
        "hooks": [{"type": "stop_at_step", "last_step": 6}, {"type": "checkpoint_saver", "save_steps": 100}],
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    result = run_train(load_config(path), run_dir=tmp_path / name)
    assert result.final_global_step == 6
    return tmp_path / name


def _weights(run_dir: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(run_dir)))
    # the model's variables; the input_fn's saved position (``hookrun/input_state_*``, a variant) is left out
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map() if "/" not in name}


def test_towers_on_an_input_fn_with_a_sparse_feature_equal_one_device_export_and_warm_start(
    tmp_path, run_train, write_module
):
    import tensorflow as tf

    from hookrun.runner import export

    module = write_module("towers_input_fn", PROGRAM)
    one = _weights(_train(tmp_path, run_train, module, "one", "cpu"))
    towers_run = _train(tmp_path, run_train, module, "towers", ["cpu:0", "cpu:1"])
    towers = _weights(towers_run)
    # a single-device checkpoint (the same names), the same weights on the global batch of 8 (4 rows a tower)
    assert sorted(towers) == sorted(one) == ["b", "emb", "global_step", "w"]
    assert int(towers["global_step"]) == 6
    for name in ("w", "b", "emb"):
        np.testing.assert_allclose(towers[name], one[name], atol=1e-6, err_msg=name)
    assert not np.allclose(towers["emb"], 0.1)  # the sparse feature's weights trained

    # export of the towers run: a single-device serving graph computing the checkpoint's model
    exported = export(towers_run, tmp_path / "export")
    served = tf.saved_model.load(str(exported.output)).signatures["serving_default"]
    x = np.array([[1.0, 2.0], [-0.5, 0.25]], np.float32)
    ids = np.array([[0, 3], [4, -1]], np.int64)
    got = served(x=tf.constant(x), ids=tf.constant(ids))["y"].numpy()
    tags = np.array([[towers["emb"][0, 0] + towers["emb"][3, 0]], [towers["emb"][4, 0]]], np.float32)
    np.testing.assert_allclose(got, x @ towers["w"] + towers["b"] + tags, rtol=1e-5)

    # a one-device run warm-started from the towers run starts from its weights (lr 0: they stay)
    warm = _weights(_train(tmp_path, run_train, module, "warm", "cpu",
                           params={"lr": 0.0}, warm_start={"from": str(towers_run)}))
    for name in ("w", "b", "emb"):
        np.testing.assert_allclose(warm[name], towers[name], err_msg=name)
